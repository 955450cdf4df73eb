package harness

import (
	"context"
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	"kvlab/harness/calc"
)

// Measurement edge cases: what is counted, and from which clock.

// In an open-loop updaterandom run every Put of a unit is recorded beside
// its Get, corrected and uncorrected alike, so the two tables count the
// same ops.
func TestOpenLoopUpdateRecordsPutUncorrected(t *testing.T) {
	r := bench(t, "bench -engine testmap -workload updaterandom -ops 200 -rate 50000")
	for _, k := range []string{"get", "put"} {
		c, u := r.Latency[k], r.LatencyUncorrected[k]
		if c == nil || u == nil {
			t.Fatalf("%s: latency %v, latency_uncorrected %v: want both", k, c, u)
		}
		if c.Count != u.Count {
			t.Errorf("%s: got %d uncorrected samples, want %d (as corrected)", k, u.Count, c.Count)
		}
	}
}

// An open loop's schedule is one stream at -rate, dealt round-robin to the
// threads from the run's one start time: thread w's unit i is the run's
// unit i*threads+w.
func TestOpenLoopSchedule(t *testing.T) {
	tests := []struct {
		threads, w int
		i          int64
		rate       float64
		want       time.Duration
	}{
		{1, 0, 0, 1000, 0},
		{1, 0, 3, 1000, 3 * time.Millisecond},
		{2, 0, 1, 1000, 2 * time.Millisecond},
		{2, 1, 0, 1000, 1 * time.Millisecond},
		{2, 1, 2, 1000, 5 * time.Millisecond},
		{4, 3, 1, 4000, 1750 * time.Microsecond},
		{3, 2, 1_000_000, 3, 1_000_000*time.Second + 666_666_666},
	}
	for _, tt := range tests {
		if got := intendedOffset(tt.threads, tt.w, tt.i, tt.rate); got != tt.want {
			t.Errorf("intendedOffset(threads %d, w %d, i %d, rate %v) = %v, want %v", tt.threads, tt.w, tt.i, tt.rate, got, tt.want)
		}
	}
}

// A -duration run stops at its deadline: in an open loop no unit whose
// intended start is at or past the deadline is started (or counted).
func TestOpenLoopDurationStopsAtDeadline(t *testing.T) {
	tests := []struct {
		threads  int
		rate     float64
		duration time.Duration
		want     int64
	}{
		{1, 20, 500 * time.Millisecond, 10},
		{2, 40, 250 * time.Millisecond, 10},
	}
	for _, tt := range tests {
		cfg := runConfig{engine: "null", sync: "none", workload: "fillrandom", dist: "uniform",
			threads: tt.threads, rate: tt.rate, duration: tt.duration, maxUnits: 1 << 20,
			exactCap: DefaultExactCap, valueSize: 8, keys: 100, dir: t.TempDir()}
		r, err := runOne(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if r.Units != tt.want {
			t.Errorf("threads %d rate %v duration %v: got %d units, want %d", tt.threads, tt.rate, tt.duration, r.Units, tt.want)
		}
	}
}

// The byte cap of a -duration run is split among the threads without
// losing the remainder.
func TestDurationCapSplitKeepsRemainder(t *testing.T) {
	for _, threads := range []int{1, 2, 3, 7} {
		cfg := runConfig{engine: "null", sync: "none", workload: "fillrandom", dist: "uniform",
			threads: threads, duration: time.Minute, maxUnits: 100,
			exactCap: DefaultExactCap, valueSize: 8, keys: 100, dir: t.TempDir()}
		r, err := runOne(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if r.Units != 100 {
			t.Errorf("threads %d: got %d units, want the cap 100", threads, r.Units)
		}
	}
}

// slowStore takes 2 ms per Put: slower than any rate above 500/s.
type slowStore struct{ nullStoreForTest }

type nullStoreForTest struct{}

func (nullStoreForTest) Put(k, v []byte) error              { return nil }
func (nullStoreForTest) Get(k []byte) ([]byte, bool, error) { return nil, false, nil }
func (nullStoreForTest) Delete(k []byte) error              { return nil }
func (nullStoreForTest) Close() error                       { return nil }
func (slowStore) Put(k, v []byte) error                     { time.Sleep(2 * time.Millisecond); return nil }

// slowBothStore takes 50 ms per Put and 200 µs per Get, and no Get
// starts before a Put has: a readwhilewriting run's readers cannot finish
// before its writer has a Put in flight.
type slowBothStore struct {
	nullStoreForTest
	putStarted chan struct{} // closed by the first Put
	once       sync.Once
}

func (s *slowBothStore) Put(k, v []byte) error {
	s.once.Do(func() { close(s.putStarted) })
	time.Sleep(50 * time.Millisecond)
	return nil
}

func (s *slowBothStore) Get(k []byte) ([]byte, bool, error) {
	select {
	case <-s.putStarted:
	case <-time.After(10 * time.Second): // no writer: let the run end, and the test say so
	}
	time.Sleep(200 * time.Microsecond)
	return nil, false, nil
}

func init() {
	RegisterEngine("testslow", func(dir, sync string) (Store, error) { return slowStore{}, nil })
	RegisterEngine("testslowboth", func(dir, sync string) (Store, error) {
		return &slowBothStore{putStarted: make(chan struct{})}, nil
	})
}

// When the store is slower than -rate, a -duration run ends at its
// deadline with units still due; it reports how many, so every unit
// scheduled before the deadline is either measured or counted as backlog.
func TestOpenLoopBacklogReported(t *testing.T) {
	tests := []struct {
		threads int
		rate    float64
		due     int64 // units scheduled before the deadline
	}{
		{1, 2000, 200},
		{2, 4000, 400},
	}
	for _, tt := range tests {
		cfg := runConfig{engine: "testslow", sync: "none", workload: "fillrandom", dist: "uniform",
			threads: tt.threads, rate: tt.rate, duration: 100 * time.Millisecond, maxUnits: 1 << 20,
			exactCap: DefaultExactCap, valueSize: 8, keys: 100, dir: t.TempDir()}
		r, err := runOne(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if r.BacklogUnits == 0 {
			t.Errorf("threads %d: got backlog 0 with a 2 ms store at %v/s, want some", tt.threads, tt.rate)
		}
		if got := r.Units + r.BacklogUnits; got != tt.due {
			t.Errorf("threads %d: got units %d + backlog %d = %d, want the %d due before the deadline", tt.threads, r.Units, r.BacklogUnits, got, tt.due)
		}
	}
}

// Samples kept exactly before a recorder's budget ran out are summarized
// with the ones recorded into its histogram after, rank for rank.
func TestSwitchKeepsEarlierSamples(t *testing.T) {
	r := newRecorder(newSampleBudget(firstChunk))
	for range firstChunk {
		r.record(1_000_000) // slow, exact
	}
	for range 3 * firstChunk {
		r.record(100) // fast, after the switch
	}
	if r.hist == nil {
		t.Fatal("recorder did not switch to a histogram")
	}
	s := summarize([]*recorder{r}, false)
	tests := []struct {
		name string
		got  int64
		want int64
	}{
		{"p50", s.P50Ns, 100},
		{"p75", s.Spectrum[4].Ns, 100},
		{"p90", s.Spectrum[5].Ns, 1_000_000},
		{"p99", s.P99Ns, 1_000_000},
		{"max", s.MaxNs, 1_000_000},
	}
	for _, tt := range tests {
		if rel := math.Abs(float64(tt.got-tt.want)) / float64(tt.want); rel > HistPrecision {
			t.Errorf("%s = %d, want %d within %v", tt.name, tt.got, tt.want, HistPrecision)
		}
	}
	if s.Count != 4*firstChunk || s.Exact {
		t.Errorf("count %d exact %v, want %d and false", s.Count, s.Exact, 4*firstChunk)
	}
}

// The histogram chart and the percentiles of a summary agree: each sample
// is counted in the bucket of the value the percentiles report for it,
// from exact samples and from an HdrHistogram alike.
func TestHistogramBucketsMatchPercentiles(t *testing.T) {
	// 63090 ns is in the bucket up to 63096; the HdrHistogram bar holding
	// it, 63072 to 63103, straddles that edge.
	edge, v0 := bucketEdges[19], int64(63090)
	for _, budget := range []int64{1 << 20, 0} {
		samples := []int64{v0, v0, v0, 3 * v0}
		s := summarize(recordAll(samples, budget, 1), false)
		for _, p := range []float64{25, 50, 75, 100} {
			v := s.Spectrum[slices.Index(SpectrumPoints, p)].Ns
			var below, upTo int64
			for _, b := range s.Histogram {
				if b.LeNs < v {
					below += b.Count
				}
				if bucketOf(v) >= bucketOf(b.LeNs) {
					upTo += b.Count
				}
			}
			if rank := calc.Rank(p, s.Count); below >= rank || upTo < rank {
				t.Errorf("budget %d: p%v = %d, but the buckets below it hold %d samples and those up to its bucket %d; want fewer than and at least rank %d; histogram %v",
					budget, p, v, below, upTo, rank, s.Histogram)
			}
		}
		if budget > 0 && (s.Histogram[0].LeNs != edge || s.Histogram[0].Count != 3) {
			t.Errorf("exact: first bucket %+v, want le %d holding 3", s.Histogram[0], edge)
		}
	}
}

// Every op a run counts ends inside its wall clock: readwhilewriting's
// writer is stopped, and its last Put finished, before the clock stops.
func TestWriterOpsInsideWallClock(t *testing.T) {
	cfg := runConfig{engine: "testslowboth", sync: "none", workload: "readwhilewriting", dist: "uniform",
		threads: 1, ops: 20, exactCap: DefaultExactCap, valueSize: 8, keys: 1, dir: t.TempDir()}
	r, err := runOne(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	put := r.Latency["put"]
	if put == nil {
		t.Fatal("the writer recorded no Put, though the readers' Gets wait for its first one to start")
	}
	if wall := int64(r.WallSeconds * 1e9); put.MaxNs > wall {
		t.Errorf("a writer Put took %d ns, longer than the whole run's wall clock %d ns: it was counted outside it", put.MaxNs, wall)
	}
}

// A -ops run reserves its exact-sample slots before the clock starts: the
// timed loop then records without allocating (no chunk to allocate, no
// fresh page to fault in, inside the wall clock). A loop of many units
// allocates no more than a loop of a few (an open loop's one timer).
func TestReservedLoopDoesNotAllocate(t *testing.T) {
	const n = 20000
	for _, wl := range []string{"fillrandom", "readrandom", "deleterandom", "updaterandom", "mixed", "fillbatch"} {
		for _, rate := range []float64{0, 1e9} {
			cfg := runConfig{engine: "null", workload: wl, dist: "uniform", threads: 1, ops: n + 20, rate: rate, valueSize: 8, keys: 1000}
			wld, _ := lookupWorkload(wl)
			stride := 1
			if wl == "fillbatch" {
				stride = 16
			}
			w := &worker{cfg: &cfg, step: wld.step, stride: stride, store: nullStoreForTest{}, quota: n + 20, live: new(liveView),
				plan: planWorker(wl, "uniform", 0, 1, 1000, n+20, 8, 1)}
			w.setRecorders(newExactBudget(DefaultExactCap, 8))
			w.reserve()
			keys := newKeyTable(1000)
			r := &run{cfg: &cfg, stopCh: make(chan struct{}), base: time.Now(), start: time.Millisecond}
			from := int64(0)
			loop := func(units int64) float64 {
				// AllocsPerRun runs the loop twice (once to warm up).
				return testing.AllocsPerRun(1, func() {
					w.loop(r, keys, from, units, 0)
					from += units
				})
			}
			few := loop(5)
			if many := loop(n / 2); many != few {
				t.Errorf("%s rate %v: %v allocations in a loop of %d units, want %v as in a loop of 5", wl, rate, many, n/2, few)
			}
		}
	}
}
