package harness

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// poolRun is one synthetic run of a -repeat group: each worker's put
// latencies, recorded the way a run records them.
func poolRun(budget *sampleBudget, workers ...[]int64) map[string][]*recorder {
	var recs []*recorder
	for _, w := range workers {
		r := newRecorder(budget)
		for _, v := range w {
			r.record(v)
		}
		recs = append(recs, r)
	}
	return map[string][]*recorder{"put": recs, "get": {newRecorder(budget)}}
}

// concatSorted is every sample of every run, sorted.
func concatSorted(runs ...[][]int64) []int64 {
	var all []int64
	for _, run := range runs {
		for _, w := range run {
			all = append(all, w...)
		}
	}
	slices.Sort(all)
	return all
}

// A -repeat 3 where the third run has a bad tail: 40 of its 1000 Puts
// took 5 ms. Alone, the runs' p99s are under 2 µs, under 2 µs and 5 ms, so
// their median is under 2 µs. Over all 3000 samples the slow 40 are 1.33%,
// inside the 1% tail: the pooled p99 is 5 ms.
func TestPooledRepeatBadTail(t *testing.T) {
	fast := func(n int) []int64 {
		s := make([]int64, n)
		for i := range s {
			s[i] = 1_000 + int64(i%1_000) // 1 µs to 2 µs
		}
		return s
	}
	runs := [][][]int64{
		{fast(500), fast(500)},
		{fast(600), fast(400)},
		{fast(480), append(fast(480), repeat(5_000_000, 40)...)},
	}
	pool := newLatencyPool(DefaultExactCap, false)
	var p99s []float64
	for _, run := range runs {
		budget := newSampleBudget(DefaultExactCap)
		recs := poolRun(budget, run...)
		s := summarize(recs["put"], false)
		p99s = append(p99s, float64(s.P99Ns))
		pool.add(recs) // after the run's clock, as summarizeRun does
	}
	got := pool.summary()
	if got.Runs != 3 {
		t.Errorf("runs = %d, want 3", got.Runs)
	}
	put := got.Latency["put"]
	if put == nil {
		t.Fatalf("no pooled put latency: %+v", got.Latency)
	}
	if _, ok := got.Latency["get"]; ok {
		t.Errorf("pooled get latency for a group that made no Gets")
	}
	all := concatSorted(runs...)
	if !put.Exact {
		t.Errorf("pooled exact = false for %d samples, within the cap", len(all))
	}
	if want := Percentile(all, 99); put.P99Ns != want {
		t.Errorf("pooled p99 = %d, want %d (Percentile over every run's samples)", put.P99Ns, want)
	}
	if want := Percentile(all, 50); put.P50Ns != want {
		t.Errorf("pooled p50 = %d, want %d", put.P50Ns, want)
	}
	if put.Count != int64(len(all)) || put.MinNs != all[0] || put.MaxNs != all[len(all)-1] {
		t.Errorf("pooled count/min/max = %d/%d/%d, want %d/%d/%d", put.Count, put.MinNs, put.MaxNs, len(all), all[0], all[len(all)-1])
	}
	slices.Sort(p99s)
	med := int64(p99s[1])
	if med == put.P99Ns {
		t.Errorf("median of per-run p99s %d equals the pooled p99: the case does not show the difference", med)
	}
	if put.P99Ns != 5_000_000 || med >= 2_000 {
		t.Errorf("pooled p99 %d, median of per-run p99s %d: want 5 ms and under 2 µs", put.P99Ns, med)
	}
}

// A group whose samples pass the cap is folded into histograms: it never
// holds more than the cap exactly, says exact: false, and its p99 is within
// the histogram's precision of the exact one.
func TestPooledFoldsPastCap(t *testing.T) {
	const exactCap = 5_000
	rng := rand.New(rand.NewPCG(1, 2))
	var runs [][][]int64
	pool := newLatencyPool(exactCap, false)
	for range 3 {
		run := [][]int64{make([]int64, 1_500), make([]int64, 1_500)}
		for _, w := range run {
			for i := range w {
				w[i] = 1_000 + int64(rng.ExpFloat64()*50_000)
			}
		}
		runs = append(runs, run)
		pool.add(poolRun(newSampleBudget(DefaultExactCap), run...))
		if pool.held > exactCap {
			t.Fatalf("pool holds %d exact samples, over its cap %d", pool.held, exactCap)
		}
		var held int64
		for _, pr := range pool.kinds {
			for _, c := range pr.samples() {
				held += int64(len(c))
			}
		}
		if held > exactCap {
			t.Fatalf("pool recorders hold %d exact samples, over the cap %d", held, exactCap)
		}
	}
	got := pool.summary()
	put := got.Latency["put"]
	if got.Runs != 3 || put == nil {
		t.Fatalf("pooled = %+v, want 3 runs of puts", got)
	}
	if put.Exact {
		t.Errorf("pooled exact = true for 9000 samples past a cap of %d", exactCap)
	}
	all := concatSorted(runs...)
	want := Percentile(all, 99)
	if d := math.Abs(float64(put.P99Ns-want)) / float64(want); d > HistPrecision {
		t.Errorf("pooled p99 = %d, exact %d: off by %.4f, more than %v", put.P99Ns, want, d, HistPrecision)
	}
	if put.Count != int64(len(all)) || put.MinNs != all[0] || put.MaxNs != all[len(all)-1] {
		t.Errorf("pooled count/min/max = %d/%d/%d, want %d/%d/%d exactly", put.Count, put.MinNs, put.MaxNs, len(all), all[0], all[len(all)-1])
	}
}

// A run that already switched to a histogram makes the pool fold too.
func TestPooledInexactRun(t *testing.T) {
	pool := newLatencyPool(DefaultExactCap, false)
	pool.add(poolRun(newSampleBudget(DefaultExactCap), repeat(1_000, 100)))
	pool.add(poolRun(newSampleBudget(10), repeat(2_000, 100))) // budget runs out
	put := pool.summary().Latency["put"]
	if put.Exact || put.Count != 200 {
		t.Errorf("pooled exact %v count %d, want false and 200", put.Exact, put.Count)
	}
}

// Through Exec: the last result of each repeat group, and only it, carries
// "pooled", over every run of its group.
func TestPooledExec(t *testing.T) {
	rs := execAs[[]BenchResult](t, "bench -engine testmap,null -workload updaterandom -ops 300 -threads 2 -repeat 3")
	if len(rs) != 6 {
		t.Fatalf("%d results, want 6", len(rs))
	}
	for i, r := range rs {
		if (r.Pooled != nil) != (i%3 == 2) {
			t.Fatalf("result %d (run %d of %s): pooled %v, want it on the last run of each group only", i, r.Run, r.Engine, r.Pooled != nil)
		}
		if r.Pooled == nil {
			continue
		}
		g := rs[i-2 : i+1]
		if r.Pooled.Runs != 3 {
			t.Errorf("%s: pooled runs = %d, want 3", r.Engine, r.Pooled.Runs)
		}
		for op, p := range r.Pooled.Latency {
			var count int64
			lo, hi := int64(math.MaxInt64), int64(0)
			p99lo, p99hi := int64(math.MaxInt64), int64(0)
			for _, x := range g {
				s := x.Latency[op]
				count += s.Count
				lo, hi = min(lo, s.MinNs), max(hi, s.MaxNs)
				p99lo, p99hi = min(p99lo, s.P99Ns), max(p99hi, s.P99Ns)
			}
			if p.Count != count || p.MinNs != lo || p.MaxNs != hi || !p.Exact {
				t.Errorf("%s %s pooled count/min/max/exact = %d/%d/%d/%v, want %d/%d/%d/true", r.Engine, op, p.Count, p.MinNs, p.MaxNs, p.Exact, count, lo, hi)
			}
			// A quantile of the pooled samples lies between the runs' own.
			if p.P99Ns < p99lo || p.P99Ns > p99hi {
				t.Errorf("%s %s pooled p99 %d outside the runs' p99s [%d, %d]", r.Engine, op, p.P99Ns, p99lo, p99hi)
			}
		}
		if len(r.Pooled.Latency) != len(r.Latency) {
			t.Errorf("%s: pooled op kinds %d, a run's %d", r.Engine, len(r.Pooled.Latency), len(r.Latency))
		}
	}
	if one := execAs[[]BenchResult](t, "bench -engine testmap,null -ops 100"); one[0].Pooled != nil || one[1].Pooled != nil {
		t.Errorf("pooled without -repeat")
	}
}
