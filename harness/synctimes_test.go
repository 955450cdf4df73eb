package harness

import (
	"context"
	"math"
	"testing"
	"time"
)

// A kv run times every fdatasync of the timed region: at least the ones
// the engine counts (preallocation's syncs come on top), with a
// distribution that is ordered and bounded by the mean's ingredients.
func TestKVRunTimesEveryFdatasync(t *testing.T) {
	r := bench(t, "bench -engine kv -sync always -workload fillrandom -ops 300 -warmup 0 -dir "+t.TempDir())
	if r.Fsyncs < 300 {
		t.Fatalf("always, 300 Puts: fsyncs %d, want at least 300", r.Fsyncs)
	}
	if r.FsyncSamples < r.Fsyncs {
		t.Errorf("fsync_samples %d < fsyncs %d: every counted fdatasync must be timed", r.FsyncSamples, r.Fsyncs)
	}
	if !(0 < r.FsyncP50Ns && r.FsyncP50Ns <= r.FsyncP99Ns && r.FsyncP99Ns <= r.FsyncMaxNs) {
		t.Errorf("fsync p50 %d, p99 %d, max %d: want 0 < p50 <= p99 <= max", r.FsyncP50Ns, r.FsyncP99Ns, r.FsyncMaxNs)
	}
	// The engine times the same calls from inside: the total agrees
	// within the timers' own overhead, so the max cannot exceed the sum.
	if total := r.FsyncMeanNs * float64(r.Fsyncs); float64(r.FsyncMaxNs) > total*1.5 {
		t.Errorf("fsync max %d ns above the engine's total fdatasync time %.0f ns", r.FsyncMaxNs, total)
	}
}

// Stores whose syncs the harness cannot time say so with 0 samples.
func TestUntimedStoreHasNoFsyncDistribution(t *testing.T) {
	r := bench(t, "bench -engine null -sync always -workload fillrandom -ops 100")
	if r.FsyncSamples != 0 || r.FsyncP50Ns != 0 || r.FsyncP99Ns != 0 || r.FsyncMaxNs != 0 {
		t.Errorf("null engine: fsync samples %d p50 %d p99 %d max %d, want all 0", r.FsyncSamples, r.FsyncP50Ns, r.FsyncP99Ns, r.FsyncMaxNs)
	}
}

// Preload, warmup and Close are outside the timed region: their syncs are
// not in the distribution.
func TestSyncTimesOnlyWhileArmed(t *testing.T) {
	var st SyncTimes
	st.Observe(time.Second) // before arm: preload, warmup
	st.arm()
	st.Observe(2 * time.Millisecond)
	st.Observe(3 * time.Millisecond)
	st.Observe(100 * time.Millisecond)
	s := st.disarm()
	st.Observe(time.Minute) // after: Close
	if s.Count != 3 || s.P50Ns != 3e6 || s.P99Ns != 100e6 || s.MaxNs != 100e6 {
		t.Errorf("got count %d p50 %d p99 %d max %d, want 3, 3 ms, 100 ms, 100 ms", s.Count, s.P50Ns, s.P99Ns, s.MaxNs)
	}
}

// periodic's loss window is the writes acknowledged since the last
// completed fdatasync started, at the rate the run wrote: rate x (D +
// T_fsync), not (D + T_fsync) / T_write.
func TestPeriodicLossWindowAtRunRate(t *testing.T) {
	put := summaryOf(repeat(4_000, 5_000))
	r := &BenchResult{
		Latency: map[string]*LatencySummary{"put": &put}, WallSeconds: 1,
		Fsyncs: 100, FsyncsCounted: true, FsyncMeanNs: 1e6,
	}
	m := benchModel("periodic:10ms", r, &ProbeBrief{WriteNs: 1000, FdatasyncNs: 1e6})
	if m.RateSource != "run" || m.WriteRate != 5000 {
		t.Errorf("rate source %q rate %v, want run and 5000 Puts/s", m.RateSource, m.WriteRate)
	}
	if want := 5000 * (0.010 + 0.001); m.LossWindowWrites != math.Round(want) || math.Abs(m.LossWindowMs-11) > 1e-9 {
		t.Errorf("loss window %v writes / %v ms, want %v writes / 11 ms", m.LossWindowWrites, m.LossWindowMs, want)
	}
	// batch:N loses N-1 writes whatever the rate; the rate gives their time.
	m = benchModel("batch:50", r, &ProbeBrief{WriteNs: 1000, FdatasyncNs: 1e6})
	if m.LossWindowWrites != 49 || math.Abs(m.LossWindowMs-49.0/5000*1e3) > 1e-9 {
		t.Errorf("batch:50: loss window %v writes / %v ms, want 49 / %v ms", m.LossWindowWrites, m.LossWindowMs, 49.0/5000*1e3)
	}
}

// utilization = rate x mean service time: a 2 ms store offered 2000 units/s
// needs four of itself (at least: a sleep is never shorter); a null store
// at 1000/s is nearly idle.
func TestOpenLoopUtilization(t *testing.T) {
	for _, tt := range []struct {
		engine   string
		rate     float64
		min, max float64
	}{
		{"testslow", 2000, 4, math.Inf(1)},
		{"null", 1000, 1e-9, 0.5},
	} {
		cfg := runConfig{engine: tt.engine, sync: "none", workload: "fillrandom", dist: "uniform",
			threads: 1, rate: tt.rate, duration: 100 * time.Millisecond, maxUnits: 1 << 20,
			exactCap: DefaultExactCap, valueSize: 8, keys: 100, dir: t.TempDir()}
		r, err := runOne(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if r.Utilization < tt.min || r.Utilization > tt.max {
			t.Errorf("%s at %v/s: utilization %v, want between %v and %v", tt.engine, tt.rate, r.Utilization, tt.min, tt.max)
		}
	}
	if r := bench(t, "bench -engine null -workload fillrandom -ops 100"); r.Utilization != 0 {
		t.Errorf("closed loop: utilization %v, want 0 (absent)", r.Utilization)
	}
}
