package harness

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestReplicationModelLine predicts from a given T_fsync and (with no
// proxy in this package) a round trip of twice the delay: etcd's commit
// overlaps the leader's flush with the trip to a follower and its flush
// (RTT + T_fsync), pg-sync's primary flushes before it sends (2 T_fsync +
// RTT), and T clients commit T / commit per second.
func TestReplicationModelLine(t *testing.T) {
	mr, raw := runModel(t, "model -net-delay 1ms -t-fsync 2ms -threads 1,4 -format json")
	if len(mr.Replication) != 2 {
		t.Fatalf("%d predictions, want pg-sync's and etcd's: %s", len(mr.Replication), raw)
	}
	want := map[string]float64{"pg-sync": 2*2e6 + 2e6, "etcd": 2e6 + 2e6}
	for _, p := range mr.Replication {
		if p.CommitNs != want[p.Engine] || p.RTTSource != "twice_delay" || p.RTTNs != 2e6 || p.TFsyncCase != "given" {
			t.Errorf("%s: commit %v (rtt %v %s, t_fsync %s), want %v", p.Engine, p.CommitNs, p.RTTNs, p.RTTSource, p.TFsyncCase, want[p.Engine])
		}
		if len(p.Threads) != 2 || p.Threads[1].Threads != 4 || p.Threads[1].OpsPerSec != 4e9/want[p.Engine] {
			t.Errorf("%s: threads %+v, want 1 and 4 at T / commit", p.Engine, p.Threads)
		}
		if p.Waits != 1 || p.Sync != "always" || p.WaitsFor != "follower_flush" {
			t.Errorf("%s: waits %d %s sync %s, want 1 follower's flush under always", p.Engine, p.Waits, p.WaitsFor, p.Sync)
		}
	}
	var b strings.Builder
	if err := Write(&b, "table", mr); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"model etcd -sync always -replicas 2", "max(T_leader, RTT + T_k)", "the primary flushes before it sends", "4 client(s)"} {
		if !strings.Contains(b.String(), w) {
			t.Errorf("table %q, want it to hold %q", b.String(), w)
		}
	}
}

// runModel runs a model line and returns its result, decoded, and its
// JSON.
func runModel(t *testing.T, line string) (*ModelResult, json.RawMessage) {
	t.Helper()
	raw, err := Exec(context.Background(), line, Env{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	m, err := DecodeResult(raw)
	if err != nil {
		t.Fatal(err)
	}
	mr, ok := m.(*ModelResult)
	if !ok {
		t.Fatalf("%s: a %T, want a model result", line, m)
	}
	return mr, raw
}

func TestCommitModel(t *testing.T) {
	tf, rtt := 2e6, 5e6
	for _, tt := range []struct {
		engine, sync string
		want         float64
	}{
		{"etcd", "always", rtt + tf},
		{"pg-sync", "always", 2*tf + rtt},
		{"pg-sync", "remote_apply", 2*tf + rtt},
		{"pg-sync", "remote_write", tf + rtt},
		{"pg-sync", "local", tf},
		{"pg-sync", "none", tf},
	} {
		w, first := waitsFor(tt.engine, tt.sync)
		if got, _ := commitModel(w, first, tf, rtt, 0); got != tt.want {
			t.Errorf("%s -sync %s: %v, want %v", tt.engine, tt.sync, time.Duration(got), time.Duration(tt.want))
		}
		// The fixed term adds to every case, and the formula names it
		// with its figure.
		const fixed = 400e3
		got, formula := commitModel(w, first, tf, rtt, fixed)
		if got != tt.want+fixed || !strings.HasPrefix(formula, "T_fixed + ") || !strings.Contains(formula, " = 400.0 µs + ") {
			t.Errorf("%s -sync %s with T_fixed 400µs: %v %q, want %v and a formula naming T_fixed = 400µs", tt.engine, tt.sync, time.Duration(got), formula, time.Duration(tt.want+fixed))
		}
	}
}

// TestReplicationModelFixedTerm: -t-fixed adds to each engine's commit and
// to the throughput T / commit; without it and without the engines built
// in (this package links no peers), the term is left out and the
// prediction says why.
func TestReplicationModelFixedTerm(t *testing.T) {
	mr, raw := runModel(t, "model -net-delay 1ms -t-fsync 2ms -t-fixed 500us -threads 1,4 -format json")
	want := map[string]float64{"pg-sync": 500e3 + 2*2e6 + 2e6, "etcd": 500e3 + 2e6 + 2e6}
	for _, p := range mr.Replication {
		if p.CommitNs != want[p.Engine] || p.TFixedNs != 500e3 || p.TFixedSource != "given" {
			t.Errorf("%s: commit %v, t_fixed %v (%s), want %v with the given 500µs", p.Engine, p.CommitNs, p.TFixedNs, p.TFixedSource, want[p.Engine])
		}
		if len(p.Threads) != 2 || p.Threads[1].OpsPerSec != 4e9/want[p.Engine] {
			t.Errorf("%s: threads %+v, want 4 clients at 4 / %v", p.Engine, p.Threads, want[p.Engine])
		}
	}
	if !strings.Contains(string(raw), `"t_fixed_ns":500000`) || !strings.Contains(string(raw), `"t_fixed_source":"given"`) {
		t.Errorf("JSON %s: want t_fixed_ns and t_fixed_source", raw)
	}
	var b strings.Builder
	if err := Write(&b, "table", mr); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "T_fixed 500.0 µs (given)") || !strings.Contains(b.String(), "T_fixed + max(T_leader, RTT + T_k) = 500.0 µs + max(") {
		t.Errorf("table %q, want T_fixed's figure and the formula with it", b.String())
	}

	mr, _ = runModel(t, "model -engine etcd -t-fsync 2ms -format json")
	p := mr.Replication[0]
	if p.TFixedSource != "none" || p.TFixedNs != 0 || p.TFixedNote == "" || p.CommitNs != 2e6 {
		t.Errorf("without the engine: t_fixed %v (%s, %q), commit %v; want the term left out, with why", p.TFixedNs, p.TFixedSource, p.TFixedNote, p.CommitNs)
	}
}

func TestReplicationModelFlags(t *testing.T) {
	for _, tt := range []struct{ line, want string }{
		{"model -replicas 1", "-engine etcd takes 2 or 4 (name the engine: -engine pg-sync)"},
		{"model -engine kv -net-delay 1ms", "predicts the replicated engines only"},
		{"model -engine etcd -sync remote_write", "-engine etcd takes always"},
		{"model -net-delay 2s", "-net-delay"},
		{"model", "-sync is required"},
	} {
		if _, err := ParseSpec(tt.line, DefaultLimits()); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want one saying %q", tt.line, err, tt.want)
		}
	}
	s, err := ParseSpec("model -engine etcd -replicas 4 -net-delay 1ms", DefaultLimits())
	if err != nil || s.Replicas != 4 || !strings.Contains(s.String(), "-engine etcd -replicas 4 -net-delay 1ms") {
		t.Errorf("etcd -replicas 4: %v, %q", err, s)
	}
}
