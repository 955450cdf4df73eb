package harness

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Hedged requests: -hedge pP with -fanout K.
//
// A unit of K requests waits for its slowest, so one slow server makes
// the whole unit slow. A hedge sends the same request a second time when
// the first has taken longer than the single request's pP (p95 by
// Dean and Barroso's "The Tail at Scale"), and takes whichever answers
// first: the tail shrinks, at the price of about (100 − P) % more
// requests. A hedged Put writes the same value to the same key twice,
// which is harmless; a hedged Get reads twice.
//
// The threshold is a running estimate: the pP of the last hedgeWindow
// first requests (warmup included), recomputed every hedgeEvery of them;
// nothing is hedged before hedgeMinObs have ended, so a run whose warmup
// has fewer starts unhedged. Only first requests feed it, each with its
// own full latency (a first request that lost to its hedge still runs to
// its end, in the background, and is timed), so the estimate is the
// single request's distribution, not the hedged one. The same full
// latencies give the counterfactual the report sets beside the measured
// tail: each unit's slowest first request, the unit as it would have
// been without hedges.

// The running estimate's window, recompute interval and minimum.
const (
	hedgeWindow = 1000
	hedgeEvery  = 100
	hedgeMinObs = 100
)

// hedger is a fan-out's hedging state. It is safe for concurrent use.
type hedger struct {
	p         float64      // -hedge's percentile
	threshold atomic.Int64 // ns; 0 until hedgeMinObs first requests ended

	mu   sync.Mutex // guards ring and seen
	ring []int64    // the last hedgeWindow first requests' latencies
	seen int        // first requests observed

	hedges, wins atomic.Int64 // in the timed region
	// unhedged holds each timed unit's slowest first request.
	unhedged  []int64
	nUnhedged atomic.Int64
	// losers counts the requests still running, first or hedge, whose
	// unit may have returned already; Close and report wait for them.
	losers sync.WaitGroup
}

func newHedger(p float64, units int64) *hedger {
	return &hedger{p: p, ring: make([]int64, 0, hedgeWindow), unhedged: make([]int64, units)}
}

// observe adds a first request's latency to the running estimate.
func (h *hedger) observe(d time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.ring) < hedgeWindow {
		h.ring = append(h.ring, d.Nanoseconds())
	} else {
		h.ring[h.seen%hedgeWindow] = d.Nanoseconds()
	}
	h.seen++
	if h.seen >= hedgeMinObs && h.seen%hedgeEvery == 0 {
		w := slices.Clone(h.ring)
		slices.Sort(w)
		h.threshold.Store(Percentile(w, h.p))
	}
}

// hedgeUnit is one unit's first requests, for the counterfactual.
type hedgeUnit struct {
	start   time.Time
	timed   bool         // the unit began in the timed region: its samples count
	pending atomic.Int32 // first requests not yet ended
	slowest atomic.Int64 // ns from start to the latest end so far
}

// firstDone records that a first request of u ended d after u started.
func (f *fanoutStore) firstDone(u *hedgeUnit, d time.Duration) {
	for {
		old := u.slowest.Load()
		if d.Nanoseconds() <= old || u.slowest.CompareAndSwap(old, d.Nanoseconds()) {
			break
		}
	}
	if u.pending.Add(-1) == 0 && u.timed {
		keepAt(f.hedge.unhedged, &f.hedge.nUnhedged, time.Duration(u.slowest.Load()))
	}
}

// fanHedged is fan with every request hedged.
func (f *fanoutStore) fanHedged(req func(i int) error) error {
	u := &hedgeUnit{start: time.Now(), timed: f.recording.Load()}
	u.pending.Store(int32(f.k))
	errs := make([]error, f.k)
	var wg sync.WaitGroup
	for i := 1; i < f.k; i++ {
		wg.Go(func() { errs[i] = f.hedged(u, func() error { return req(i) }) })
	}
	errs[0] = f.hedged(u, func() error { return req(0) })
	wg.Wait()
	f.keep(f.units, &f.nUnits, time.Since(u.start))
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// hedged sends req, and sends it again if the first has not answered
// within the running threshold; it returns the first answer.
func (f *fanoutStore) hedged(u *hedgeUnit, req func() error) error {
	h := f.hedge
	first := make(chan error, 1)
	t := time.Now()
	h.losers.Add(1)
	go func() {
		defer h.losers.Done()
		err := req()
		d := time.Since(t)
		h.observe(d)
		if u.timed {
			keepAt(f.single, &f.nSingle, d)
		}
		f.firstDone(u, time.Since(u.start))
		first <- err
	}()
	thr := time.Duration(h.threshold.Load())
	if thr <= 0 {
		return <-first
	}
	timer := time.NewTimer(thr)
	select {
	case err := <-first:
		timer.Stop()
		return err
	case <-timer.C:
	}
	if u.timed {
		h.hedges.Add(1)
	}
	second := make(chan error, 1)
	h.losers.Add(1)
	go func() {
		defer h.losers.Done()
		second <- req()
	}()
	select {
	case err := <-first:
		return err
	case err := <-second:
		if u.timed {
			h.wins.Add(1)
		}
		return err
	}
}

// keepAt stores d at the next index of into, when there is room. Unlike
// fanoutStore.keep it does not look at the recording flag: a unit's
// requests may end after the timed region did, and count when it began
// inside it.
func keepAt(into []int64, n *atomic.Int64, d time.Duration) {
	if i := n.Add(1) - 1; i < int64(len(into)) {
		into[i] = d.Nanoseconds()
	}
}

// reset starts the timed region's counts.
func (h *hedger) reset() {
	h.hedges.Store(0)
	h.wins.Store(0)
	h.nUnhedged.Store(0)
}

// report adds the hedges' figures to r; units are the timed units'
// latencies.
func (h *hedger) report(r *FanoutReport, units []int64) {
	r.Hedge = "p" + strconv.FormatFloat(h.p, 'f', -1, 64)
	r.HedgeThresholdNs = h.threshold.Load()
	r.Hedges, r.HedgeWins = h.hedges.Load(), h.wins.Load()
	if r.Requests > 0 {
		r.HedgeExtraPct = 100 * float64(r.Hedges) / float64(r.Requests)
	}
	sorted := slices.Clone(units)
	slices.Sort(sorted)
	r.UnitP99Ns = Percentile(sorted, 99)
	un := slices.Clone(h.unhedged[:min(h.nUnhedged.Load(), int64(len(h.unhedged)))])
	slices.Sort(un)
	r.UnhedgedUnitP99Ns = Percentile(un, 99)
}

// hedgeFlag is -hedge pP, bench's and sweep's; it comes after -fanout.
func hedgeFlag() flagDef {
	return flagDef{name: "hedge", usage: "with -fanout: send a request again when it has taken longer than the single request's pP (a running estimate), e.g. p95; the result reports the tail saved and the requests added",
		fill: func(s *Spec, a arg, _ Limits) error {
			if !a.given {
				return nil
			}
			p, err := strconv.ParseFloat(strings.TrimPrefix(a.v, "p"), 64)
			if !strings.HasPrefix(a.v, "p") || err != nil || p < 50 || p > 99.9 {
				return fmt.Errorf("-hedge %s: allowed: pP, P a percentile between 50 and 99.9 (e.g. p95)", a.v)
			}
			if !slices.Contains(fanoutWorkloads, s.Workload) {
				return fmt.Errorf("-hedge %s: applies to -workload %s only (one Put or Get per unit), not %s", a.v, strings.Join(fanoutWorkloads, ", "), s.Workload)
			}
			if s.Pipeline > 1 {
				return fmt.Errorf("-hedge %s: cannot be combined with -pipeline %d", a.v, s.Pipeline)
			}
			s.Hedge = p
			return nil
		},
		show: func(s *Spec, _ runOf) (string, bool) {
			return "p" + strconv.FormatFloat(s.Hedge, 'f', -1, 64), s.Hedge > 0
		}}
}
