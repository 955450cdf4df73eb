package harness

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
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
//     with -cache cold, then evict the store's files from the page cache
//     (cache.go);
//  5. in a -ops run, reserve (and touch) every exact-sample slot the run
//     will fill, so no chunk is allocated inside the wall clock;
//  6. read the store's fsync counters, start the one outer wall clock,
//     release every worker at once;
//  7. each worker times each op with the monotonic clock and records it;
//     in a -rate run, unit k of the run's one stream is due at start +
//     k/rate, dealt round-robin to the threads, and its latency counts
//     from then; the pacer (pacer.go) wakes the worker for it and records
//     its own lateness;
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
	batch     int // fillbatch: Puts per unit; 0 or 1 otherwise
	dist      string
	threads   int
	ops       int64         // units to do in total; 0 with a duration
	duration  time.Duration // 0 with ops
	maxUnits  int64         // hard cap on units (limits), for -duration runs
	exactCap  int64         // samples kept exactly; DefaultExactCap
	valueSize int
	keys      int
	warmup    int64
	// untilSteady is -until-steady: warm up until FindSteady says so
	// (steady.go), at most maxWarmup, instead of -warmup units;
	// steadyTolerance is the throughput and debt spread allowed, as a
	// fraction.
	untilSteady     bool
	maxWarmup       time.Duration
	steadyTolerance float64
	rate            float64 // units per second in total; 0 = closed loop
	poisson         bool    // -arrivals poisson: exponential gaps between intended starts
	pipeline        int     // requests each client sends before reading replies; 0 or 1 = none (pipeline.go)
	cold            bool    // -cache cold: evict the store's files after the warmup
	seed            int64
	dishonest       dishonesty
	dir             string // the fresh directory the store lives in
	tick            time.Duration
	progress        func(Progress)
	// pool, in a -repeat group, takes the run's latencies once its clock
	// has stopped (pool.go); nil otherwise.
	pool *latencyPool
	// source is the store's code for a source engine (source.go); "" for
	// every other engine.
	source string
	// opts are the replicated engines' flags (replication.go).
	opts EngineOptions
	// fanout is -fanout K: requests per unit (fanout.go); 0 or 1 = none.
	fanout int
	// hedge is -hedge pP's P (hedge.go); 0 = none.
	hedge float64
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

// role is what a worker is in its run.
type role int

const (
	// roleClient does its share of the workload's units; in a -rate run
	// it is paced by the run's schedule.
	roleClient role = iota
	// roleWriter is readwhilewriting's background writer: it Puts as fast
	// as it can, never paced, until the clients have finished. Its Puts
	// count as ops but not as units.
	roleWriter
)

// worker is one goroutine's share of a run. Not safe for concurrent use,
// except live, which the progress goroutine reads.
type worker struct {
	id   int
	role role
	step step // what each unit does: the workload's step, or stepPut for the writer
	// stride is how many plan positions (keys) a unit takes: -batch for
	// fillbatch, 1 otherwise.
	stride int
	plan   workerPlan
	quota  int64 // units to do; math.MaxInt64 in a -duration run
	cfg    *runConfig
	store  Store

	// Recorders by op kind; in a -rate run unc* hold the uncorrected
	// latencies (from the actual start, not the intended one).
	put, get, del, scan     *recorder
	uput, uget, udel, uscan *recorder
	scanner                 Scanner                      // the store, for seekrandom; nil otherwise
	pipe                    *pipeState                   // a pipelining client's batch (-pipeline); nil otherwise
	visit                   func(key, value []byte) bool // Scan's callback, made once outside the timed loop

	// Set by loop for the units it runs.
	clk   clock // the run's clock (run.newClock), set on the first loop
	paced bool  // an open loop's client: each unit waits for its intended start
	// selfIntended is an open loop's unpaced writer: each unit's intended
	// start is its actual start, so both tables record it with one figure.
	selfIntended bool

	warming    bool // running the warmup: closed loop, results discarded
	units, ops int64
	backlog    int64 // open loop: units due before the deadline, never started
	gets, hits int64
	err        error
	live       *liveView

	// An open loop's account of its pacer (pacer.go, account): per paced
	// unit, lag records the pacer lag and delay the generator's delay;
	// prevEnd is when the previous unit ended, idealEnd when it would have
	// ended had the generator never been late.
	lag, delay        *recorder
	prevEnd, idealEnd time.Duration
	// arrivals draws a -arrivals poisson worker's gaps; nextArrival is
	// its next unit's intended start after the run's start.
	arrivals    *rand.Rand
	nextArrival time.Duration
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
	// fake, when set (tests only), is the clock every worker reads and
	// waits on instead of the monotonic clock since base.
	fake clock
}

// newClock returns the clock a worker of r reads: its own monoClock over
// base (each has its own timer), or the injected fake.
func (r *run) newClock() clock {
	if r.fake != nil {
		return r.fake
	}
	return &monoClock{base: r.base}
}

func (r *run) halt() {
	r.stopOnce.Do(func() {
		r.stop.Store(true)
		close(r.stopCh)
	})
}

// runOne performs one run and summarizes it. On cancellation it returns
// what was measured so far with Cancelled set and a nil error. It takes
// the steps of the file comment in order: open and preload (1-3), build
// the workers (2), warm up (4), measure (5-8), and the result.
func runOne(ctx context.Context, cfg runConfig) (*BenchResult, error) {
	if cfg.workload == reopenWorkload {
		return runReopen(ctx, cfg)
	}
	idle := idleMachine(cfg.dir, idleBaselineFor(cfg.duration))
	store, keys, err := openAndPreload(ctx, &cfg)
	if err != nil {
		return nil, err
	}
	defer store.Close()
	scanner, err := scannerFor(&cfg, store)
	if err != nil {
		return nil, err
	}
	pipeliner, err := pipelinerFor(&cfg, store)
	if err != nil {
		return nil, err
	}
	var engineConfig string
	if t, ok := store.(WriterTuner); ok {
		writers := cfg.threads
		if wl, _ := lookupWorkload(cfg.workload); wl.writer {
			writers = 1 // readwhilewriting: the clients read, one goroutine writes
		}
		engineConfig = t.TuneForWriters(writers)
	}
	r := &run{cfg: &cfg, stopCh: make(chan struct{}), base: time.Now()}
	defer r.haltOn(ctx)()
	clients, writer := newWorkers(&cfg, store, scanner)
	if pipeliner != nil {
		for _, w := range clients {
			w.pipe = w.newPipeState(pipeliner)
		}
	}
	var steady *SteadyState
	var warmTimeline []TimelinePoint
	if cfg.untilSteady {
		if steady, warmTimeline, err = warmUntilSteady(ctx, r, keys, clients, store); err != nil {
			return nil, err
		}
	} else if err := warmup(ctx, r, keys, clients); err != nil {
		return nil, err
	}
	base := store // the store itself, under a fan-out
	fan, fanned := fanoutOf(store)
	if fanned {
		base = fan.inner
	}
	idleRate, idleWhy := 0.0, ""
	if _, ok := base.(ReplicationReporter); ok {
		idleRate, idleWhy = idleFlushes(ctx, cfg.dir) // after the warmup's writes, before the clock
	}
	var cache *CacheReport
	if cfg.cold {
		cache = evictCache(cfg.dir, cfg.engine) // after the warmup, which reads
	}
	if fanned {
		fan.record(true)
	}
	m, err := measure(ctx, r, keys, store, clients, writer, idle)
	if err != nil {
		return nil, err
	}
	res := m.result(&cfg)
	res.Cache = cache
	res.EngineConfig = engineConfig
	if scanSpaced[cfg.engine] && !m.cancelled {
		if disk, live, ok := spaceByScan(base, cfg.dir, cfg.keys); ok {
			if res.Amplification == nil {
				res.Amplification = &Amplification{}
			}
			sp := float64(disk) / float64(live)
			res.Amplification.Space, res.Amplification.SpaceSource = &sp, "files"
			if res.EngineMetrics == nil {
				res.EngineMetrics = map[string]int64{}
			}
			res.EngineMetrics["files_bytes"], res.EngineMetrics["scanned_live_bytes"] = disk, live
		}
	}
	if steady != nil {
		res.SteadyState, res.WarmupTimeline = steady, warmTimeline
		for i := range res.Timeline {
			res.Timeline[i].Phase = PhaseMeasured
		}
	}
	if fanned {
		fan.record(false)
		res.Fanout = fan.report(m.wall)
	}
	if rr, ok := base.(ReplicationReporter); ok {
		var commits int64
		if put := res.Latency["put"]; put != nil {
			commits = put.Count
		}
		res.Replication = rr.ReplicationReport(commits)
		netDeviceFlushes(res.Replication, idleRate, idleWhy, res.DeviceIO, res.WallSeconds, commits)
	}
	if TakesSource(cfg.engine) {
		res.Sync, res.Interpreted = SourceSync, true
	}
	return res, nil
}

// openAndPreload builds every key, preloads the store if the workload
// needs it full, and opens it with the policy being measured.
func openAndPreload(ctx context.Context, cfg *runConfig) (Store, keyTable, error) {
	open, err := lookupEngineContext(ctx, cfg.engine)
	if err != nil {
		return nil, keyTable{}, err
	}
	if so, ok := sourceEngine(cfg.engine); ok {
		open = func(dir, _ string) (Store, error) { return so(ctx, dir, cfg.source) }
	}
	if re, ok := replicatedEngine(cfg.engine); ok {
		open = func(dir, sync string) (Store, error) { return re.Open(ctx, dir, sync, cfg.opts) }
	}
	keys, err := buildKeyTable(ctx, cfg.keys)
	if err != nil {
		return nil, keyTable{}, err
	}
	if wl, _ := lookupWorkload(cfg.workload); wl.preload {
		if err := preload(ctx, open, cfg, keys); err != nil {
			return nil, keyTable{}, err
		}
	}
	store, err := open(cfg.dir, cfg.sync)
	if err != nil {
		return nil, keyTable{}, fmt.Errorf("open %s in %s: %w", cfg.engine, cfg.dir, err)
	}
	if cfg.fanout > 1 || cfg.hedge > 0 {
		store = newFanout(store, max(cfg.fanout, 1), cfg.ops, cfg.hedge)
	}
	return store, keys, nil
}

// scannerFor returns the store as a Scanner when the workload scans, and
// nil when it does not.
func scannerFor(cfg *runConfig, store Store) (Scanner, error) {
	if wl, _ := lookupWorkload(cfg.workload); !wl.scans {
		return nil, nil
	}
	scanner, ok := store.(Scanner)
	if !ok {
		return nil, fmt.Errorf("-workload %s: engine %s cannot scan keys in order; ordered engines (bbolt, pebble, sqlite) can, while kv's hash index keeps no key order", cfg.workload, cfg.engine)
	}
	return scanner, nil
}

// haltOn stops the run when ctx is done: a watcher turns ctx.Done into the
// stop flag the workers poll between ops (during warmup too). The
// returned function stops the watcher.
func (r *run) haltOn(ctx context.Context) (unwatch func()) {
	done := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			r.halt()
		case <-done:
		}
	}()
	return func() { close(done) }
}

// share is worker i's part of total split between n workers: total/n,
// and one more for each of the first total%n workers, so the shares sum
// to total and differ by at most one.
func share(total, n, i int) int {
	s := total / n
	if i < total%n {
		s++
	}
	return s
}

// newWorkers builds the run's clients, each with its share of the units
// and its plan, and the workload's background writer (nil when it has
// none).
func newWorkers(cfg *runConfig, store Store, scanner Scanner) (clients []*worker, writer *worker) {
	wl, _ := lookupWorkload(cfg.workload)
	clients = make([]*worker, cfg.threads)
	for i := range clients {
		quota := int64(math.MaxInt64) // a -duration run stops at its deadline
		table := int64(1 << 20)       // plan positions a -duration run cycles through
		if cfg.ops > 0 {
			quota = int64(share(int(cfg.ops), cfg.threads, i))
			table = max(quota, 1)
		} else if cfg.maxUnits > 0 {
			quota = int64(share(int(cfg.maxUnits), cfg.threads, i))
		}
		stride := 1
		if wl.step == stepBatch {
			stride = max(cfg.batch, 1) // a unit takes the next batch keys of the plan
		}
		table = min(table*int64(stride), 1<<22)
		clients[i] = &worker{
			id: i, role: roleClient, step: wl.step, stride: stride, cfg: cfg, store: store, quota: quota, live: new(liveView),
			plan: planWorker(cfg.workload, cfg.dist, i, cfg.threads, cfg.keys, int(table), cfg.valueSize, cfg.seed),
		}
		if scanner != nil {
			clients[i].scanner = scanner
			clients[i].visit = func(key, value []byte) bool { return true }
		}
	}
	if wl.writer {
		writer = &worker{
			id: cfg.threads, role: roleWriter, step: stepPut, stride: 1, cfg: cfg, store: store, quota: math.MaxInt64, live: new(liveView),
			plan: planWorker("fillrandom", cfg.dist, cfg.threads, cfg.threads+1, cfg.keys, 1<<16, cfg.valueSize, cfg.seed),
		}
	}
	return clients, writer
}

// warmup has each client run its share of -warmup units, closed loop,
// into recorders that are then thrown away.
func warmup(ctx context.Context, r *run, keys keyTable, clients []*worker) error {
	cfg := r.cfg
	if cfg.warmup == 0 || cfg.dishonest.noWarmup {
		return nil
	}
	warm := newSampleBudget(cfg.warmup + chunkLen) // never used: discarded
	var wg sync.WaitGroup
	for _, w := range clients {
		w.setRecorders(warm)
		n := int64(share(int(cfg.warmup), cfg.threads, w.id))
		w.warming = true
		wg.Go(func() { w.loop(r, keys, int64(len(w.plan.order)/2), n, 0) })
	}
	wg.Wait()
	for _, w := range clients {
		if w.err != nil {
			return fmt.Errorf("warmup: %w", w.err)
		}
		w.units, w.ops, w.gets, w.hits, w.warming = 0, 0, 0, 0, false
		w.live.done.Store(0)
	}
	return ctx.Err()
}

// measurement is what the timed region leaves behind.
type measurement struct {
	workers   []*worker // the clients, then the writer if any
	wall      time.Duration
	cancelled bool
	capped    bool // a -duration run stopped early at maxUnits
	timeline  []TimelinePoint
	// The store's counters either side of the wall clock, and its
	// fdatasync latencies in between (when it times them).
	before, after StoreStats
	counted       bool // the store counts its fdatasyncs
	syncs         LatencySummary
	// machine reads the disk's own counters (diskstats.go) and the
	// processors' time (cpustat.go) either side of the wall clock, with
	// the idle baseline taken before the store opened.
	machine machineWatch
	// server is what a ServerTimer store's server timed in between, and
	// serverSource where that came from; serverErr why there is none.
	server       map[string]*ServerLatency
	serverSource string
	serverErr    error
}

// measure gives every worker its recorders (reserving a -ops run's
// exact-sample slots), reads the store's counters, runs the timed region
// and reads the counters again.
func measure(ctx context.Context, r *run, keys keyTable, store Store, clients []*worker, writer *worker, idle machineWatch) (*measurement, error) {
	cfg := r.cfg
	m := &measurement{workers: slices.Clone(clients)}
	if writer != nil {
		m.workers = append(m.workers, writer)
	}
	budget := newExactBudget(cfg.exactCap, recordersPerWorker(cfg)*len(m.workers))
	for _, w := range m.workers {
		w.setRecorders(budget)
		if cfg.ops > 0 && w.role == roleClient {
			w.reserve()
		}
	}
	m.machine = idle
	m.machine.start()
	// Armed before the counters are read, disarmed before they are read
	// again: a sync that ends in between is both timed and counted.
	_, m.counted = store.(StatsReporter)
	timer, timed := store.(SyncTimer)
	if timed {
		timer.SyncTimes().arm()
	}
	server, serverTimed := store.(ServerTimer)
	if serverTimed {
		m.serverErr = server.ResetServerTimes()
	}
	m.before = storeStats(store)
	prog := startProgress(r, m.workers, cfg.tick, cfg.engine)
	m.wall = timedRegion(r, keys, clients, writer, prog)
	m.cancelled = r.stop.Load() && ctx.Err() != nil
	m.capped = cfg.duration > 0 && m.wall < cfg.duration && !m.cancelled
	m.timeline = prog.end(m.wall)
	if timed {
		m.syncs = timer.SyncTimes().disarm()
	}
	m.after = storeStats(store)
	m.machine.stop()
	if serverTimed && m.serverErr == nil {
		m.server, m.serverSource, m.serverErr = server.ServerTimes()
	}
	for _, w := range m.workers {
		if w.err != nil {
			return nil, w.err
		}
	}
	return m, nil
}

// recordersPerWorker is how many recorders setRecorders gives a worker:
// one per op kind, twice over in a -rate run (corrected and uncorrected),
// plus the pacer's two (lag and delay).
func recordersPerWorker(cfg *runConfig) int {
	if cfg.rate > 0 {
		return 10
	}
	return 4
}

// timedRegion starts the one outer wall clock, releases every worker at
// once, and stops the clock when the last client, then the writer, has
// finished. It returns the wall-clock time.
func timedRegion(r *run, keys keyTable, clients []*worker, writer *worker, prog *progress) time.Duration {
	var deadline time.Duration // on the workers' clock; 0 = none
	var wg, wwg sync.WaitGroup
	start := make(chan struct{})
	for _, w := range clients {
		wg.Go(func() {
			<-start
			w.loop(r, keys, 0, w.quota, deadline)
		})
	}
	// The writer has its own stop: it stops when the clients have finished.
	stopWriter := &run{cfg: r.cfg, stopCh: make(chan struct{}), base: r.base, fake: r.fake}
	if writer != nil {
		wwg.Go(func() {
			<-start
			writer.loop(stopWriter, keys, 0, writer.quota, 0)
		})
	}
	t0 := time.Now()
	r.start = t0.Sub(r.base)
	if r.cfg.duration > 0 {
		deadline = r.start + r.cfg.duration
	}
	prog.begin(t0)
	close(start)
	wg.Wait()
	// The writer stops with the clients, and the clock waits for its last
	// Put: every op counted ends inside the wall clock.
	stopWriter.halt()
	wwg.Wait()
	return time.Since(t0)
}

// result summarizes the workers' recorders and adds the store's counters.
func (m *measurement) result(cfg *runConfig) *BenchResult {
	res := summarizeRun(cfg, m.workers, m.wall, m.timeline)
	res.Cancelled = m.cancelled
	res.Capped = m.capped
	res.FsyncsCounted = m.counted
	res.Fsyncs = m.after.Fsyncs - m.before.Fsyncs
	res.BytesWritten = m.after.BytesWritten - m.before.BytesWritten
	if res.Fsyncs > 0 {
		res.FsyncMeanNs = float64(m.after.FsyncTime-m.before.FsyncTime) / float64(res.Fsyncs)
	}
	res.FsyncSamples, res.FsyncP50Ns, res.FsyncP99Ns, res.FsyncMaxNs = m.syncs.Count, m.syncs.P50Ns, m.syncs.P99Ns, m.syncs.MaxNs
	var puts int64
	if p := res.Latency["put"]; p != nil {
		puts = p.Count
	}
	res.DeviceIO = m.machine.device.result(res.Ops, puts*int64(keyLen+cfg.valueSize))
	var gets int64
	if g := res.Latency["get"]; g != nil {
		gets = g.Count
	}
	res.Amplification = amplification(m.before, m.after, res.DeviceIO, puts*int64(keyLen+cfg.valueSize), gets)
	res.EngineMetrics = m.after.Metrics
	res.CPU = m.machine.cpu.result()
	res.ServerLatency, res.ServerLatencySource = m.server, m.serverSource
	if m.serverErr != nil {
		res.ServerLatencyUnavailable = m.serverErr.Error()
	}
	if m.after.FsyncsBy != nil {
		res.FsyncsByCause = map[string]int64{}
		for cause, n := range m.after.FsyncsBy {
			res.FsyncsByCause[cause] = n - m.before.FsyncsBy[cause]
		}
	}
	return res
}

// setRecorders gives w fresh recorders drawing on budget b.
func (w *worker) setRecorders(b *sampleBudget) {
	w.put, w.get, w.del, w.scan = newRecorder(b), newRecorder(b), newRecorder(b), newRecorder(b)
	if w.cfg.rate > 0 {
		w.uput, w.uget, w.udel, w.uscan = newRecorder(b), newRecorder(b), newRecorder(b), newRecorder(b)
		w.lag, w.delay = newRecorder(b), newRecorder(b)
	}
}

// reserve sets aside, before the clock starts, the exact-sample slots a
// -ops run's worker will fill: one per op of each kind its quota does.
func (w *worker) reserve() {
	var puts, gets, dels, scans int64
	switch w.step {
	case stepPut:
		puts = w.quota
	case stepBatch:
		puts = w.quota * int64(w.stride)
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
	if w.lag != nil { // an open loop's client: one pacer lag and delay per unit
		w.lag.reserve(w.quota)
		w.delay.reserve(w.quota)
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
// Times are durations on the run's clock (r.newClock: monotonic, since
// r.base); deadline 0 means none. A worker belongs to one run: its clock
// is made on its first loop (the warmup's, when there is one).
func (w *worker) loop(r *run, keys keyTable, from, n int64, deadline time.Duration) {
	if w.clk == nil {
		w.clk = r.newClock()
	}
	if w.pipe != nil {
		w.loopPipelined(r, keys, from, n, deadline)
		return
	}
	// An open loop (-rate) paces the clients' units; warmup is never paced,
	// nor is the writer, which writes as fast as it can.
	open := w.cfg.rate > 0 && !w.warming
	w.paced = open && w.role == roleClient
	w.selfIntended = open && !w.paced
	order := w.plan.order
	stride := max(w.stride, 1)
	pos := int(from * int64(stride) % int64(len(order)))
	for i := int64(0); i < n; i, pos = i+1, pos+stride {
		if r.stop.Load() {
			return
		}
		if pos >= len(order) {
			pos -= len(order)
		}
		key := keys.key(order[pos])
		val := w.plan.value(int(i), w.cfg.valueSize)
		var intended time.Duration // 0 in a closed loop
		if w.paced {
			var due bool
			if intended, due = w.waitTurn(r, i, deadline); !due {
				return
			}
		}
		isRead := w.step == stepMixed && w.plan.isRead[pos%len(w.plan.isRead)]
		var start, end time.Duration
		var err error
		if w.step == stepBatch {
			start, end, err = w.batchUnit(keys, pos, from+i, intended)
		} else {
			start, end, err = w.unit(key, val, order[pos], isRead, intended)
		}
		if err != nil && errors.Is(err, ErrWritesStopped) && !w.warming {
			// A fault of the run's own making left nothing to write to:
			// the client stops, and a -duration run's clock runs on to
			// its end, so the timeline shows the silence.
			if deadline > 0 {
				w.clk.sleepUntil(deadline, r.stopCh)
			}
			return
		}
		if err != nil {
			w.err = fmt.Errorf("%s %s: %w", w.cfg.engine, w.cfg.workload, err)
			r.halt()
			return
		}
		if w.paced {
			w.account(intended, start, end)
		}
		w.units++
		if deadline > 0 && end > deadline {
			if w.paced {
				w.backlog = w.countBacklog(r, i+1, n, deadline)
			}
			return
		}
	}
}

// waitTurn is an open loop's pacing: it waits for unit i's intended start
// and returns it, since latency is measured from it, so a stall also counts
// against the units that should have started during it (coordinated
// omission). It returns false when the run was stopped meanwhile, or when
// the unit is scheduled at or after the deadline and so is not part of the
// run: it then waits for the deadline itself, not past it, so the wall
// clock covers the scheduled time and no more.
func (w *worker) waitTurn(r *run, i int64, deadline time.Duration) (time.Duration, bool) {
	intended := r.start + intendedOffset(w.cfg.threads, w.id, i, w.cfg.rate) // > 0: base is earlier than start
	if w.cfg.poisson {
		intended = r.start + w.poissonOffset()
	}
	if deadline > 0 && intended >= deadline {
		w.clk.sleepUntil(deadline, r.stopCh)
		return 0, false
	}
	return intended, w.clk.sleepUntil(intended, r.stopCh)
}

// unit does one unit of the worker's step on key and records each of its
// ops; isRead is a mixed unit's coin flip and intended is when an open
// loop meant the unit to start (0 in a closed loop). It returns when the
// unit started and when its last op ended: the timed region.
func (w *worker) unit(key, val []byte, k uint32, isRead bool, intended time.Duration) (start, end time.Duration, err error) {
	s := w.store
	start = w.clk.now()
	if w.selfIntended {
		intended = start // both tables, same figure
	}
	if w.cfg.dishonest.timeKeygen {
		key, val = buildKeyValue(k, val)
	}
	switch w.step {
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
			putStart := w.clk.now()
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
	return start, end, err
}

// batchUnit does one fillbatch unit: a Put of each of the w.stride keys
// of the plan from position pos on (wrapping), one after another, each
// recorded as an op of its own. unit is the unit's number, which picks
// the values. As in updaterandom, the first Put is measured from the
// unit's intended start and each later one from its own start, so in an
// open loop the unit's wait is counted once. It returns when the unit
// started and when its last Put ended.
func (w *worker) batchUnit(keys keyTable, pos int, unit int64, intended time.Duration) (start, end time.Duration, err error) {
	order := w.plan.order
	start = w.clk.now()
	if w.selfIntended {
		intended = start
	}
	putStart, putIntended := start, intended
	for j := range w.stride {
		p := pos + j
		if p >= len(order) {
			p -= len(order)
		}
		key := keys.key(order[p])
		val := w.plan.value(int(unit)*w.stride+j, w.cfg.valueSize)
		if w.cfg.dishonest.timeKeygen {
			key, val = buildKeyValue(order[p], val)
		}
		if j > 0 {
			putStart = w.clk.now()
			if intended != 0 {
				putIntended = putStart
			}
		}
		if err = w.store.Put(key, val); err != nil {
			return start, w.clk.now(), err
		}
		end = w.done(w.put, w.uput, putStart, putIntended)
	}
	return start, end, nil
}

// countBacklog counts, after an open loop's unit ran past the deadline,
// its units from next on that were scheduled before the deadline but that
// the store was too slow to start: not measured, so counted and reported.
func (w *worker) countBacklog(r *run, next, n int64, deadline time.Duration) int64 {
	return int64(sort.Search(int(n-next), func(k int) bool {
		return r.start+intendedOffset(w.cfg.threads, w.id, next+int64(k), w.cfg.rate) >= deadline
	}))
}

// intendedOffset is when, after the run's start, an open loop means to
// start unit i of worker w: the run is one stream of units at rate per
// second, dealt round-robin to the threads, so thread w's unit i is the
// stream's unit i*threads+w and the threads' starts interleave instead of
// arriving together.
// poissonOffset is a -arrivals poisson worker's next intended start after
// the run's start: the previous one plus an exponential gap whose mean is
// threads/rate, so that the workers together start rate units a second
// at random moments (a Poisson process), seeded per worker so a run is
// reproducible.
func (w *worker) poissonOffset() time.Duration {
	if w.arrivals == nil {
		w.arrivals = rand.New(rand.NewPCG(uint64(w.cfg.seed), uint64(w.id)+1))
	}
	w.nextArrival += time.Duration(w.arrivals.ExpFloat64() * float64(w.cfg.threads) * 1e9 / w.cfg.rate)
	return w.nextArrival
}

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
	end := w.clk.now()
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
