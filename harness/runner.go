package harness

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// The runner: one bench run of one store with one thread count.
//
// The order of events is the measuring discipline:
//
//  1. open the store in a fresh directory;
//  2. build every key, the order each worker visits them and the values it
//     writes (workload.go) — no clock is running yet;
//  3. preload the store if the workload reads, overwrites or deletes
//     (written without per-key syncs, then reopened with the policy);
//  4. warm up: each worker runs its share of -warmup units, closed loop even
//     in a -rate run, recorded into recorders that are then thrown away;
//  5. in a -ops run, reserve (and touch) every exact-sample slot the run
//     will fill, so no chunk is allocated inside the wall clock;
//  6. read the store's fsync counters, start the one outer wall clock,
//     release every worker at once;
//  7. each worker times each op with the monotonic clock and records it;
//     in a -rate run, unit k of the run's one stream is due at start +
//     k/rate, dealt round-robin to the threads, and its latency counts
//     from then;
//  8. stop the clock when the last worker (and readwhilewriting's writer)
//     finishes; read the counters. A -duration run stops at its deadline:
//     an open loop starts no unit due after it, and counts the units due
//     before it that the store was too slow to start (backlog_units).
//
// Throughput is ops divided by that one wall clock. A progress goroutine
// looks at the workers about once a second to build the timeline and the
// live p50/p99 without slowing them: each worker publishes its op count and
// its most recent latencies through atomics only.

// runConfig is one run, fully decided: one engine, one thread count.
type runConfig struct {
	engine    string
	sync      string
	workload  string
	dist      string
	threads   int
	ops       int64         // units to do in total; 0 with a duration
	duration  time.Duration // 0 with ops
	maxUnits  int64         // hard cap on units (limits), for -duration runs
	exactCap  int64         // samples kept exactly; DefaultExactCap
	valueSize int
	keys      int
	warmup    int64
	rate      float64 // units per second in total; 0 = closed loop
	seed      int64
	dishonest dishonesty
	dir       string // the fresh directory the store lives in
	tick      time.Duration
	progress  func(Progress)
	// pool, in a -repeat group, takes the run's latencies once its clock
	// has stopped (pool.go); nil otherwise.
	pool *latencyPool
}

// dishonesty is the set of timing rules a run deliberately breaks, for the
// lessons that show what each one does. Never set by default.
type dishonesty struct {
	throughputFromSamples bool // ops / sum of latencies instead of ops / wall clock
	noWarmup              bool // measure from the first op
	timeKeygen            bool // build each key and value inside the timed region
	unsortedPercentile    bool // pick percentiles from unsorted samples
}

// rules lists the broken rules by name, for the "dishonest" JSON field.
func (d dishonesty) rules() []string {
	var r []string
	if d.throughputFromSamples {
		r = append(r, "throughput-from-samples")
	}
	if d.noWarmup {
		r = append(r, "no-warmup")
	}
	if d.timeKeygen {
		r = append(r, "time-keygen")
	}
	if d.unsortedPercentile {
		r = append(r, "unsorted-percentile")
	}
	return r
}

// spinBelow is the wait under which an open-loop worker yields in a loop
// instead of sleeping on a timer.
const spinBelow = 100 * time.Microsecond

// ringLen is how many recent latencies each worker publishes for the live
// progress p50/p99.
const ringLen = 1024

// liveView is what a worker publishes for the progress goroutine. The
// worker is the only writer; everything is atomic so the reader needs no
// lock and the worker never waits.
type liveView struct {
	done atomic.Int64          // ops completed
	ring [ringLen]atomic.Int64 // latency of op i at ring[i%ringLen]
}

// worker is one goroutine's share of a run. Not safe for concurrent use,
// except live, which the progress goroutine reads.
type worker struct {
	id    int
	plan  workerPlan
	quota int64 // units to do; math.MaxInt64 in a -duration run
	cfg   *runConfig
	store Store

	// Recorders by op kind; in a -rate run unc* hold the uncorrected
	// latencies (from the actual start, not the intended one).
	put, get, del, scan     *recorder
	uput, uget, udel, uscan *recorder
	scanner                 Scanner                      // the store, for seekrandom; nil otherwise
	visit                   func(key, value []byte) bool // Scan's callback, made once outside the timed loop

	base       time.Time // the run's clock origin (run.base), set by loop
	warming    bool      // running the warmup: closed loop, results discarded
	units, ops int64
	backlog    int64 // open loop: units due before the deadline, never started
	gets, hits int64
	err        error
	live       *liveView
}

// run holds what the workers share.
type run struct {
	cfg *runConfig
	// base is the origin of the workers' clock: they read it as
	// time.Since(base), a monotonic reading in one call (time.Now reads
	// the wall clock too, which the timed loop has no use for).
	base time.Time
	// start is when the outer wall clock started, on the workers' clock:
	// an open loop's schedule counts from it, the same for every worker
	// however late the scheduler gets each one going.
	start    time.Duration
	stop     atomic.Bool   // set on cancel, error or deadline
	stopCh   chan struct{} // closed with stop, for sleepers
	stopOnce sync.Once
}

func (r *run) halt() {
	r.stopOnce.Do(func() {
		r.stop.Store(true)
		close(r.stopCh)
	})
}

// runOne performs one run and summarizes it. On cancellation it returns
// what was measured so far with Cancelled set and a nil error.
func runOne(ctx context.Context, cfg runConfig) (*BenchResult, error) {
	open, err := lookupEngine(cfg.engine)
	if err != nil {
		return nil, err
	}
	info := workloadInfos[cfg.workload]
	keys := newKeyTable(cfg.keys)
	if info.preload {
		if err := preload(ctx, open, &cfg, keys); err != nil {
			return nil, err
		}
	}
	store, err := open(cfg.dir, cfg.sync)
	if err != nil {
		return nil, fmt.Errorf("open %s in %s: %w", cfg.engine, cfg.dir, err)
	}
	defer store.Close()
	var scanner Scanner
	if info.scans {
		var ok bool
		if scanner, ok = store.(Scanner); !ok {
			return nil, fmt.Errorf("-workload %s: engine %s cannot scan keys in order; ordered engines (bbolt, pebble) can, while kv's hash index keeps no key order", cfg.workload, cfg.engine)
		}
	}
	r := &run{cfg: &cfg, stopCh: make(chan struct{}), base: time.Now()}

	// Cancellation: a watcher turns ctx.Done into the stop flag the workers
	// poll between ops (during warmup too).
	unwatch := make(chan struct{})
	defer close(unwatch)
	go func() {
		select {
		case <-ctx.Done():
			r.halt()
		case <-unwatch:
		}
	}()

	// Split the budget: worker w does quota units (the first ones one more).
	workers := make([]*worker, cfg.threads)
	for w := range workers {
		quota := int64(math.MaxInt64)
		table := int64(1 << 20)
		if cfg.ops > 0 {
			quota = cfg.ops / int64(cfg.threads)
			if int64(w) < cfg.ops%int64(cfg.threads) {
				quota++
			}
			table = max(quota, 1)
		} else if cfg.maxUnits > 0 {
			quota = cfg.maxUnits / int64(cfg.threads)
			if int64(w) < cfg.maxUnits%int64(cfg.threads) {
				quota++
			}
		}
		table = min(table, 1<<22)
		workers[w] = &worker{
			id: w, cfg: &cfg, store: store, quota: quota, live: new(liveView),
			plan: planWorker(cfg.workload, cfg.dist, w, cfg.threads, cfg.keys, int(table), cfg.valueSize, cfg.seed),
		}
		if scanner != nil {
			workers[w].scanner = scanner
			workers[w].visit = func(key, value []byte) bool { return true }
		}
	}
	var writer *worker // readwhilewriting's background writer
	if cfg.workload == "readwhilewriting" {
		writer = &worker{
			id: cfg.threads, cfg: &cfg, store: store, quota: math.MaxInt64, live: new(liveView),
			plan: planWorker("fillrandom", cfg.dist, cfg.threads, cfg.threads+1, cfg.keys, 1<<16, cfg.valueSize, cfg.seed),
		}
	}

	// Warmup: the same work, recorded into recorders that are discarded.
	if cfg.warmup > 0 && !cfg.dishonest.noWarmup {
		warm := newSampleBudget(cfg.warmup + chunkLen) // never used: discarded
		var wg sync.WaitGroup
		for _, w := range workers {
			w.setRecorders(warm)
			n := cfg.warmup / int64(cfg.threads)
			if int64(w.id) < cfg.warmup%int64(cfg.threads) {
				n++
			}
			w.warming = true
			wg.Go(func() { w.loop(r, keys, int64(len(w.plan.order)/2), n, 0) })
		}
		wg.Wait()
		for _, w := range workers {
			if w.err != nil {
				return nil, fmt.Errorf("warmup: %w", w.err)
			}
			w.units, w.ops, w.gets, w.hits, w.warming = 0, 0, 0, 0, false
			w.live.done.Store(0)
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}

	recorders := 4 * len(workers)
	if writer != nil {
		recorders += 4
	}
	if cfg.rate > 0 {
		recorders *= 2
	}
	budget := newExactBudget(cfg.exactCap, recorders)
	for _, w := range workers {
		w.setRecorders(budget)
		if cfg.ops > 0 {
			w.reserve()
		}
	}
	all := slices.Clone(workers)
	if writer != nil {
		writer.setRecorders(budget)
		all = append(all, writer)
	}

	before := storeStats(store)
	timer, timed := store.(SyncTimer)
	if timed {
		timer.SyncTimes().arm()
	}

	prog := startProgress(r, all, cfg.tick, cfg.engine)

	var deadline time.Duration // on the workers' clock; 0 = none
	var wg, wwg sync.WaitGroup
	start := make(chan struct{})
	for _, w := range workers {
		wg.Go(func() {
			<-start
			w.loop(r, keys, 0, w.quota, deadline)
		})
	}
	stopWriter := &run{cfg: &cfg, stopCh: make(chan struct{}), base: r.base}
	if writer != nil {
		wwg.Go(func() {
			<-start
			writer.loop(stopWriter, keys, 0, writer.quota, 0)
		})
	}

	// The one outer wall clock.
	t0 := time.Now()
	r.start = t0.Sub(r.base)
	if cfg.duration > 0 {
		deadline = t0.Sub(r.base) + cfg.duration
	}
	prog.begin(t0)
	close(start)
	wg.Wait()
	// readwhilewriting's writer stops with the readers, and the clock
	// waits for its last Put: every op counted ends inside the wall clock.
	stopWriter.halt()
	wwg.Wait()
	wall := time.Since(t0)
	cancelled := r.stop.Load() && ctx.Err() != nil
	timeline := prog.end(wall)

	after := storeStats(store)
	var syncs LatencySummary
	if timed {
		syncs = timer.SyncTimes().disarm()
	}
	for _, w := range all {
		if w.err != nil {
			return nil, w.err
		}
	}
	res := summarizeRun(&cfg, all, writer, wall, timeline)
	res.Cancelled = cancelled
	res.Capped = cfg.duration > 0 && wall < cfg.duration && !cancelled
	_, res.FsyncsCounted = store.(StatsReporter)
	res.Fsyncs = after.Fsyncs - before.Fsyncs
	res.BytesWritten = after.BytesWritten - before.BytesWritten
	if res.Fsyncs > 0 {
		res.FsyncMeanNs = float64(after.FsyncTime-before.FsyncTime) / float64(res.Fsyncs)
	}
	res.FsyncSamples, res.FsyncP50Ns, res.FsyncP99Ns, res.FsyncMaxNs = syncs.Count, syncs.P50Ns, syncs.P99Ns, syncs.MaxNs
	return res, nil
}

// setRecorders gives w fresh recorders drawing on budget b.
func (w *worker) setRecorders(b *sampleBudget) {
	w.put, w.get, w.del, w.scan = newRecorder(b), newRecorder(b), newRecorder(b), newRecorder(b)
	if w.cfg.rate > 0 {
		w.uput, w.uget, w.udel, w.uscan = newRecorder(b), newRecorder(b), newRecorder(b), newRecorder(b)
	}
}

// reserve sets aside, before the clock starts, the exact-sample slots a
// -ops run's worker will fill: one per op of each kind its quota does.
func (w *worker) reserve() {
	var puts, gets, dels, scans int64
	switch stepOf(w.cfg.workload) {
	case stepPut:
		puts = w.quota
	case stepGet:
		gets = w.quota
	case stepDelete:
		dels = w.quota
	case stepScan:
		scans = w.quota
	case stepUpdate:
		gets, puts = w.quota, w.quota
	case stepMixed:
		order, isRead := len(w.plan.order), w.plan.isRead
		for i := range w.quota {
			if isRead[int(i%int64(order))%len(isRead)] {
				gets++
			}
		}
		puts = w.quota - gets
	}
	for _, k := range []struct {
		n         int64
		rec, uncR *recorder
	}{{puts, w.put, w.uput}, {gets, w.get, w.uget}, {dels, w.del, w.udel}, {scans, w.scan, w.uscan}} {
		k.rec.reserve(k.n)
		if k.uncR != nil {
			k.uncR.reserve(k.n)
		}
	}
}

// preload puts every key once, untimed, so reads hit and deletes delete.
// It writes with -sync none when the store allows it (one fdatasync at
// Close instead of one per key under "always"), closes the store, and the
// run then reopens it with the policy being measured.
func preload(ctx context.Context, open OpenFunc, cfg *runConfig, keys keyTable) error {
	s, err := open(cfg.dir, "none")
	if err != nil {
		if s, err = open(cfg.dir, cfg.sync); err != nil {
			return fmt.Errorf("open %s in %s: %w", cfg.engine, cfg.dir, err)
		}
	}
	plan := planWorker("fillseq", "uniform", 0, 1, 1, 1, cfg.valueSize, cfg.seed)
	n := len(keys.buf) / keyLen
	for i := range n {
		if i%1024 == 0 && ctx.Err() != nil {
			s.Close()
			return ctx.Err()
		}
		if err := s.Put(keys.key(uint32(i)), plan.value(i, cfg.valueSize)); err != nil {
			s.Close()
			return fmt.Errorf("preload key %d: %w", i, err)
		}
	}
	if err := s.Close(); err != nil {
		return fmt.Errorf("preload: close: %w", err)
	}
	return nil
}

// storeStats reads a store's counters, or zeros if it keeps none.
func storeStats(s Store) StoreStats {
	if sr, ok := s.(StatsReporter); ok {
		return sr.StoreStats()
	}
	return StoreStats{}
}

// loop runs n units starting at plan position from. It is the timed loop:
// nothing in it allocates (unless -dishonest-time-keygen asks it to).
//
// Times are durations on the run's monotonic clock (time.Since(r.base));
// deadline 0 means none.
func (w *worker) loop(r *run, keys keyTable, from, n int64, deadline time.Duration) {
	cfg := w.cfg
	s := w.store
	order := w.plan.order
	hasDeadline := deadline > 0
	base := r.base
	w.base = base
	// An open loop (-rate) paces the threads' units; warmup is never paced,
	// nor is readwhilewriting's writer, which writes as fast as it can.
	open := cfg.rate > 0 && !w.warming
	paced := open && w.id < cfg.threads
	var timer *time.Timer
	if paced {
		timer = time.NewTimer(time.Hour)
		defer timer.Stop()
	}
	step := stepOf(cfg.workload)
	if w.id == cfg.threads { // readwhilewriting's writer
		step = stepPut
	}
	pos := int(from % int64(len(order)))
	for i := int64(0); i < n; i, pos = i+1, pos+1 {
		if r.stop.Load() {
			return
		}
		if pos == len(order) {
			pos = 0
		}
		key := keys.key(order[pos])
		val := w.plan.value(int(i), cfg.valueSize)

		// Open loop: wait for this unit's intended start; latency is
		// measured from it, so a stall also counts against the units that
		// should have started during it (coordinated omission).
		var intended time.Duration // 0 in a closed loop
		if paced {
			intended = r.start + intendedOffset(cfg.threads, w.id, i, cfg.rate) // > 0: base is earlier than start
			if hasDeadline && intended >= deadline {
				// This unit is scheduled after the run's end: not part of
				// it. Wait for the deadline itself, not past it, so the
				// wall clock covers the scheduled time and no more.
				w.sleepUntil(r, timer, deadline)
				return
			}
			if !w.sleepUntil(r, timer, intended) {
				return
			}
		}

		isRead := step == stepMixed && w.plan.isRead[pos%len(w.plan.isRead)]

		var err error
		var end time.Duration
		start := time.Since(base)
		if open && !paced {
			intended = start // the unpaced writer of a -rate run: both tables, same figure
		}
		if cfg.dishonest.timeKeygen {
			key, val = buildKeyValue(order[pos], val)
		}
		switch step {
		case stepPut:
			err = s.Put(key, val)
			end = w.done(w.put, w.uput, start, intended)
		case stepGet:
			err = w.doGet(key)
			end = w.done(w.get, w.uget, start, intended)
		case stepDelete:
			err = s.Delete(key)
			end = w.done(w.del, w.udel, start, intended)
		case stepUpdate:
			err = w.doGet(key)
			w.done(w.get, w.uget, start, intended)
			if err == nil {
				// The Put's clock starts after the Get is recorded, so the
				// recording is in neither op's time. It is meant to start
				// as soon as it does: in an open loop its corrected and
				// uncorrected latencies are the same, and both tables
				// count it.
				putStart := time.Since(base)
				var putIntended time.Duration
				if intended != 0 {
					putIntended = putStart
				}
				err = s.Put(key, val)
				end = w.done(w.put, w.uput, putStart, putIntended)
			}
		case stepScan:
			err = w.scanner.Scan(key, scanLen, w.visit)
			end = w.done(w.scan, w.uscan, start, intended)
		case stepMixed:
			if isRead {
				err = w.doGet(key)
				end = w.done(w.get, w.uget, start, intended)
			} else {
				err = s.Put(key, val)
				end = w.done(w.put, w.uput, start, intended)
			}
		}
		if err != nil {
			w.err = fmt.Errorf("%s %s: %w", cfg.engine, cfg.workload, err)
			r.halt()
			return
		}
		w.units++
		if hasDeadline && end > deadline {
			if paced {
				// Units scheduled before the deadline that the store was too
				// slow to start: not measured, so counted and reported.
				next := i + 1
				w.backlog = int64(sort.Search(int(n-next), func(k int) bool {
					return r.start+intendedOffset(cfg.threads, w.id, next+int64(k), cfg.rate) >= deadline
				}))
			}
			return
		}
	}
}

// sleepUntil waits until time at on the run's clock; false if the run was
// stopped meanwhile.
func (w *worker) sleepUntil(r *run, timer *time.Timer, at time.Duration) bool {
	if d := at - time.Since(r.base); d > spinBelow {
		timer.Reset(d)
		select {
		case <-timer.C:
		case <-r.stopCh:
			return false
		}
	} else {
		// Timers are too coarse for short waits: yield until it is time.
		for time.Since(r.base) < at {
			runtime.Gosched()
		}
	}
	return true
}

// intendedOffset is when, after the run's start, an open loop means to
// start unit i of worker w: the run is one stream of units at rate per
// second, dealt round-robin to the threads, so thread w's unit i is the
// stream's unit i*threads+w and the threads' starts interleave instead of
// arriving together.
func intendedOffset(threads, w int, i int64, rate float64) time.Duration {
	n := i*int64(threads) + int64(w)
	return time.Duration(float64(n) * 1e9 / rate)
}

// doGet does one Get and counts hits.
func (w *worker) doGet(key []byte) error {
	_, found, err := w.store.Get(key)
	w.gets++
	if found {
		w.hits++
	}
	return err
}

// done records one op that started at start (and, in an open-loop run,
// was meant to start at intended, if not 0) and returns the time it ended.
func (w *worker) done(rec, unc *recorder, start, intended time.Duration) time.Duration {
	end := time.Since(w.base)
	ns := int64(end - start)
	if intended != 0 {
		unc.record(ns)
		ns = int64(end - intended)
	}
	rec.record(ns)
	w.ops++
	w.live.ring[w.ops%ringLen].Store(ns)
	w.live.done.Store(w.ops)
	return end
}

// buildKeyValue is the -dishonest-time-keygen rule break: it formats the
// key and copies the value afresh, inside the timed region, allocating
// both, as a careless benchmark does.
func buildKeyValue(i uint32, val []byte) ([]byte, []byte) {
	key := fmt.Appendf(nil, "%016d", i)
	v := make([]byte, len(val))
	copy(v, val)
	return key, v
}
