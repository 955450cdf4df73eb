package harness

import (
	"math"
	"slices"
	"sort"
	"sync/atomic"

	"github.com/HdrHistogram/hdrhistogram-go"

	"kvlab/harness/calc"
)

// How latencies are kept.
//
// Every recorded latency goes into exact samples while the run's budget of
// exact slots lasts. The budget is shared by all workers and handed out in
// chunks (1K slots, doubling up to 64K) so workers never contend per op. A
// worker that finds the budget spent switches to its own HdrHistogram, and
// from then on the whole run is summarized from histograms: each worker's
// samples and histogram are merged into one at the end, and the report
// says "exact": false. A run of up to DefaultExactCap ops is always exact:
// the budget adds one largest chunk per recorder of slack (newExactBudget),
// since a chunk can be reserved by one worker and left partly unused.
//
// The histogram keeps 3 significant digits, so any percentile it reports is
// within 0.1% of a value that was recorded (HistPrecision). Count, mean,
// min and max are always exact: each recorder keeps them as plain sums.

// DefaultExactCap is the number of exact samples a run keeps before it
// switches to histograms.
const DefaultExactCap = 2_000_000

// A recorder takes exact-sample slots from the run's budget firstChunk at
// a time, doubling up to chunkLen. One allocation per chunk: none per op.
const (
	firstChunk = 1 << 10
	chunkLen   = 1 << 16
)

// Histogram range and precision: 1 ns to one hour, 3 significant digits.
const (
	histMin       = 1
	histMax       = int64(3600e9)
	histDigits    = 3
	HistPrecision = 0.001 // relative error bound of a histogram percentile
)

// sampleBudget is the run-wide count of exact slots not yet handed out.
// Safe for concurrent use.
type sampleBudget struct{ left atomic.Int64 }

func newSampleBudget(n int64) *sampleBudget {
	b := &sampleBudget{}
	b.left.Store(n)
	return b
}

// newExactBudget is the budget that keeps a run of up to exactCap samples
// exact when recorders draw on it, however the samples fall among them.
// The slack is bounded by exactCap, so many recorders cannot multiply
// the memory: past that a run may switch to histograms a little early,
// and says so.
func newExactBudget(exactCap int64, recorders int) *sampleBudget {
	return newSampleBudget(exactCap + min(int64(recorders)*chunkLen, exactCap))
}

// take reserves up to want slots and returns how many it got.
func (b *sampleBudget) take(want int64) int {
	for {
		left := b.left.Load()
		if left <= 0 {
			return 0
		}
		n := min(left, want)
		if b.left.CompareAndSwap(left, left-n) {
			return int(n)
		}
	}
}

// recorder keeps one worker's latencies for one kind of operation.
// Not safe for concurrent use: each worker owns its recorders.
type recorder struct {
	budget *sampleBudget
	full   [][]int64               // filled chunks of exact samples
	cur    []int64                 // the chunk being filled; len = used, cap = reserved
	hist   *hdrhistogram.Histogram // non-nil once the exact budget ran out

	count, sum, min, max int64 // exact, always
}

func newRecorder(b *sampleBudget) *recorder {
	return &recorder{budget: b, min: math.MaxInt64}
}

// record adds one latency in nanoseconds. It allocates only when it takes
// a new chunk (once per 64K calls) or switches to a histogram (once).
func (r *recorder) record(ns int64) {
	if ns < 0 {
		ns = 0 // a monotonic clock never goes back; guard the histogram anyway
	}
	r.count++
	r.sum += ns
	if ns > r.max {
		r.max = ns
	}
	if ns < r.min {
		r.min = ns
	}
	if r.hist == nil {
		if len(r.cur) < cap(r.cur) || r.grow() {
			r.cur = append(r.cur, ns) // within capacity: no allocation
			return
		}
	}
	r.hist.RecordValue(min(ns, histMax))
}

// reserve takes up to n exact slots from the budget in one chunk and
// touches every page of it, so that a run whose sample count is known
// does its allocating and page faulting before the clock starts rather
// than inside the wall clock. It does nothing once samples are recorded.
func (r *recorder) reserve(n int64) {
	if n <= 0 || r.hist != nil || cap(r.cur) > 0 {
		return
	}
	got := r.budget.take(n)
	if got == 0 {
		return
	}
	c := make([]int64, got)
	for i := 0; i < got; i += 512 { // one write per 4 KiB page
		c[i] = 0
	}
	r.cur = c[:0]
}

// grow takes a new chunk from the budget; when the budget is spent it
// moves this recorder to a histogram and returns false.
func (r *recorder) grow() bool {
	want := int64(firstChunk)
	if c := cap(r.cur); c > 0 {
		want = min(int64(2*c), chunkLen)
	}
	if n := r.budget.take(want); n > 0 {
		if len(r.cur) > 0 {
			r.full = append(r.full, r.cur)
		}
		r.cur = make([]int64, 0, n)
		return true
	}
	r.hist = newHist()
	return false
}

func newHist() *hdrhistogram.Histogram { return hdrhistogram.New(histMin, histMax, histDigits) }

// samples returns the recorder's exact samples, in the order recorded.
func (r *recorder) samples() [][]int64 { return append(slices.Clip(r.full), r.cur) }

// LatencySummary is one operation kind's latency over a run: the JSON
// object under "latency"."put" and friends. All times in nanoseconds.
type LatencySummary struct {
	Count  int64   `json:"count"`
	MeanNs float64 `json:"mean_ns"`
	MinNs  int64   `json:"min_ns"`
	P50Ns  int64   `json:"p50_ns"`
	P95Ns  int64   `json:"p95_ns"`
	P99Ns  int64   `json:"p99_ns"`
	P999Ns int64   `json:"p999_ns"`
	MaxNs  int64   `json:"max_ns"`
	// Exact is true when the percentiles come from every sample sorted,
	// false when they come from a histogram (within HistPrecision).
	Exact bool `json:"exact"`
	// Spectrum is the percentile curve at SpectrumPoints.
	Spectrum []SpectrumPoint `json:"spectrum"`
	// Histogram counts samples in log-spaced buckets (5 per decade); a
	// bucket holds the samples above the previous bucket's LeNs up to its
	// own. Runs of empty buckets at either end are left out.
	Histogram []HistBucket `json:"histogram"`
	// Start is how the run began: the first worker's first StartSamples
	// samples in the order it recorded them, in blocks of StartBlock
	// (fewer when it recorded fewer). Only on a bench result's latency,
	// not on uncorrected, pooled or fdatasync summaries.
	Start []StartBlockSummary `json:"start,omitempty"`
}

// StartSamples and StartBlock shape LatencySummary.Start: the first 100
// samples in ten blocks of ten. A cold start is that short: a kv store
// with sync none and no warmup (ext4 on a virtual disk, 2 cores, load
// average 5, 3 runs) took 2.0-2.9 µs for the median of its first ten
// Puts and 0.3-0.4 µs for the tenth block's, its index growing and its
// buffer's pages touched for the first time; blocks of 100 hid it
// (1.1-1.4x). Sorted into the run's percentiles, those ten samples are
// lost among the rest.
const (
	StartSamples = 100
	StartBlock   = 10
)

// StartBlockSummary is one block of LatencySummary.Start: samples First
// to Last (1-based, in recorded order) of the first worker.
type StartBlockSummary struct {
	First  int64   `json:"first"`
	Last   int64   `json:"last"`
	MeanNs float64 `json:"mean_ns"`
	P50Ns  int64   `json:"p50_ns"`
	MaxNs  int64   `json:"max_ns"`
}

// startBlocks summarizes r's first StartSamples exact samples in blocks
// of StartBlock, in the order recorded; a last block shorter than
// StartBlock is left out, and so is everything when r kept no samples.
func startBlocks(r *recorder) []StartBlockSummary {
	var first []int64
	for _, c := range r.samples() {
		first = append(first, c[:min(len(c), StartSamples-len(first))]...)
		if len(first) == StartSamples {
			break
		}
	}
	var out []StartBlockSummary
	for i := 0; i+StartBlock <= len(first); i += StartBlock {
		b := slices.Clone(first[i : i+StartBlock])
		var sum int64
		for _, v := range b {
			sum += v
		}
		slices.Sort(b)
		out = append(out, StartBlockSummary{
			First: int64(i + 1), Last: int64(i + StartBlock),
			MeanNs: float64(sum) / StartBlock, P50Ns: Percentile(b, 50), MaxNs: b[len(b)-1],
		})
	}
	return out
}

// SpectrumPoint is one point of the percentile curve.
type SpectrumPoint struct {
	P  float64 `json:"p"`
	Ns int64   `json:"ns"`
}

// HistBucket is one bar of the latency histogram.
type HistBucket struct {
	LeNs  int64 `json:"le_ns"`
	Count int64 `json:"count"`
}

// SpectrumPoints are the percentiles of the "spectrum" curve.
var SpectrumPoints = []float64{0, 10, 25, 50, 75, 90, 95, 99, 99.5, 99.9, 99.99, 100}

// bucketEdges are the histogram's upper bounds: 10 ns to 1000 s, five per
// decade (1, 1.6, 2.5, 4, 6.3 times a power of ten).
var bucketEdges = func() []int64 {
	var e []int64
	for d := 1; d <= 12; d++ {
		for k := 0; k < 5; k++ {
			e = append(e, int64(math.Round(math.Pow(10, float64(d)+float64(k)/5))))
		}
	}
	return append(e, math.MaxInt64)
}()

// bucketOf returns the index of the bucket that holds ns.
func bucketOf(ns int64) int {
	return sort.Search(len(bucketEdges), func(i int) bool { return bucketEdges[i] >= ns })
}

// summarize merges the recorders of one operation kind. With unsorted set
// (the -dishonest-unsorted-percentile rule break) it picks "percentiles"
// from the exact samples in arrival order instead of sorting them first.
func summarize(recs []*recorder, unsorted bool) LatencySummary {
	s := totals(recs)
	if s.Count == 0 {
		return s
	}
	var pick func(p float64) int64
	counts := make([]int64, len(bucketEdges))
	if s.Exact {
		pick = exactPicker(recs, s.Count, unsorted, counts)
	} else {
		pick = histPicker(recs, s.MinNs, s.MaxNs, counts)
	}
	s.P50Ns, s.P95Ns, s.P99Ns, s.P999Ns = pick(50), pick(95), pick(99), pick(99.9)
	if unsorted && s.Exact {
		// The broken rule applies to every "percentile", the max included.
		s.MinNs, s.MaxNs = pick(0), pick(100)
	}
	for _, p := range SpectrumPoints {
		s.Spectrum = append(s.Spectrum, SpectrumPoint{P: p, Ns: pick(p)})
	}
	s.Histogram = histogramBuckets(counts)
	return s
}

// totals sums the recorders' counts, mean, min and max, and says whether
// every sample is still kept exactly (no recorder switched to a
// histogram). With no samples, every figure is 0 and Exact is true.
func totals(recs []*recorder) LatencySummary {
	s := LatencySummary{MinNs: math.MaxInt64, Exact: true}
	for _, r := range recs {
		if r.count == 0 {
			continue
		}
		s.Count += r.count
		s.MeanNs += float64(r.sum)
		s.MaxNs = max(s.MaxNs, r.max)
		s.MinNs = min(s.MinNs, r.min)
		if r.hist != nil {
			s.Exact = false
		}
	}
	if s.Count == 0 {
		return LatencySummary{Exact: true}
	}
	s.MeanNs /= float64(s.Count)
	return s
}

// exactPicker gathers every exact sample, sorted unless unsorted breaks
// the rule on purpose, counts them into counts' buckets, and returns the
// nearest-rank percentile over them.
func exactPicker(recs []*recorder, n int64, unsorted bool, counts []int64) func(p float64) int64 {
	all := make([]int64, 0, n)
	for _, r := range recs {
		for _, c := range r.samples() {
			all = append(all, c...)
		}
	}
	if !unsorted {
		slices.Sort(all)
	}
	for _, v := range all {
		counts[bucketOf(v)]++
	}
	return func(p float64) int64 { return Percentile(all, p) }
}

// histPicker merges every recorder, exact samples and histograms alike,
// into one histogram, counts its bars into counts' buckets, and returns
// the percentile over its bars, clamped to the exact min and max.
func histPicker(recs []*recorder, minNs, maxNs int64, counts []int64) func(p float64) int64 {
	h := newHist()
	for _, r := range recs {
		for _, c := range r.samples() {
			for _, v := range c {
				h.RecordValue(min(v, histMax))
			}
		}
		if r.hist != nil {
			h.Merge(r.hist)
		}
	}
	bars := h.Distribution()
	for _, b := range bars {
		if b.Count > 0 {
			// The value the percentiles report for a sample in this
			// bar (histPercentile), so the chart and the numbers agree.
			counts[bucketOf(min(max(b.To, minNs), maxNs))] += b.Count
		}
	}
	return func(p float64) int64 { return histPercentile(bars, h.TotalCount(), p, minNs, maxNs) }
}

// histogramBuckets is the chart's histogram: the buckets from the first
// to the last that holds a sample. counts holds at least one.
func histogramBuckets(counts []int64) []HistBucket {
	lo, hi := 0, len(counts)-1
	for counts[lo] == 0 {
		lo++
	}
	for counts[hi] == 0 {
		hi--
	}
	var out []HistBucket
	for i := lo; i <= hi; i++ {
		out = append(out, HistBucket{LeNs: bucketEdges[i], Count: counts[i]})
	}
	return out
}

// histPercentile is nearest rank over histogram bars: the bar holding the
// rank-th smallest sample, reported as that bar's highest value, clamped to
// the exact min and max. (HdrHistogram's own ValueAtPercentile rounds the
// rank differently; see calc.Percentile.)
func histPercentile(bars []hdrhistogram.Bar, total int64, p float64, minNs, maxNs int64) int64 {
	if p <= 0 {
		return minNs // the ends are known exactly
	}
	if p >= 100 {
		return maxNs
	}
	rank := max(calc.Rank(p, total), 1)
	var seen int64
	for _, b := range bars {
		seen += b.Count
		if seen >= rank {
			return min(max(b.To, minNs), maxNs)
		}
	}
	return maxNs
}
