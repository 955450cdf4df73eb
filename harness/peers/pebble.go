package peers

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"kvlab/engine"
	"kvlab/harness"
)

// Pebble's memory and concurrency are kept small: the lab runs on laptops
// and 2-core servers beside the other engines, and the workloads are a few
// hundred thousand small keys. These are also Pebble's own defaults, set
// here so that a change of default upstream cannot change the measurement.
const (
	pebbleCacheSize    = 8 << 20 // block cache, bytes
	pebbleMemTableSize = 4 << 20 // one memtable, bytes; a full one is flushed to an sstable
	pebbleCompactions  = 1       // concurrent compactions
)

// OpenPebble opens (creating if needed) a Pebble database in dir and returns
// it as a harness.Store that is safe for concurrent use. It is the
// harness.OpenFunc registered as "pebble".
//
// Every Pebble write goes to its write-ahead log. A pebble.Sync write
// returns after an fdatasync of the WAL covers it; the WAL's LogWriter has
// one flusher goroutine, and a sync it runs covers every write queued
// before it, which is group commit (kv's group policy is modelled on it).
// A pebble.NoSync write returns once its record is queued in the LogWriter's
// buffer; the flusher hands it to the OS shortly after. The policies map
// onto that as follows.
//
//   - always: pebble.Sync writes, one at a time (an adapter mutex), so each
//     Put or Delete gets its own WAL fdatasync as in kv's always. Without
//     the mutex Pebble would group-commit concurrent writers, which is the
//     group policy, not this one.
//   - group: concurrent pebble.Sync writes; Pebble's LogWriter shares one
//     fdatasync among all writers waiting on it.
//   - batch:N: every Nth Put or Delete (counted across all writers) is a
//     pebble.Sync write, the rest are pebble.NoSync. The WAL is sequential,
//     so the Nth write's fdatasync also covers the N-1 before it. (With
//     several writers, two such sync writes in flight at once may share
//     one fdatasync, as under group.)
//   - periodic:D: pebble.NoSync writes, and a goroutine that every D
//     appends an empty pebble.Sync record to the WAL (DB.LogData), whose
//     fdatasync covers every write before it. (When Pebble switches to a
//     new WAL file it syncs and closes the old one first, so writes in
//     earlier files are covered too.) The first failure of that sync is
//     returned by every later Put and Delete.
//   - none: pebble.NoSync; the WAL is synced only when a file is closed.
//
// Options (see the constants above): 8 MiB block cache, 4 MiB memtable,
// one compaction at a time, everything else Pebble's defaults. Pebble's
// informational log lines are dropped; errors go to the standard logger.
//
// Which of the probe's fdatasync cases a WAL sync pays: append. Pebble
// preallocates WAL space with FALLOC_FL_KEEP_SIZE, which reserves blocks
// but leaves the file's size to grow with every write, so each sync
// commits a new size, as the probe's appending case does; only a recycled
// WAL file (after a memtable flush) is written in place. The model's
// probe-fed T_fsync for pebble is therefore fdatasync_ns
// (harness.ProbeFsyncFor).
//
// StoreStats counts every fdatasync or fsync Pebble issues, on the WAL and
// also on the sstables and MANIFEST written by memtable flushes and
// compactions, and every byte it writes to any file, so BytesWritten
// includes Pebble's write amplification.
func OpenPebble(dir, syncText string) (harness.Store, error) {
	policy, err := engine.ParseSync(syncText)
	if err != nil {
		return nil, fmt.Errorf("pebble: %w", err)
	}
	fs := &countingFS{FS: vfs.Default}
	stalls := new(atomic.Int64)
	wal := &walWatch{opened: time.Now()}
	db, err := pebble.Open(dir, &pebble.Options{
		FS:                         fs,
		CacheSize:                  pebbleCacheSize,
		MemTableSize:               pebbleMemTableSize,
		CompactionConcurrencyRange: func() (int, int) { return 1, pebbleCompactions },
		Logger:                     quietLogger{},
		EventListener: &pebble.EventListener{
			WriteStallBegin: func(pebble.WriteStallBeginInfo) { stalls.Add(1) },
			WALCreated:      wal.created,
		},
	})
	if err != nil {
		return nil, fmt.Errorf("pebble: open %s: %w", dir, err)
	}
	s := &pebbleStore{db: db, fs: fs, policy: policy, stalls: stalls, wal: wal}
	if policy.Mode == engine.SyncPeriodic {
		s.periodic = startPeriodic(policy.Interval, "pebble: periodic WAL sync", func() error {
			return db.LogData(nil, pebble.Sync)
		})
	}
	return s, nil
}

var (
	_ harness.Store         = (*pebbleStore)(nil)
	_ harness.Scanner       = (*pebbleStore)(nil)
	_ harness.StatsReporter = (*pebbleStore)(nil)
)

// pebbleStore adapts a *pebble.DB to harness.Store, harness.Scanner and
// harness.StatsReporter. It is safe for concurrent use.
type pebbleStore struct {
	db     *pebble.DB
	fs     *countingFS
	policy engine.SyncPolicy

	serial sync.Mutex   // always: held across each write so writes sync one at a time
	writes atomic.Int64 // batch:N: writes so far; the Nth, 2Nth, ... sync

	periodic *periodicSyncer // periodic:D only: the timer that syncs the WAL
	stalls   *atomic.Int64   // write stalls Pebble's event listener reported
	wal      *walWatch       // WAL files created and recycled
}

// walWatch counts the WAL files Pebble creates and how many of them reuse
// an old WAL's file: once memtables have been flushed, Pebble recycles
// the obsolete log instead of creating a new one, so its syncs overwrite
// blocks the file already has instead of growing it (the probe's
// overwriting case, cheaper than appending on most filesystems). A short
// run on a fresh store never gets there; reused says when a long one did.
// Safe for concurrent use.
type walWatch struct {
	opened   time.Time    // when the store was opened
	files    atomic.Int64 // WAL files created, recycled or not
	recycled atomic.Int64 // of them, made by reusing an old WAL file
	reused   atomic.Int64 // ns after opened of the first recycled one; 0 = none yet
}

// created is Pebble's WALCreated event.
func (w *walWatch) created(info pebble.WALCreateInfo) {
	if info.Err != nil {
		return
	}
	w.files.Add(1)
	if info.RecycledFileNum != 0 {
		w.recycled.Add(1)
		w.reused.CompareAndSwap(0, max(int64(time.Since(w.opened)), 1))
	}
}

// write applies one Set or Delete with the write options the policy asks for.
func (s *pebbleStore) write(apply func(*pebble.WriteOptions) error) error {
	switch s.policy.Mode {
	case engine.SyncAlways:
		s.serial.Lock()
		defer s.serial.Unlock()
		return apply(pebble.Sync)
	case engine.SyncGroup:
		return apply(pebble.Sync)
	case engine.SyncBatch:
		if s.writes.Add(1)%int64(s.policy.N) == 0 {
			return apply(pebble.Sync)
		}
		return apply(pebble.NoSync)
	case engine.SyncPeriodic:
		if err := s.periodic.err(); err != nil {
			return err
		}
		return apply(pebble.NoSync)
	default: // none
		return apply(pebble.NoSync)
	}
}

// Put stores value under key.
func (s *pebbleStore) Put(key, value []byte) error {
	return s.write(func(o *pebble.WriteOptions) error { return s.db.Set(key, value, o) })
}

// Get returns a copy of the value stored under key.
func (s *pebbleStore) Get(key []byte) ([]byte, bool, error) {
	v, closer, err := s.db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	value := bytes.Clone(v) // v is valid only until closer.Close
	return value, true, closer.Close()
}

// Delete removes key; deleting a missing key is not an error.
func (s *pebbleStore) Delete(key []byte) error {
	return s.write(func(o *pebble.WriteOptions) error { return s.db.Delete(key, o) })
}

// Scan calls fn for up to limit keys >= start in byte order (limit <= 0
// means no limit), stopping early when fn returns false.
//
// fn gets the iterator's own slices, not copies: Pebble keeps them valid
// until the iterator next moves (it.Next) or closes, and both happen only
// after fn has returned, so they are valid while fn runs, as
// harness.Scanner promises. fn must copy what it keeps.
func (s *pebbleStore) Scan(start []byte, limit int, fn func(key, value []byte) bool) error {
	if len(start) == 0 {
		// No bound: an empty but non-nil bound trips an index check in
		// Pebble's invariant-checking builds (go test -race).
		start = nil
	}
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: start})
	if err != nil {
		return err
	}
	n := 0
	for ok := it.First(); ok && (limit <= 0 || n < limit); ok = it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			it.Close()
			return err
		}
		n++
		if !fn(it.Key(), v) {
			break
		}
	}
	if err := it.Error(); err != nil {
		it.Close()
		return err
	}
	return it.Close()
}

// SyncTimes times the same syncs StoreStats counts.
func (s *pebbleStore) SyncTimes() *harness.SyncTimes { return &s.fs.times }

// StoreStats reports every sync and every written byte Pebble issued
// through its filesystem since Open.
func (s *pebbleStore) StoreStats() harness.StoreStats {
	m := s.db.Metrics()
	total := m.Total()
	st := harness.StoreStats{
		Fsyncs:       s.fs.syncs.Load(),
		FsyncTime:    time.Duration(s.fs.syncNanos.Load()),
		BytesWritten: s.fs.written.Load(),
		StoredBytes:  s.fs.written.Load(),
		// Pebble's own metrics (db.Metrics), as its LSM shape tells them.
		Metrics: map[string]int64{
			"compaction_debt_bytes":    int64(m.Compact.EstimatedDebt),
			"l0_files":                 m.Levels[0].TablesCount,
			"write_stalls":             s.stalls.Load(),
			"wal_bytes_written":        int64(m.WAL.BytesWritten),
			"flush_bytes_written":      int64(total.TableBytesFlushed),
			"compaction_bytes_written": int64(total.TableBytesCompacted),
			"compactions":              m.Compact.Count,
			"compactions_in_progress":  m.Compact.NumInProgress,
			"disk_bytes":               int64(m.DiskSpaceUsage()),
			"read_amp":                 int64(m.ReadAmp()),
			"wal_files_created":        s.wal.files.Load(),
			"wal_files_recycled":       s.wal.recycled.Load(),
		},
	}
	if at := s.wal.reused.Load(); at > 0 {
		st.Metrics["wal_reuse_started_ms"] = at / 1e6
	}
	return st
}

// Close stops the periodic syncer, if any, and closes the database, which
// syncs the WAL.
func (s *pebbleStore) Close() error {
	s.periodic.stop()
	err := s.db.Close()
	if perr := s.periodic.err(); perr != nil && err == nil {
		err = perr
	}
	return err
}

// quietLogger drops Pebble's informational messages, which would otherwise
// interleave with the harness's table on stderr, and keeps its errors.
type quietLogger struct{}

func (quietLogger) Infof(format string, args ...any)  {}
func (quietLogger) Errorf(format string, args ...any) { pebble.DefaultLogger.Errorf(format, args...) }
func (quietLogger) Fatalf(format string, args ...any) { pebble.DefaultLogger.Fatalf(format, args...) }
