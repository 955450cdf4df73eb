package harness

import (
	"context"
	"fmt"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"kvlab/engine"
)

// The reopen workload: how long a store takes to come back.
//
// A store that keeps its index in memory (kv) must rebuild it on every
// Open; one that keeps it on disk (pebble's LSM) reads it lazily. Both
// costs grow differently with the number of keys, and both are hidden by
// a page cache that still holds the files: the first open after a reboot
// is the one users wait for. -workload reopen measures that one:
//
//  1. preload: put -keys keys (untimed, -sync none where the store
//     allows it) and close the store;
//  2. write back and drop every file of the store from the page cache
//     (evictCache, as -cache cold does; the result's "cache" says what
//     stayed resident);
//  3. time Open (open_seconds) with the policy of -sync, check that the
//     first and last keys are there (untimed), and time Close
//     (close_seconds);
//  4. for kv, the floor: drop the files from the cache again and let
//     engine.MeasureOpenFloor read the same hint files and build the same
//     index in memory, with nothing else (open_floor). open_vs_floor is
//     how many times the floor the Open took, both measured in the same
//     run on the same disk, so the ratio holds where the seconds do not.
//
// Both the Open and the floor start from a Go heap that has handed its
// free memory back to the OS (debug.FreeOSMemory), as a fresh process
// starts: an index built in memory the process already had is cheaper
// than one built in fresh memory, which costs a page fault per 4 KiB
// page touched (on a virtual machine, measured: about as much CPU time
// as building the index), and a floor measured right after the Open
// freed its index would otherwise get that memory for nothing. The
// floor builds on as many goroutines as Open does (one per core), and
// reads the files one after another with no overlap (engine.OpenFloor
// says exactly what it includes).
//
// index_bytes_per_key is the memory kv's reopened hash index holds per
// key, the key included (engine Stats.IndexBytes / Keys). The result's
// "cpu" covers the Open: an Open is mostly the CPU work of building an
// index, so on a busy machine (busy_fraction near 1, process_fraction
// far below 1/cores) its seconds are the scheduler's, not the store's.
// The floor, measured moments later, meets about the same machine, but
// only about: quote open_vs_floor from a quiet machine.
//
// One run is one reopen: -repeat N gives N of them (each loads its own
// store), and their median is what to quote.

// reopenWorkload is the name of the workload.
const reopenWorkload = "reopen"

// reopenEngines are the engines -workload reopen applies to: those that
// run inside this process on files in the run directory, whose pages
// evictCache can drop. A server engine keeps its data in its own process
// (or its own files, reached over a connection), and null keeps none.
var reopenEngines = []string{"kv", "bbolt", "pebble", "sqlite"}

// checkReopenEngines refuses -workload reopen for an engine it does not
// apply to.
func checkReopenEngines(engines []string) error {
	for _, e := range engines {
		if !slices.Contains(reopenEngines, e) {
			return fmt.Errorf("-workload reopen: engine %s: reopen times an engine that keeps its files in the run directory and opens them in this process; allowed: %s", e, strings.Join(reopenEngines, ", "))
		}
	}
	return nil
}

// reopenIgnores are the flags that say nothing to a reopen run: it times
// one open and one close, on one thread, with no timed loop to pace,
// warm up or spread.
var reopenIgnores = []string{"ops", "duration", "warmup", "rate", "arrivals", "pipeline", "fanout", "until-steady", "cache", "dist"}

// checkReopenFlags refuses a flag given to a reopen line that would do
// nothing there, and more than one thread.
func checkReopenFlags(s *Spec) error {
	for _, f := range reopenIgnores {
		if s.has(f) {
			return fmt.Errorf("-%s: does not apply to -workload reopen (one open and one close of a store of -keys keys, its files dropped from the page cache first)", f)
		}
	}
	if len(s.Threads) > 1 || (len(s.Threads) == 1 && s.Threads[0] != 1) {
		return fmt.Errorf("-threads: -workload reopen opens the store once, on one thread; give -threads 1 or leave it out")
	}
	return nil
}

// OpenFloorReport is the "open_floor" object of a kv reopen result.
type OpenFloorReport struct {
	// FloorSeconds = ReadSeconds + BuildSeconds: the least the Open
	// could have taken (engine.OpenFloor).
	FloorSeconds float64 `json:"floor_seconds"`
	// ReadSeconds is reading every hint file whole from a cold cache;
	// BuildSeconds checking them and building the index in memory.
	ReadSeconds  float64 `json:"read_seconds"`
	BuildSeconds float64 `json:"build_seconds"`
	HintBytes    int64   `json:"hint_bytes"`
	// OpenVsFloor is open_seconds / floor_seconds.
	OpenVsFloor float64 `json:"open_vs_floor"`
}

// runReopen performs one run of the reopen workload (the comment above).
func runReopen(ctx context.Context, cfg runConfig) (*BenchResult, error) {
	open, err := lookupEngineContext(ctx, cfg.engine)
	if err != nil {
		return nil, err
	}
	keys, err := buildKeyTable(ctx, cfg.keys)
	if err != nil {
		return nil, err
	}
	if err := preload(ctx, open, &cfg, keys); err != nil {
		return nil, err
	}
	cache := evictCache(cfg.dir, cfg.engine)

	debug.FreeOSMemory()
	cpu := watchCPU()
	cpu.start()
	start := time.Now()
	store, err := open(cfg.dir, cfg.sync)
	opened := time.Since(start)
	cpu.stop()
	if err != nil {
		return nil, fmt.Errorf("reopen %s in %s: %w", cfg.engine, cfg.dir, err)
	}
	res := &BenchResult{
		Kind: "bench", Engine: cfg.engine, Sync: cfg.sync, Workload: cfg.workload,
		Threads: 1, ValueSize: cfg.valueSize, Keys: cfg.keys, Dist: cfg.dist,
		Ops: 1, Units: 1, WallSeconds: opened.Seconds(),
		Latency: map[string]*LatencySummary{}, Timeline: []TimelinePoint{},
		Cache: cache, OpenSeconds: opened.Seconds(), CPU: cpu.result(),
	}
	res.OpsPerSec, res.UnitsPerSec = 1/res.WallSeconds, 1/res.WallSeconds
	for _, i := range []int{0, cfg.keys - 1} {
		if _, found, err := store.Get(keys.key(uint32(i))); err != nil || !found {
			store.Close()
			return nil, fmt.Errorf("reopen %s: key %d of %d is not back after the reopen (found %v, error %v)", cfg.engine, i, cfg.keys, found, err)
		}
	}
	if ks, ok := store.(kvStore); ok {
		if st := ks.db.Stats(); st.Keys > 0 {
			res.IndexBytesPerKey = float64(st.IndexBytes) / float64(st.Keys)
		}
	}
	res.EngineMetrics = storeStats(store).Metrics
	start = time.Now()
	err = store.Close()
	res.CloseSeconds = time.Since(start).Seconds()
	if err != nil {
		return nil, fmt.Errorf("reopen %s: close: %w", cfg.engine, err)
	}
	if _, ok := store.(kvStore); ok {
		evictCache(cfg.dir, cfg.engine)
		debug.FreeOSMemory()
		f, err := engine.MeasureOpenFloor(cfg.dir)
		if err != nil {
			return nil, fmt.Errorf("reopen %s: the floor: %w", cfg.engine, err)
		}
		res.OpenFloor = &OpenFloorReport{
			FloorSeconds: f.Floor().Seconds(), ReadSeconds: f.Read.Seconds(), BuildSeconds: f.Build.Seconds(),
			HintBytes: f.HintBytes,
		}
		if f.Floor() > 0 {
			res.OpenFloor.OpenVsFloor = opened.Seconds() / f.Floor().Seconds()
		}
	}
	return res, nil
}

// reopenLine is the table's line for one reopen result, "" for any other.
func reopenLine(r *BenchResult) string {
	if r.Workload != reopenWorkload {
		return ""
	}
	s := fmt.Sprintf("reopen: open %.3f s, close %.3f s, with the store's files dropped from the page cache first", r.OpenSeconds, r.CloseSeconds)
	if f := r.OpenFloor; f != nil {
		s += fmt.Sprintf("; floor %.3f s (reading %s of hints %.3f s + building the index %.3f s): open = %.2fx the floor",
			f.FloorSeconds, FormatBytes(f.HintBytes), f.ReadSeconds, f.BuildSeconds, f.OpenVsFloor)
	}
	if r.IndexBytesPerKey > 0 {
		s += fmt.Sprintf("; index %.1f bytes per key, the key included", r.IndexBytesPerKey)
	}
	if c := r.CPU; c != nil && c.Unavailable == "" && c.Cores > 0 {
		s += fmt.Sprintf("; during the open the processors were %.0f%% busy, %.0f%% of them this process's (one core is %.0f%%)",
			100*c.BusyFraction, 100*c.ProcessFraction, 100/float64(c.Cores))
	}
	return s
}

// reopenMedians is the compare table's summary of reopen results: per
// engine, the median open, close and (kv) floor and ratio over its runs;
// "" when rs are not reopen results.
func reopenMedians(rs []*BenchResult) string {
	if len(rs) == 0 || rs[0].Workload != reopenWorkload {
		return ""
	}
	var lines []string
	for _, g := range groupRuns(rs) {
		s := fmt.Sprintf("reopen %s (median of %d): open %.3f s, close %.3f s", g[0].Engine, len(g),
			median(g, func(r *BenchResult) float64 { return r.OpenSeconds }),
			median(g, func(r *BenchResult) float64 { return r.CloseSeconds }))
		if g[0].OpenFloor != nil {
			s += fmt.Sprintf(", floor %.3f s, open = %.2fx the floor",
				median(g, func(r *BenchResult) float64 { return floorOf(r).FloorSeconds }),
				median(g, func(r *BenchResult) float64 { return floorOf(r).OpenVsFloor }))
		}
		if g[0].IndexBytesPerKey > 0 {
			s += fmt.Sprintf(", index %.1f B/key", median(g, func(r *BenchResult) float64 { return r.IndexBytesPerKey }))
		}
		lines = append(lines, s)
	}
	return strings.Join(lines, "\n")
}

// floorOf returns r's floor, or a zero one.
func floorOf(r *BenchResult) OpenFloorReport {
	if r.OpenFloor == nil {
		return OpenFloorReport{}
	}
	return *r.OpenFloor
}
