package peers

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"kvlab/harness"
	"kvlab/harness/harnesstest"
)

var replicationModelCheck = flag.Int("replication-model-check", 0, "rounds of the replication model against bench for pg-sync and etcd at 0, 1 and 10 ms (make bench); 0 skips it")

// TestReplicationModelCheck (make bench) compares `model -engine E
// -net-delay D` with `bench -engine E -net-delay D -threads 1`, for
// pg-sync and etcd at 0, 1 and 10 ms each way, in rounds that alternate
// the order of the configurations (mirrored: a drift of the machine lands
// on all alike). For each it prints the median of the rounds' predicted
// commit, measured p50 and their ratio. The target is within 25 % on a
// quiet machine; this is a report, never a failure: a busy machine moves
// flushes by several times (the load is printed with each figure).
func TestReplicationModelCheck(t *testing.T) {
	if *replicationModelCheck == 0 {
		t.Skip("make bench runs it: -args -replication-model-check=N")
	}
	requirePostgres(t)
	requireEtcd(t)
	type config struct{ engine, delay string }
	var configs []config
	for _, e := range []string{"pg-sync", "etcd"} {
		for _, d := range []string{"0ms", "1ms", "10ms"} {
			configs = append(configs, config{e, d})
		}
	}
	pred := map[config][]float64{}
	fixed := map[config][]float64{}
	meas := map[config][]float64{}
	var loads []float64
	for round := range *replicationModelCheck {
		order := slices.Clone(configs)
		if round%2 == 1 {
			slices.Reverse(order)
		}
		for _, c := range order {
			dir := openDir(t)
			raw, err := harnesstest.Exec(context.Background(), fmt.Sprintf("model -engine %s -net-delay %s -format json", c.engine, c.delay), harness.Env{Dir: dir})
			if err != nil {
				t.Fatalf("model %v: %v", c, err)
			}
			var m harness.ModelResult
			if err := json.Unmarshal(raw, &m); err != nil || len(m.Replication) != 1 {
				t.Fatalf("model %v: %v %s", c, err, raw)
			}
			raw, err = harnesstest.Exec(context.Background(), fmt.Sprintf("bench -engine %s -sync always -threads 1 -ops 300 -warmup 30 -net-delay %s -format json", c.engine, c.delay), harness.Env{Dir: dir})
			if err != nil {
				t.Fatalf("bench %v: %v", c, err)
			}
			var r harness.BenchResult
			if err := json.Unmarshal(raw, &r); err != nil {
				t.Fatalf("bench %v: %v", c, err)
			}
			pred[c] = append(pred[c], m.Replication[0].CommitNs)
			fixed[c] = append(fixed[c], m.Replication[0].TFixedNs)
			meas[c] = append(meas[c], float64(r.Latency["put"].P50Ns))
			loads = append(loads, r.LoadAvg)
		}
	}
	out, _ := exec.Command("uptime").Output()
	fmt.Printf("replication model vs bench, -threads 1, median of %d mirrored rounds; load average %s\n", *replicationModelCheck, strings.TrimSpace(string(out)))
	fmt.Printf("%-8s %-6s %12s %12s %12s %7s %s\n", "engine", "delay", "T_fixed", "model", "bench p50", "ratio", "within 25%")
	for _, c := range configs {
		p, m := harness.Median(pred[c]), harness.Median(meas[c])
		ratio := p / m
		fmt.Printf("%-8s %-6s %10.2fms %10.2fms %10.2fms %7.2f %v\n", c.engine, c.delay, harness.Median(fixed[c])/1e6, p/1e6, m/1e6, ratio, ratio >= 0.75 && ratio <= 1.25)
	}
	fmt.Printf("runs' load averages: %v\n", loads)
}

// TestReplicationModelRTT: with the peers linked, the model measures the
// round trip through the delaying proxy (a lower bound: 2 × 5 ms; a timer
// never fires early) and predicts from it (T_fixed given, so no servers
// start).
func TestReplicationModelRTT(t *testing.T) {
	raw, err := harnesstest.Exec(context.Background(), "model -engine etcd -net-delay 5ms -t-fsync 1ms -t-fixed 300us -format json", harness.Env{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	var m harness.ModelResult
	if err := json.Unmarshal(raw, &m); err != nil || len(m.Replication) != 1 {
		t.Fatalf("%v %s", err, raw)
	}
	p := m.Replication[0]
	if p.RTTSource != "proxy_p50" || p.RTTNs < 10e6 || p.CommitNs != 300e3+p.RTTNs+1e6 {
		t.Errorf("prediction %+v, want T_fixed plus the proxy's round trip (at least 10 ms) plus T_fsync", p)
	}
}

// TestReplicationModelFixedProbe: without -t-fixed the model starts each
// engine with its data on a memory filesystem, times its commits, adds
// their median to the formula as T_fixed, and leaves no server or
// directory behind. The bounds are generous (a busy machine); the term is
// more than nothing, because every commit crosses loopback and the
// server's own steps.
func TestReplicationModelFixedProbe(t *testing.T) {
	requirePostgres(t)
	requireEtcd(t)
	if _, err := os.Stat("/dev/shm"); err != nil {
		t.Skip("no /dev/shm: the fixed term is measured on Linux's memory filesystem")
	}
	// This process's probe directories only: another test binary may be
	// probing at the same time.
	mine := fmt.Sprintf("/dev/shm/kvlab-fixed-%d-*", os.Getpid())
	before, _ := filepath.Glob(mine)
	raw, err := harnesstest.Exec(context.Background(), "model -engine pg-sync,etcd -t-fsync 1ms -format json", harness.Env{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	var m harness.ModelResult
	if err := json.Unmarshal(raw, &m); err != nil || len(m.Replication) != 2 {
		t.Fatalf("%v %s", err, raw)
	}
	for _, p := range m.Replication {
		flushes := 1e6 // etcd: max(T_fsync, RTT + T_fsync) with no delay
		if p.Engine == "pg-sync" {
			flushes = 2e6 // the primary's flush, then the standby's
		}
		if p.TFixedSource != "memory_commit_p50" || p.TFixedNs <= 0 || p.TFixedNs > 1e9 || p.TFixedNote != "" {
			t.Errorf("%s: t_fixed %v (%s, %q), want a measured median between 0 and 1 s", p.Engine, p.TFixedNs, p.TFixedSource, p.TFixedNote)
		}
		if p.CommitNs != p.TFixedNs+flushes || !strings.HasPrefix(p.Formula, "T_fixed + ") {
			t.Errorf("%s: commit %v = %q, want T_fixed %v + %v", p.Engine, p.CommitNs, p.Formula, p.TFixedNs, flushes)
		}
	}
	after, _ := filepath.Glob(mine)
	for _, d := range after {
		if !slices.Contains(before, d) {
			t.Errorf("%s outlived the model's probe", d)
		}
	}
}
