package harness

import "math"

// Pooling the latencies of a -repeat group.
//
// A percentile cannot be averaged, and the median of the runs' p99s is not
// the p99 of all their samples together: one run with a bad tail moves the
// pooled p99 and leaves the median where it was. So the runs of one
// engine and thread count keep their latencies in a latencyPool, and the
// last run of the group carries the summary of all of them ("pooled").
//
// The pool keeps every run's exact samples while the group's total fits
// within its cap (DefaultExactCap): then the pooled percentiles are exact.
// When a finished run would take the group past the cap, or a run already
// switched to a histogram, the pool folds everything it holds into one
// HdrHistogram per op kind, before the next run starts, and goes on that
// way: the pooled summary then says "exact": false, and its percentiles are
// within HistPrecision. It never holds more than the cap in exact samples.
// Count, mean, min and max stay exact. All of this happens after each run's
// clock has stopped (summarizeRun).

// Pooled is the latency of every measured sample of a -repeat group's runs
// taken together: the JSON object under "pooled", on the group's last
// result only.
type Pooled struct {
	Runs    int                        `json:"runs"`    // how many runs' samples are pooled
	Latency map[string]*LatencySummary `json:"latency"` // by op kind, as "latency" of one run
}

// latencyPool gathers one -repeat group's latencies, run by run. Not safe
// for concurrent use: benchLine runs a group's runs one after another.
// Invariant: held <= cap while the pool is not folded; 0 once it is.
type latencyPool struct {
	cap      int64 // exact samples it may hold, across op kinds
	unsorted bool  // the -dishonest-unsorted-percentile rule break, as in summarize
	runs     int
	held     int64 // exact samples held
	folded   bool  // the pool is histograms from now on
	kinds    map[string]*recorder
}

func newLatencyPool(exactCap int64, unsorted bool) *latencyPool {
	return &latencyPool{cap: exactCap, unsorted: unsorted, kinds: map[string]*recorder{}}
}

// add takes one finished run's recorders, by op kind.
func (p *latencyPool) add(run map[string][]*recorder) {
	p.runs++
	var n int64
	exact := true
	for _, recs := range run {
		for _, r := range recs {
			for _, c := range r.samples() {
				n += int64(len(c))
			}
			if r.hist != nil {
				exact = false
			}
		}
	}
	if !p.folded && (!exact || p.held+n > p.cap) {
		p.fold()
	}
	for kind, recs := range run {
		pr := p.kinds[kind]
		if pr == nil {
			pr = &recorder{min: math.MaxInt64}
			if p.folded {
				pr.hist = newHist()
			}
			p.kinds[kind] = pr
		}
		for _, r := range recs {
			if r.count == 0 {
				continue
			}
			pr.count += r.count
			pr.sum += r.sum
			pr.max = max(pr.max, r.max)
			pr.min = min(pr.min, r.min)
			for _, c := range r.samples() {
				switch {
				case len(c) == 0:
				case p.folded:
					for _, v := range c {
						pr.hist.RecordValue(min(v, histMax))
					}
				case cap(c) > 2*len(c):
					// A chunk mostly unused: keep only what it holds.
					pr.full = append(pr.full, append([]int64(nil), c...))
				default:
					pr.full = append(pr.full, c)
				}
			}
			if r.hist != nil {
				pr.hist.Merge(r.hist)
			}
		}
	}
	if !p.folded {
		p.held += n
	}
}

// fold moves every exact sample the pool holds into one histogram per op
// kind, and the pool stays histograms from then on.
func (p *latencyPool) fold() {
	for _, pr := range p.kinds {
		h := newHist()
		for _, c := range pr.full {
			for _, v := range c {
				h.RecordValue(min(v, histMax))
			}
		}
		pr.full, pr.cur, pr.hist = nil, nil, h
	}
	p.folded, p.held = true, 0
}

// summary is the pooled latency of every run added so far.
func (p *latencyPool) summary() *Pooled {
	out := &Pooled{Runs: p.runs, Latency: map[string]*LatencySummary{}}
	for kind, pr := range p.kinds {
		if pr.count == 0 {
			continue
		}
		s := summarize([]*recorder{pr}, p.unsorted)
		out.Latency[kind] = &s
	}
	return out
}
