package harness

import (
	"fmt"
	"strings"

	"kvlab/harness/calc"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// The tail at scale: -fanout K.
//
// A request that fans out to K servers (a search over K shards, a page
// built from K services) waits for the slowest of them. If one request is
// slow with probability p, a unit of K independent requests is slow with
// probability 1 − (1 − p)^K: past the single request's p99 (p = 0.01),
// 1 − 0.99^K, about 10 % of units at K = 10 and 63 % at K = 100. With
// -fanout K each unit of the workload is K requests issued at once, on K
// goroutines, and it ends when the last returns: a Put writes K keys (the
// unit's key, and K−1 keys made from it by a suffix byte, so that the K
// writes do not queue on one row's lock), a Get reads the unit's key K
// times. The run's latency is the units'; the result's "fanout" object
// adds the single requests' distribution, measured in the same run, and
// the fraction of units slower than the single-request p99 beside the
// prediction 1 − 0.99^K. The two differ where the K requests are not
// independent: they share the store's lock, its group commit and this
// machine's cores, so a slow moment slows all K at once.
//
// The fan-out's goroutines and the keys' suffixes are made inside the
// timed region (a fan-out has to start its requests somewhere); they cost
// about a microsecond a unit, which the K = 1 line of a comparison shows.

// fanoutWorkloads are the workloads -fanout applies to: one Put or one
// Get per unit.
var fanoutWorkloads = []string{"fillseq", "fillrandom", "readrandom"}

// maxFanout bounds -fanout.
const maxFanout = 64

// maxFanoutSamples bounds the single-request latencies a run keeps; past
// it the report says how many it left out.
const maxFanoutSamples = 1 << 22

// FanoutReport is the "fanout" object of a bench result.
type FanoutReport struct {
	K        int   `json:"k"`
	Requests int64 `json:"requests"` // single requests timed (K per unit)
	// RequestsPerSec is Requests over the run's wall clock: the store's
	// load, K times the units'.
	RequestsPerSec float64 `json:"requests_per_sec"`
	SingleP50Ns    int64   `json:"single_p50_ns"`
	SingleP95Ns    int64   `json:"single_p95_ns"`
	SingleP99Ns    int64   `json:"single_p99_ns"`
	// PastSingleP99 is the fraction of units slower than SingleP99;
	// Predicted is 1 − 0.99^K, what it would be if the K requests of a
	// unit were independent draws from the single-request distribution.
	PastSingleP99 float64 `json:"past_single_p99"`
	Predicted     float64 `json:"predicted"`
	Units         int64   `json:"units"`
	// Dropped counts single requests past the sample cap (kept out of the
	// percentiles); 0 almost always.
	Dropped int64 `json:"dropped,omitempty"`

	// With -hedge pP (hedge.go): Hedge is "p95" and the rest say what the
	// hedges did. HedgeThresholdNs is the running estimate of the single
	// request's pP when the run ended; Hedges the second requests sent,
	// HedgeExtraPct them per hundred first requests (the load hedging
	// adds); HedgeWins the hedges that answered before their first
	// request. UnitP99Ns is the units' p99 as the run measured it, with
	// the hedges; UnhedgedUnitP99Ns the p99 the same units would have had
	// without them: each unit's slowest first request, timed to its own
	// end (a lower bound of sorts: without the hedges' load those first
	// requests might have been a little faster).
	Hedge             string  `json:"hedge,omitempty"`
	HedgeThresholdNs  int64   `json:"hedge_threshold_ns,omitempty"`
	Hedges            int64   `json:"hedges,omitempty"`
	HedgeExtraPct     float64 `json:"hedge_extra_pct,omitempty"`
	HedgeWins         int64   `json:"hedge_wins,omitempty"`
	UnitP99Ns         int64   `json:"unit_p99_ns,omitempty"`
	UnhedgedUnitP99Ns int64   `json:"unhedged_unit_p99_ns,omitempty"`
}

// fanoutStore issues every Put and Get of its caller as k concurrent
// requests to inner and returns when the last has. It is safe for
// concurrent use.
type fanoutStore struct {
	inner Store
	k     int

	// The timed region's samples: single requests and units, written
	// through atomic indexes into slices sized before the clock starts.
	single, units []int64
	nSingle       atomic.Int64
	nUnits        atomic.Int64
	recording     atomic.Bool

	// hedge is -hedge's percentile (0: none) and its state (hedge.go).
	hedge *hedger
}

// newFanout wraps inner; expect is about how many units the run will time
// (its -ops), for sizing the sample slices.
// With hedge > 0 (-hedge pP) each request is hedged at the running pP.
func newFanout(inner Store, k int, expect int64, hedge float64) Store {
	f := &fanoutStore{inner: inner, k: k}
	units := min(max(expect, 1<<12), maxFanoutSamples/int64(k))
	f.units = make([]int64, units)
	f.single = make([]int64, units*int64(k))
	if hedge > 0 {
		f.hedge = newHedger(hedge, units)
	}
	if sr, ok := inner.(StatsReporter); ok {
		return &fanoutStatsStore{f, sr}
	}
	return f
}

// fanoutStatsStore is a fanoutStore whose inner store counts its syncs.
type fanoutStatsStore struct {
	*fanoutStore
	sr StatsReporter
}

func (f *fanoutStatsStore) StoreStats() StoreStats { return f.sr.StoreStats() }

// fanoutOf returns the fanoutStore of s, if s is one.
func fanoutOf(s Store) (*fanoutStore, bool) {
	switch f := s.(type) {
	case *fanoutStore:
		return f, true
	case *fanoutStatsStore:
		return f.fanoutStore, true
	}
	return nil, false
}

// record starts (on) or stops keeping samples: the runner turns it on
// just before the timed region, after the warmup.
func (f *fanoutStore) record(on bool) {
	if !on && f.hedge != nil {
		// The first requests that lost to their hedges are still
		// running; their full latencies are part of the run's.
		f.hedge.losers.Wait()
	}
	if on {
		f.nSingle.Store(0)
		f.nUnits.Store(0)
		if f.hedge != nil {
			f.hedge.reset()
		}
	}
	f.recording.Store(on)
}

func (f *fanoutStore) keep(into []int64, n *atomic.Int64, d time.Duration) {
	if !f.recording.Load() {
		return
	}
	if i := n.Add(1) - 1; i < int64(len(into)) {
		into[i] = d.Nanoseconds()
	}
}

// fan runs req(0) .. req(k-1) at once and returns the first error.
func (f *fanoutStore) fan(req func(i int) error) error {
	if f.hedge != nil {
		return f.fanHedged(req)
	}
	start := time.Now()
	errs := make([]error, f.k)
	var wg sync.WaitGroup
	for i := 1; i < f.k; i++ {
		wg.Go(func() {
			t := time.Now()
			errs[i] = req(i)
			f.keep(f.single, &f.nSingle, time.Since(t))
		})
	}
	t := time.Now()
	errs[0] = req(0)
	f.keep(f.single, &f.nSingle, time.Since(t))
	wg.Wait()
	f.keep(f.units, &f.nUnits, time.Since(start))
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// Put writes value under key and k−1 keys made from it.
func (f *fanoutStore) Put(key, value []byte) error {
	return f.fan(func(i int) error {
		if i == 0 {
			return f.inner.Put(key, value)
		}
		k := append(append(make([]byte, 0, len(key)+1), key...), byte(i))
		return f.inner.Put(k, value)
	})
}

// Get reads key k times and returns the first read's answer.
func (f *fanoutStore) Get(key []byte) ([]byte, bool, error) {
	var value []byte
	var found bool
	err := f.fan(func(i int) error {
		v, ok, err := f.inner.Get(key)
		if i == 0 {
			value, found = v, ok
		}
		return err
	})
	return value, found, err
}

// Delete removes key (once: deleterandom does not fan out).
func (f *fanoutStore) Delete(key []byte) error { return f.inner.Delete(key) }

// Close waits for the hedges' losers still running, then closes the
// inner store.
func (f *fanoutStore) Close() error {
	if f.hedge != nil {
		f.hedge.losers.Wait()
	}
	return f.inner.Close()
}

// report summarizes the timed region's samples.
func (f *fanoutStore) report(wall time.Duration) *FanoutReport {
	if f.hedge != nil {
		f.hedge.losers.Wait() // no request writes a sample from here on
	}
	r := &FanoutReport{K: f.k, Predicted: 1 - math.Pow(0.99, float64(f.k))}
	ns, nu := f.nSingle.Load(), f.nUnits.Load()
	r.Requests, r.Units = ns, nu
	if wall > 0 {
		r.RequestsPerSec = float64(ns) / wall.Seconds()
	}
	single := slices.Clone(f.single[:min(ns, int64(len(f.single)))])
	units := f.units[:min(nu, int64(len(f.units)))]
	r.Dropped = ns - int64(len(single)) + nu - int64(len(units))
	if len(single) == 0 || len(units) == 0 {
		return r
	}
	slices.Sort(single)
	r.SingleP50Ns = Percentile(single, 50)
	r.SingleP95Ns = Percentile(single, 95)
	r.SingleP99Ns = Percentile(single, 99)
	past := 0
	for _, u := range units {
		if u > r.SingleP99Ns {
			past++
		}
	}
	r.PastSingleP99 = float64(past) / float64(len(units))
	if f.hedge != nil {
		f.hedge.report(r, units)
	}
	return r
}

// fanoutLine is the table's line of a -fanout run, or "".
func fanoutLine(r *BenchResult) string {
	f := r.Fanout
	if f == nil {
		return ""
	}
	line := fmt.Sprintf("fan-out %d: %.1f%% of units slower than one request's p99 (%s); independent requests predict 1 − 0.99^%d = %.1f%%; %d requests, %.0f/s",
		f.K, 100*f.PastSingleP99, calc.FormatNs(float64(f.SingleP99Ns)), f.K, 100*f.Predicted, f.Requests, f.RequestsPerSec)
	if f.Hedge != "" {
		line += fmt.Sprintf("\nhedge at %s (running estimate %s): unit p99 %s, without the hedges %s; %d hedges, +%.1f%% requests, %d answered first",
			f.Hedge, calc.FormatNs(float64(f.HedgeThresholdNs)), calc.FormatNs(float64(f.UnitP99Ns)), calc.FormatNs(float64(f.UnhedgedUnitP99Ns)),
			f.Hedges, f.HedgeExtraPct, f.HedgeWins)
	}
	return line
}

// fanoutFlag is -fanout K, bench's and sweep's.
func fanoutFlag() flagDef {
	return flagDef{name: "fanout", usage: "the tail at scale: each unit is K requests at once, done when the slowest is (" + strings.Join(fanoutWorkloads, ", ") + "; default 1: none)",
		fill: func(s *Spec, a arg, _ Limits) error {
			n, err := a.int(1, 1, maxFanout)
			s.Fanout = int(n)
			if err != nil || n == 1 {
				return err
			}
			if !slices.Contains(fanoutWorkloads, s.Workload) {
				return fmt.Errorf("-fanout %d: applies to -workload %s only (one Put or Get per unit), not %s", n, strings.Join(fanoutWorkloads, ", "), s.Workload)
			}
			if s.Pipeline > 1 {
				return fmt.Errorf("-fanout %d: cannot be combined with -pipeline %d (a fan-out's requests go out on their own connections at once)", n, s.Pipeline)
			}
			return nil
		},
		show: func(s *Spec, _ runOf) (string, bool) { return itoa(s.Fanout), s.Fanout > 1 }}
}
