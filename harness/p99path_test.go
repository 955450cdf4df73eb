package harness

import (
	"math"
	"testing"

	"kvlab/harness/calc"
)

// summaryOf summarizes latencies the way a run does.
func summaryOf(ns ...[]int64) LatencySummary {
	r := newRecorder(newSampleBudget(DefaultExactCap))
	for _, part := range ns {
		for _, v := range part {
			r.record(v)
		}
	}
	return summarize([]*recorder{r}, false)
}

func repeat(v int64, n int) []int64 {
	s := make([]int64, n)
	for i := range s {
		s[i] = v
	}
	return s
}

// A batch:50 run: 98% of the Puts are fast writes (2 µs), 2% waited for a
// flush (about 110 µs), and one of the 200 flushes took 200 ms, which
// drags the mean fdatasync to 1.1 ms. p99 plainly waited for a flush.
// The old rule (p99 >= T_write + mean fdatasync / 2) called it fast.
func TestMeasuredP99PathOneHugeFlush(t *testing.T) {
	put := summaryOf(repeat(2_000, 9_800), repeat(110_000, 200))
	flushes := summaryOf(repeat(100_000, 199), []int64{200_000_000})
	r := &BenchResult{
		Latency: map[string]*LatencySummary{"put": &put}, WallSeconds: 1,
		Fsyncs: flushes.Count, FsyncsCounted: true, FsyncMeanNs: flushes.MeanNs,
		FsyncSamples: flushes.Count, FsyncP50Ns: flushes.P50Ns, FsyncP99Ns: flushes.P99Ns, FsyncMaxNs: flushes.MaxNs,
	}
	if put.P99Ns != 110_000 || flushes.P50Ns != 100_000 || flushes.MeanNs < 1e6 {
		t.Fatalf("fixture: put p99 %d, fsync p50 %d, mean %.0f; want 110000, 100000, above 1 ms", put.P99Ns, flushes.P50Ns, flushes.MeanNs)
	}
	m := benchModel("batch:50", r, &ProbeBrief{WriteNs: 1000, FdatasyncNs: 100_000})
	if m.MeasuredP99Path != calc.P99Slow {
		t.Errorf("p99 110 µs, put p50 2 µs, fdatasync p50 100 µs (mean %s): measured_p99_path %s, want slow", calc.FormatNs(flushes.MeanNs), m.MeasuredP99Path)
	}
	if want := math.Sqrt(2_000 * 100_000); math.Abs(m.P99ThresholdNs-want) > 1e-6*want || m.FsyncP50Source != "run_p50" {
		t.Errorf("threshold %v from %s, want %v from run_p50", m.P99ThresholdNs, m.FsyncP50Source, want)
	}
	// The same run with p99 on the fast side: the flushes are 1 in 1000.
	fast := summaryOf(repeat(2_000, 9_990), repeat(110_000, 10))
	r.Latency["put"] = &fast
	if m := benchModel("batch:1000", r, &ProbeBrief{WriteNs: 1000, FdatasyncNs: 100_000}); m.MeasuredP99Path != calc.P99Fast {
		t.Errorf("p99 %d ns with put p50 2 µs: measured_p99_path %s, want fast", fast.P99Ns, m.MeasuredP99Path)
	}
}
