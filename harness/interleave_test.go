package harness

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
)

// TestRepeatRunsInMirroredRounds checks that -engine a,b -repeat N runs
// its configurations interleaved, A B B A A B, each result carrying its
// round and start time, and that the second engine's last result carries
// the median of the per-round paired ratios.
func TestRepeatRunsInMirroredRounds(t *testing.T) {
	raw, err := Exec(context.Background(), "bench -engine kv,null -sync none -ops 300 -warmup 0 -repeat 3", Env{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	var rs []*BenchResult
	if err := json.Unmarshal(raw, &rs); err != nil {
		t.Fatal(err)
	}
	if len(rs) != 6 {
		t.Fatalf("got %d results, want 6", len(rs))
	}
	// Grouped by engine in the output, as before.
	var engines []string
	for _, r := range rs {
		engines = append(engines, r.Engine)
		if r.StartedAt.IsZero() {
			t.Fatalf("%s round %d: no started_at", r.Engine, r.Round)
		}
	}
	if want := []string{"kv", "kv", "kv", "null", "null", "null"}; !slices.Equal(engines, want) {
		t.Fatalf("output order %v, want %v", engines, want)
	}
	// Ordered by start time they ran A B B A A B.
	byStart := slices.Clone(rs)
	slices.SortFunc(byStart, func(a, b *BenchResult) int { return a.StartedAt.Compare(b.StartedAt) })
	var order []string
	var rounds []int
	for _, r := range byStart {
		order = append(order, r.Engine)
		rounds = append(rounds, r.Round)
	}
	if want := []string{"kv", "null", "null", "kv", "kv", "null"}; !slices.Equal(order, want) {
		t.Fatalf("ran %v, want %v (mirrored rounds)", order, want)
	}
	if want := []int{1, 1, 2, 2, 3, 3}; !slices.Equal(rounds, want) {
		t.Fatalf("rounds by start %v, want %v", rounds, want)
	}
	p := rs[5].Paired
	if p == nil || p.Rounds != 3 || p.Against != "kv" || p.Metric != "ops_per_sec" {
		t.Fatalf("null's last result: paired %+v, want 3 rounds against kv", p)
	}
	for i := range 3 {
		if want := rs[3+i].OpsPerSec / rs[i].OpsPerSec; p.Ratios[i] != want {
			t.Fatalf("round %d ratio %g, want %g", i+1, p.Ratios[i], want)
		}
	}
	// Each run carries a probe taken next to it, not one per line: the
	// six probes' mean write costs are not all one measurement.
	writes := map[float64]bool{}
	for _, r := range rs {
		if r.Probe == nil {
			t.Fatalf("%s round %d: no probe", r.Engine, r.Round)
		}
		writes[r.Probe.WriteNs] = true
	}
	if len(writes) < 2 {
		t.Errorf("six runs carry one probe (write_ns %v): want each run probed next to it", writes)
	}
	if rs[2].Paired != nil {
		t.Fatal("the baseline carries a paired ratio against itself")
	}
}
