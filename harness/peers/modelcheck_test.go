package peers

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os/exec"
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
			meas[c] = append(meas[c], float64(r.Latency["put"].P50Ns))
			loads = append(loads, r.LoadAvg)
		}
	}
	out, _ := exec.Command("uptime").Output()
	fmt.Printf("replication model vs bench, -threads 1, median of %d mirrored rounds; load average %s\n", *replicationModelCheck, strings.TrimSpace(string(out)))
	fmt.Printf("%-8s %-6s %12s %12s %7s %s\n", "engine", "delay", "model", "bench p50", "ratio", "within 25%")
	for _, c := range configs {
		p, m := harness.Median(pred[c]), harness.Median(meas[c])
		ratio := p / m
		fmt.Printf("%-8s %-6s %10.2fms %10.2fms %7.2f %v\n", c.engine, c.delay, p/1e6, m/1e6, ratio, ratio >= 0.75 && ratio <= 1.25)
	}
	fmt.Printf("runs' load averages: %v\n", loads)
}

// TestReplicationModelRTT: with the peers linked, the model measures the
// round trip through the delaying proxy (a lower bound: 2 × 5 ms; a timer
// never fires early) and predicts from it.
func TestReplicationModelRTT(t *testing.T) {
	raw, err := harnesstest.Exec(context.Background(), "model -engine etcd -net-delay 5ms -t-fsync 1ms -format json", harness.Env{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	var m harness.ModelResult
	if err := json.Unmarshal(raw, &m); err != nil || len(m.Replication) != 1 {
		t.Fatalf("%v %s", err, raw)
	}
	p := m.Replication[0]
	if p.RTTSource != "proxy_p50" || p.RTTNs < 10e6 || p.CommitNs != p.RTTNs+1e6 {
		t.Errorf("prediction %+v, want the proxy's round trip (at least 10 ms) plus T_fsync", p)
	}
}
