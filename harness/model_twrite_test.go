package harness

import "testing"

// TestBenchModelTWriteSource: a one-writer run feeds the model its own mean
// Put cost outside the flush (model.go): the wall time per Put minus the
// commit flushes' share under batch:N, the mean Put latency when the
// workload also reads, the mean service time (uncorrected) on a -rate run;
// nothing is subtracted under periodic, whose timer flushes beside the
// Puts. Several writers, or batch:N on a store that does not count its
// flushes, fall back to the probe's write(2).
//
// Every case below costs 3000 ns per Put outside the flush, with 200 µs
// flushes; 6400 Puts under batch:64 make 100 of them.
func TestBenchModelTWriteSource(t *testing.T) {
	brief := &ProbeBrief{WriteNs: 1000, FdatasyncNs: 300000, FdatasyncOverwriteNs: 250000}
	const puts, fsyncs, flush, tw = 6400, 100, 200000.0, 3000.0
	batchWall := (puts*tw + fsyncs*flush) / 1e9 // seconds
	cases := []struct {
		name    string
		sync    string
		r       BenchResult
		want    string
		wantNs  float64
		putMean float64 // latency.put.mean_ns
		uncMean float64 // latency_uncorrected.put.mean_ns, on a -rate run
	}{
		{name: "batch, puts only: wall per put minus flush share", sync: "batch:64", want: "run_wall", wantNs: tw,
			r: BenchResult{Threads: 1, Ops: puts, WallSeconds: batchWall, FsyncsCounted: true, Fsyncs: fsyncs, FsyncMeanNs: flush}},
		// Two segment seals: fsyncs counts them, but their flushes are
		// part of what the Puts cost outside the policy's flush.
		{name: "batch, with seals: only the commits are the flush share", sync: "batch:64", want: "run_wall", wantNs: tw + 2*flush/puts,
			r: BenchResult{Threads: 1, Ops: puts, WallSeconds: batchWall + 2*flush/1e9, FsyncsCounted: true, Fsyncs: fsyncs + 2, FsyncMeanNs: flush,
				FsyncsByCause: map[string]int64{"commit": fsyncs, "seal": 2}}},
		{name: "batch:1: every Put flushes, the rest is T_write", sync: "batch:1", want: "run_wall", wantNs: tw,
			r: BenchResult{Threads: 1, Ops: puts, WallSeconds: puts * (tw + flush) / 1e9, FsyncsCounted: true, Fsyncs: puts, FsyncMeanNs: flush}},
		{name: "batch, with reads: mean put minus flush share", sync: "batch:64", want: "run_mean", wantNs: tw, putMean: tw + fsyncs*flush/puts,
			r: BenchResult{Threads: 1, Ops: 2 * puts, WallSeconds: 1, FsyncsCounted: true, Fsyncs: fsyncs, FsyncMeanNs: flush}},
		// The open loop's corrected mean (50 µs: units queued) is not the
		// store's cost; its service time is.
		{name: "batch, -rate: service time", sync: "batch:64", want: "run_service", wantNs: tw, putMean: 50000, uncMean: tw + fsyncs*flush/puts,
			r: BenchResult{Threads: 1, Ops: puts, Rate: 1000, WallSeconds: puts / 1000.0, FsyncsCounted: true, Fsyncs: fsyncs, FsyncMeanNs: flush}},
		{name: "periodic: the timer's flushes are not in the Puts", sync: "periodic:10ms", want: "run_wall", wantNs: tw,
			r: BenchResult{Threads: 1, Ops: puts, WallSeconds: puts * tw / 1e9, FsyncsCounted: true, Fsyncs: 2, FsyncMeanNs: flush}},
		{name: "several writers", sync: "batch:64", want: "probe", wantNs: 1000,
			r: BenchResult{Threads: 4, Ops: puts, WallSeconds: batchWall, FsyncsCounted: true, Fsyncs: fsyncs, FsyncMeanNs: flush}},
		{name: "flushes not counted (bbolt)", sync: "batch:64", want: "probe", wantNs: 1000,
			r: BenchResult{Threads: 1, Ops: puts, WallSeconds: batchWall}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := c.r
			r.Engine = "kv"
			r.Latency = map[string]*LatencySummary{"put": {Count: puts, MeanNs: c.putMean, P50Ns: 900, P99Ns: 250000}}
			if r.Rate > 0 {
				r.LatencyUncorrected = map[string]*LatencySummary{"put": {Count: puts, MeanNs: c.uncMean, P50Ns: 900, P99Ns: 250000}}
			}
			m := benchModel(c.sync, &r, brief)
			if m == nil {
				t.Fatal("no model")
			}
			if m.TWriteSource != c.want || m.TWriteNs < c.wantNs*0.999999 || m.TWriteNs > c.wantNs*1.000001 {
				t.Errorf("got T_write %v from %s, want %v from %s", m.TWriteNs, m.TWriteSource, c.wantNs, c.want)
			}
		})
	}
}

// TestBenchModelRateUsesServiceTime: on a -rate run the measured p99 path
// is read from the service times, not the corrected latency, whose tail is
// the queue's: a periodic run whose Puts take 1-3 µs is on the fast path
// even when units waited 20 ms to start.
func TestBenchModelRateUsesServiceTime(t *testing.T) {
	r := &BenchResult{Engine: "kv", Threads: 1, Ops: 1000, Rate: 1000, WallSeconds: 1, FsyncsCounted: true, Fsyncs: 100,
		FsyncMeanNs: 150000, FsyncSamples: 100, FsyncP50Ns: 150000,
		Latency:            map[string]*LatencySummary{"put": {Count: 1000, MeanNs: 900000, P50Ns: 600000, P99Ns: 20000000}},
		LatencyUncorrected: map[string]*LatencySummary{"put": {Count: 1000, MeanNs: 1500, P50Ns: 1000, P99Ns: 3000}}}
	m := benchModel("periodic:10ms", r, &ProbeBrief{WriteNs: 1000, FdatasyncNs: 200000})
	if m.MeasuredP99Path != "fast" || m.P99Path != "fast" {
		t.Errorf("measured p99 path %s (threshold %v), model %s; want fast and fast from the service times", m.MeasuredP99Path, m.P99ThresholdNs, m.P99Path)
	}
	if m.TWriteNs != 1500 || m.TWriteSource != "run_service" {
		t.Errorf("T_write %v from %s, want 1500 from run_service", m.TWriteNs, m.TWriteSource)
	}
}

// TestProbeFsyncFor: each engine's T_fsync is the probe case it pays.
func TestProbeFsyncFor(t *testing.T) {
	b := &ProbeBrief{FdatasyncNs: 200000, FdatasyncOverwriteNs: 150000}
	for _, c := range []struct {
		engine, kind string
		ns           float64
	}{
		{"kv", "overwrite", 150000},
		{"pebble", "append", 200000},
		{"bbolt", "append+overwrite", 350000},
		{"null", "overwrite", 150000},
	} {
		if ns, kind := ProbeFsyncFor(c.engine, b); ns != c.ns || kind != c.kind {
			t.Errorf("%s: got %v (%s), want %v (%s)", c.engine, ns, kind, c.ns, c.kind)
		}
	}
	// A brief from before the overwrite case: the only figure there is.
	if ns, kind := ProbeFsyncFor("kv", &ProbeBrief{FdatasyncNs: 200000}); ns != 200000 || kind != "append" {
		t.Errorf("old brief: got %v (%s), want 200000 (append)", ns, kind)
	}
	// A kv run that counted no fsyncs is modelled with the overwrite case.
	r := &BenchResult{Engine: "kv", Threads: 1, Ops: 10, WallSeconds: 1e-3, FsyncsCounted: true,
		Latency: map[string]*LatencySummary{"put": {Count: 10, MeanNs: 1000, P50Ns: 1000, P99Ns: 2000}}}
	if m := benchModel("batch:100", r, b); m.TFsyncNs != 150000 || m.TFsyncSource != "probe" || m.TFsyncCase != "overwrite" {
		t.Errorf("kv, no fsyncs: T_fsync %v from %s (%s), want 150000 from probe (overwrite)", m.TFsyncNs, m.TFsyncSource, m.TFsyncCase)
	}
}
