package script

import (
	"context"
	"errors"
	"fmt"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// Config is one run of a script on one store.
type Config struct {
	// The ctx fields: items, users, batch, valuebytes, ops, seed,
	// threads (thread is each worker's number, from 0).
	Items, Users, Batch, ValueBytes int
	Ops                             int64         // units to measure; 0 with Duration
	Duration                        time.Duration // instead of Ops
	Seed                            int64
	Threads                         int
	// SweepValue, with the program's Sweep, is the value of its param
	// for this run.
	SweepValue int64
	Limits     Limits
	// Progress, when not nil, is called about once a second, while the
	// store is seeded and while it is measured.
	Progress func(Progress)
}

// Progress is one progress event.
type Progress struct {
	Phase   string        // "load" or "run"
	Elapsed time.Duration // since the phase began
	Units   int64         // run calls completed (0 while loading)
	Ops     int64         // primitive ops so far in the phase
	Rate    float64       // units per second over the last interval (ops per second while loading)
}

// Second is one second of a run's timeline.
type Second struct {
	Second int   `json:"second"` // 1 for the first
	Units  int64 `json:"units"`
	Ops    int64 `json:"ops"`
}

// OpStats is the latency of one kind of operation, one sample per engine
// call (an mget of 16 keys is one sample), in nanoseconds.
type OpStats struct {
	Calls int64 `json:"calls"`
	Ops   int64 `json:"ops"` // primitive ops: calls, or keys for mget, mput and mdel
	P50   int64 `json:"p50_ns"`
	P99   int64 `json:"p99_ns"`
	P999  int64 `json:"p999_ns"`
	Max   int64 `json:"max_ns"`
}

// Result is what one run measured.
type Result struct {
	Units     int64              `json:"units"` // run calls completed
	Ops       int64              `json:"ops"`   // primitive ops in them
	Elapsed   time.Duration      `json:"-"`
	Seconds   float64            `json:"elapsed_seconds"`
	WUPerSec  float64            `json:"wu_per_sec"`
	OpsPerSec float64            `json:"ops_per_sec"`
	ByOp      map[string]OpStats `json:"by_op"`
	GetHits   int64              `json:"get_hits"`
	GetMisses int64              `json:"get_misses"`
	// HitRate is GetHits over the keys looked up (get and mget); 0 when
	// none was.
	HitRate float64 `json:"hit_rate"`
	// Timeline is the measured phase second by second: units and ops
	// completed in each whole second.
	Timeline    []Second `json:"timeline,omitempty"`
	LoadOps     int64    `json:"load_ops"`
	LoadSeconds float64  `json:"load_seconds"`
	Cancelled   bool     `json:"cancelled,omitempty"`
}

// Run runs p on store as cfg says: every worker's load at once, then run
// until the budget is spent. A script error stops the run and is
// returned with the script's file and line; a cancelled ctx returns what
// was measured, marked Cancelled.
func Run(ctx context.Context, p *Program, store Store, cfg Config) (*Result, error) {
	lim := cfg.Limits.defaults()
	threads := max(cfg.Threads, 1)
	fields := map[string]int64{
		"items": int64(cfg.Items), "users": int64(cfg.Users), "batch": int64(cfg.Batch),
		"valuebytes": int64(cfg.ValueBytes), "ops": cfg.Ops, "seed": cfg.Seed, "threads": int64(threads),
	}
	if p.Sweep != nil {
		fields[p.Sweep.Param] = cfg.SweepValue
	}
	if !p.uses("range") && !p.uses("scan") {
		// fine on any store
	} else if OpsOf(store).Range == nil {
		return nil, fmt.Errorf("script %s uses kv.range or kv.scan, and this store cannot read keys in order", p.File)
	}
	workers := make([]*worker, 0, threads)
	defer func() {
		for _, w := range workers {
			w.L.Close()
		}
	}()
	written := new(atomic.Int64)
	for i := range threads {
		w, err := newWorker(p, i, store, lim, cfg.Seed, fields, written)
		if err != nil {
			return nil, err
		}
		workers = append(workers, w)
	}

	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	for _, w := range workers {
		w.L.SetContext(haltCtx{runCtx, runCtx.Done()})
	}
	stopWatch := watchdog(runCtx, cancel, workers, lim)
	defer stopWatch()

	res := &Result{}
	// Seed: every worker's load at once.
	if p.hasLoad {
		start := time.Now()
		stop := progress(cfg.Progress, "load", start, workers, nil, nil)
		err := each(workers, func(w *worker) error {
			if err := w.call(w.load); err != nil {
				return fmt.Errorf("script %s: load (thread %d): %w", p.File, w.id, callErr(runCtx, err))
			}
			return nil
		})
		stop()
		if err != nil {
			return nil, err
		}
		for _, w := range workers {
			res.LoadOps += w.ops.Load()
			w.ops.Store(0)
		}
		res.LoadSeconds = time.Since(start).Seconds()
	}

	// Measure.
	var units atomic.Int64
	var done atomic.Bool
	if cfg.Duration > 0 {
		t := time.AfterFunc(cfg.Duration, func() { done.Store(true) })
		defer t.Stop()
	}
	start := time.Now()
	stop := progress(cfg.Progress, "run", start, workers, &units, &res.Timeline)
	err := each(workers, func(w *worker) error {
		w.measuring = true
		defer func() { w.measuring = false }()
		for !done.Load() {
			if cfg.Ops > 0 && units.Add(1) > cfg.Ops {
				units.Add(-1)
				return nil
			}
			if err := w.call(w.run); err != nil {
				if cfg.Ops > 0 {
					units.Add(-1)
				}
				return fmt.Errorf("script %s: run (thread %d): %w", p.File, w.id, callErr(runCtx, err))
			}
			if cfg.Ops == 0 {
				units.Add(1)
			}
		}
		return nil
	})
	res.Elapsed = time.Since(start)
	stop()
	if err != nil {
		if ctx.Err() == nil {
			return nil, err
		}
		res.Cancelled = true
	}
	res.Units = units.Load()
	merged := [numOps]*hdr.Histogram{}
	res.ByOp = map[string]OpStats{}
	for i := range numOps {
		merged[i] = hdr.New(1, maxLatency, 3)
		var prim int64
		for _, w := range workers {
			merged[i].Merge(w.hist[i])
			prim += w.prim[i]
		}
		h := merged[i]
		if h.TotalCount() == 0 {
			continue
		}
		res.ByOp[OpNames[i]] = OpStats{Calls: h.TotalCount(), Ops: prim,
			P50: h.ValueAtQuantile(50), P99: h.ValueAtQuantile(99), P999: h.ValueAtQuantile(99.9), Max: h.Max()}
		res.Ops += prim
	}
	for _, w := range workers {
		res.GetHits += w.hits
		res.GetMisses += w.misses
	}
	if n := res.GetHits + res.GetMisses; n > 0 {
		res.HitRate = float64(res.GetHits) / float64(n)
	}
	res.Seconds = res.Elapsed.Seconds()
	if res.Seconds > 0 {
		res.WUPerSec = float64(res.Units) / res.Seconds
		res.OpsPerSec = float64(res.Ops) / res.Seconds
	}
	return res, nil
}

func (p *Program) uses(op string) bool { return contains(p.Uses, op) }

// haltCtx is the context a Lua state runs under: ctx, with its Done
// channel read once. gopher-lua checks Done before every instruction it
// runs; a cancelCtx's Done loads an atomic value each time, this one
// returns a field.
type haltCtx struct {
	context.Context
	done <-chan struct{}
}

func (c haltCtx) Done() <-chan struct{} { return c.done }

// each runs fn on every worker in its own goroutine and returns the first
// error.
func each(workers []*worker, fn func(*worker) error) error {
	var wg sync.WaitGroup
	errs := make([]error, len(workers))
	for i, w := range workers {
		wg.Go(func() { errs[i] = fn(w) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// callErr words the error of a call: the watchdog's reason when it
// stopped the run, else the script's message with its line.
func callErr(ctx context.Context, err error) error {
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
		return cause
	}
	return luaErr(err)
}

// Errors the watchdog stops a run with.
var (
	ErrCallTime = errors.New("script call ran too long")
	ErrHeap     = errors.New("script used too much memory")
	// ErrBytes: the run's puts would write more than Limits.Bytes.
	ErrBytes = errors.New("script wrote too much")
)

// watchdog checks, every 20ms, that no call has run longer than
// lim.Call and that the heap has not grown by more than lim.Heap since
// the run started, and cancels the run with the reason if either
// happened. It returns the function that stops it.
func watchdog(ctx context.Context, cancel context.CancelCauseFunc, workers []*worker, lim Limits) func() {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	heap := func() int64 {
		metrics.Read(sample)
		if sample[0].Value.Kind() != metrics.KindUint64 {
			return 0
		}
		return int64(sample[0].Value.Uint64())
	}
	base := heap()
	quit := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		// seen[i] is worker i's call count when the watchdog last saw
		// it change, at since[i], when its time in the store was
		// engine[i]: a count that stays odd while the script's own time
		// (the time since, less the store's) grows past lim.Call is one
		// call running that long.
		seen := make([]uint64, len(workers))
		since := make([]time.Time, len(workers))
		engine := make([]int64, len(workers))
		for i := range since {
			since[i] = time.Now()
		}
		for {
			select {
			case <-quit:
				return
			case <-ctx.Done():
				return
			case now := <-t.C:
				for i, w := range workers {
					c := w.calls.Load()
					if c != seen[i] {
						seen[i], since[i], engine[i] = c, now, w.engineNs.Load()
						continue
					}
					own := now.Sub(since[i]) - time.Duration(w.engineNs.Load()-engine[i])
					if c%2 == 1 && own > lim.Call {
						cancel(fmt.Errorf("%w: one call ran longer than %v outside the store (thread %d); a call must return: loop a bounded number of times", ErrCallTime, lim.Call, w.id))
						return
					}
				}
				if h := heap(); h-base > lim.Heap {
					cancel(fmt.Errorf("%w: the heap grew by %d MiB, the limit is %d MiB", ErrHeap, (h-base)>>20, lim.Heap>>20))
					return
				}
			}
		}
	})
	return func() { close(quit); wg.Wait() }
}

// progress calls show (when not nil) about once a second with the phase's
// counts, and appends each second to timeline (when not nil), until the
// function it returns is called.
func progress(show func(Progress), phase string, start time.Time, workers []*worker, units *atomic.Int64, timeline *[]Second) func() {
	if show == nil && timeline == nil {
		return func() {}
	}
	quit := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		var lastN, lastOps int64
		last := start
		for {
			select {
			case <-quit:
				return
			case now := <-t.C:
				var ops int64
				for _, w := range workers {
					ops += w.ops.Load()
				}
				p := Progress{Phase: phase, Elapsed: now.Sub(start), Ops: ops}
				n := ops
				if units != nil {
					p.Units = units.Load()
					n = p.Units
				}
				p.Rate = float64(n-lastN) / now.Sub(last).Seconds()
				if timeline != nil {
					*timeline = append(*timeline, Second{Second: len(*timeline) + 1, Units: p.Units - lastN, Ops: ops - lastOps})
				}
				lastN, lastOps, last = n, ops, now
				if show != nil {
					show(p)
				}
			}
		}
	})
	return func() { close(quit); wg.Wait() }
}
