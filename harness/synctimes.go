package harness

import (
	"os"
	"sync"
	"time"

	"kvlab/engine"
)

// Timing every fdatasync.
//
// A store's counters give the number of fdatasyncs and their total time,
// so on their own they give only the mean: and one slow flush (a journal
// commit, a device cache flush queued behind other work) drags a mean
// anywhere. A question about the tail ("did p99 wait for a flush?") needs
// the typical fdatasync, not the mean one. So the harness times each sync
// call itself, from outside the engine:
//
//   - the kv engine is opened on syncTimingFS, an engine.FS that passes
//     every call through to engine.OSFS and times each File.Sync (the
//     fdatasync(2) of a segment file) around the call — the engine's write
//     path is the same code, on the same files;
//   - the pebble adapter (package peers) times the Sync, SyncData and full
//     SyncTo calls its counting filesystem already counts;
//   - bbolt syncs inside its own commit, through no seam the harness can
//     wrap: its result says fsync_samples 0 (not timed).
//
// The runner arms the recorder when the wall clock starts and disarms it
// when the clock stops, so the figures cover the syncs that ran in the
// timed region (and every sync that ended in it: a periodic flush that
// began just before the clock started is counted; one that ends after
// the clock stopped is not). It arms before reading the store's counters
// and disarms before reading them again, and the engine counts a sync
// after it returns, so a sync is in both or in neither (unless it ends
// in the nanoseconds between the two). For kv this includes the
// fdatasyncs that follow preallocating the active segment, which the
// engine's own fsync count leaves out, so fsync_samples may exceed
// fsyncs; fsyncs_by_cause accounts for every one, and sums to
// fsync_samples.

// SyncTimer is implemented by stores whose every data sync the harness
// times. The runner reads it; a store returns the same *SyncTimes for its
// whole life.
type SyncTimer interface {
	SyncTimes() *SyncTimes
}

// SyncTimes records the latency of each sync call while armed. Safe for
// concurrent use: peers may sync several files at once.
type SyncTimes struct {
	mu  sync.Mutex // guards on and rec
	on  bool       // recording: between arm and disarm
	rec *recorder  // this run's latencies; exact up to DefaultExactCap
}

// Observe records one sync call that took d. Outside the timed region
// (preload, warmup, Close) it does nothing.
func (t *SyncTimes) Observe(d time.Duration) {
	t.mu.Lock()
	if t.on {
		t.rec.record(int64(d))
	}
	t.mu.Unlock()
}

// arm starts recording into a fresh recorder. Its first chunk of exact
// slots is reserved here, before the clock starts.
func (t *SyncTimes) arm() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.rec = newRecorder(newSampleBudget(DefaultExactCap))
	t.rec.reserve(firstChunk)
	t.on = true
}

// disarm stops recording and summarizes what was recorded: nearest-rank
// percentiles over every sample (exact) while there were at most
// DefaultExactCap of them.
func (t *SyncTimes) disarm() LatencySummary {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.on = false
	if t.rec == nil {
		return LatencySummary{Exact: true}
	}
	return summarize([]*recorder{t.rec}, false)
}

// syncTimingFS is an engine.FS (engine.OSFS, or a simulated disk's
// MemFS: simulate.go) with each File.Sync timed into times. It is safe
// for concurrent use, as both are.
type syncTimingFS struct {
	engine.FS
	times *SyncTimes
}

// OpenFile implements engine.FS: the file's Sync is timed.
func (fs syncTimingFS) OpenFile(name string, flag int, perm os.FileMode) (engine.File, error) {
	f, err := fs.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return syncTimingFile{File: f, times: fs.times}, nil
}

// syncTimingFile times Sync, the fdatasync of a data file.
type syncTimingFile struct {
	engine.File
	times *SyncTimes
}

func (f syncTimingFile) Sync() error {
	start := time.Now()
	var dirty int64 // what the flush carries, on a simulated disk
	if d, ok := f.File.(interface{ takeDirty() int64 }); ok {
		dirty = d.takeDirty()
	}
	simulateFlush(dirty)
	err := f.File.Sync()
	f.times.Observe(time.Since(start))
	return err
}
