package harness

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// lognormal returns n latency-like samples (median ~50 µs, long tail).
func lognormal(n int, seed uint64) []int64 {
	r := rand.New(rand.NewPCG(seed, 7))
	s := make([]int64, n)
	for i := range s {
		s[i] = int64(math.Exp(r.NormFloat64()*1.5 + math.Log(50000)))
	}
	return s
}

func recordAll(samples []int64, budget int64, workers int) []*recorder {
	b := newExactBudget(budget, workers)
	recs := make([]*recorder, workers)
	for i := range recs {
		recs[i] = newRecorder(b)
	}
	for i, v := range samples {
		recs[i%workers].record(v)
	}
	return recs
}

func TestHistogramWithinPrecisionOfExact(t *testing.T) {
	samples := lognormal(200000, 1)
	exact := summarize(recordAll(samples, int64(len(samples)), 3), false)
	hist := summarize(recordAll(samples, 0, 3), false)
	if !exact.Exact || hist.Exact {
		t.Fatalf("exact flags: %v and %v, want true and false", exact.Exact, hist.Exact)
	}
	sorted := slices.Clone(samples)
	slices.Sort(sorted)
	for i, sp := range exact.Spectrum {
		want := Percentile(sorted, sp.P)
		if sp.Ns != want {
			t.Errorf("exact p%v = %d, want %d", sp.P, sp.Ns, want)
		}
		got := hist.Spectrum[i].Ns
		if rel := math.Abs(float64(got-want)) / float64(want); rel > HistPrecision {
			t.Errorf("histogram p%v = %d, exact %d: off by %.4f%%, want within %.1f%%", sp.P, got, want, rel*100, HistPrecision*100)
		}
	}
	if first, last := hist.Spectrum[0], hist.Spectrum[len(hist.Spectrum)-1]; first.Ns != sorted[0] || last.Ns != sorted[len(sorted)-1] {
		t.Errorf("histogram p0 %d and p100 %d, want the exact min %d and max %d", first.Ns, last.Ns, sorted[0], sorted[len(sorted)-1])
	}
	if exact.Count != hist.Count || exact.MeanNs != hist.MeanNs || exact.MaxNs != hist.MaxNs || exact.MinNs != hist.MinNs {
		t.Errorf("count/mean/min/max differ: exact %d %v %d %d, hist %d %v %d %d; want identical (always exact)",
			exact.Count, exact.MeanNs, exact.MinNs, exact.MaxNs, hist.Count, hist.MeanNs, hist.MinNs, hist.MaxNs)
	}
}

// TestBudgetSpillsToHistogram: a budget smaller than the run switches the
// whole summary to the histogram, and nothing is lost on the way.
func TestBudgetSpillsToHistogram(t *testing.T) {
	samples := lognormal(3*chunkLen, 2)
	recs := recordAll(samples, 1000, 2)
	s := summarize(recs, false)
	if s.Exact {
		t.Error("exact = true with a budget smaller than the run, want false")
	}
	if s.Count != int64(len(samples)) {
		t.Errorf("count = %d, want %d", s.Count, len(samples))
	}
	var n int64
	for _, b := range s.Histogram {
		n += b.Count
	}
	if n != s.Count {
		t.Errorf("histogram buckets hold %d samples, want %d", n, s.Count)
	}
	var kept int
	for _, r := range recs {
		for _, c := range r.samples() {
			kept += len(c)
		}
	}
	if want := 1000 + 1000; kept != want {
		t.Errorf("exact samples kept = %d, want the budget with slack, %d", kept, want)
	}
}

func TestSummarizeExactSmall(t *testing.T) {
	s := summarize(recordAll([]int64{500, 100, 300, 200, 400}, 100, 1), false)
	want := LatencySummary{Count: 5, MeanNs: 300, MinNs: 100, P50Ns: 300, P95Ns: 500, P99Ns: 500, P999Ns: 500, MaxNs: 500, Exact: true}
	if s.Count != want.Count || s.MeanNs != want.MeanNs || s.MinNs != want.MinNs || s.P50Ns != want.P50Ns ||
		s.P95Ns != want.P95Ns || s.P99Ns != want.P99Ns || s.P999Ns != want.P999Ns || s.MaxNs != want.MaxNs || !s.Exact {
		t.Errorf("got %+v, want %+v", s, want)
	}
	// Buckets: 100 and 200 and 251-boundary... each sample in the bucket
	// whose bound is the first >= it.
	for _, b := range s.Histogram {
		if b.Count > 0 && b.LeNs < 100 {
			t.Errorf("bucket le %d has %d samples below the minimum", b.LeNs, b.Count)
		}
	}
}

func TestSummarizeUnsorted(t *testing.T) {
	// In arrival order 900, 100, 500, 200, 300: "p50" picks index 2 (500)
	// and "max" picks the last sample (300).
	s := summarize(recordAll([]int64{900, 100, 500, 200, 300}, 100, 1), true)
	if s.P50Ns != 500 || s.MaxNs != 300 {
		t.Errorf("unsorted p50 %d max %d, want 500 and 300", s.P50Ns, s.MaxNs)
	}
	s = summarize(recordAll([]int64{900, 100, 500, 200, 300}, 100, 1), false)
	if s.P50Ns != 300 || s.MaxNs != 900 {
		t.Errorf("sorted p50 %d max %d, want 300 and 900", s.P50Ns, s.MaxNs)
	}
}

func TestSummarizeEmptyIsAllZeros(t *testing.T) {
	s := summarize([]*recorder{newRecorder(newSampleBudget(10))}, false)
	if s.Count != 0 || s.MinNs != 0 || s.MaxNs != 0 || s.P99Ns != 0 {
		t.Errorf("empty: got %+v, want zeros", s)
	}
}

func TestBucketEdgesIncreaseAndBucketOfRoundsUp(t *testing.T) {
	for i := 1; i < len(bucketEdges); i++ {
		if bucketEdges[i] <= bucketEdges[i-1] {
			t.Fatalf("edges not increasing at %d: %d then %d", i, bucketEdges[i-1], bucketEdges[i])
		}
	}
	tests := []struct {
		ns   int64
		want int64
	}{{1, 10}, {10, 10}, {11, 16}, {1000, 1000}, {1001, 1585}, {250_000, 251189}}
	for _, tt := range tests {
		if got := bucketEdges[bucketOf(tt.ns)]; got != tt.want {
			t.Errorf("bucket of %d ns: le %d, want %d", tt.ns, got, tt.want)
		}
	}
}

// TestStartBlocks: the first worker's first samples, in recorded order,
// in blocks of StartBlock; a part block and a recorder with no exact
// samples give none, and samples kept in several chunks read as one
// sequence.
func TestStartBlocks(t *testing.T) {
	seq := func(n int) []int64 { // 1000, 1001, ... with every tenth sample 9000
		var v []int64
		for i := range n {
			x := int64(1000 + i)
			if i%10 == 9 {
				x = 9000
			}
			v = append(v, x)
		}
		return v
	}
	for _, tc := range []struct {
		name   string
		budget int64
		n      int
		blocks int
	}{
		{"fewer than a block", 1000, StartBlock - 1, 0},
		{"two blocks and a part", 1000, 2*StartBlock + 5, 2},
		{"more than StartSamples", 1 << 20, 3 * StartSamples, StartSamples / StartBlock},
		{"a budget smaller than the first chunk: the rest in a histogram", 15, 3 * StartSamples, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRecorder(newSampleBudget(tc.budget))
			in := seq(tc.n)
			for _, v := range in {
				r.record(v)
			}
			got := startBlocks(r)
			if len(got) != tc.blocks {
				t.Fatalf("%d blocks, want %d: %+v", len(got), tc.blocks, got)
			}
			for i, b := range got {
				block := in[i*StartBlock : (i+1)*StartBlock]
				var sum int64
				for _, v := range block {
					sum += v
				}
				sorted := slices.Sorted(slices.Values(block))
				want := StartBlockSummary{First: int64(i*StartBlock + 1), Last: int64((i + 1) * StartBlock),
					MeanNs: float64(sum) / StartBlock, P50Ns: Percentile(sorted, 50), MaxNs: 9000}
				if b != want {
					t.Errorf("block %d: %+v, want %+v", i, b, want)
				}
			}
		})
	}
	// Chunks: a recorder whose first chunk is shorter than StartSamples.
	r := newRecorder(newSampleBudget(1 << 20))
	r.reserve(StartBlock + 3)
	for _, v := range seq(StartSamples) {
		r.record(v)
	}
	if n := len(r.samples()); n < 2 {
		t.Fatalf("the recorder kept %d chunk(s); the test wants its samples split", n)
	}
	if got := startBlocks(r); len(got) != StartSamples/StartBlock || got[1].First != StartBlock+1 || got[1].P50Ns != Percentile(slices.Sorted(slices.Values(seq(2 * StartBlock)[StartBlock:])), 50) {
		t.Errorf("blocks across chunks: %+v", got)
	}
}
