package peers

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"

	"kvlab/engine"
	"kvlab/harness"
)

// bboltFile is the name of the database file inside the run's directory.
const bboltFile = "bbolt.db"

// bboltBucket is the single bucket every key lives in.
var bboltBucket = []byte("kv")

// bboltSupported lists the -sync policies OpenBbolt accepts.
const bboltSupported = "always, group, batch:N and none"

// bboltBatchDelay is the adapter's db.MaxBatchDelay under "group", the
// longest a batch waits for more writers once TuneForWriters has set
// MaxBatchSize to the run's writer count. With 16
// closed-loop writers (fillrandom, 3 s runs, ext4 on a virtual disk, a
// machine at load 28-40 with other writers on the disk; three rounds,
// interleaved): bbolt's default 10 ms gave 659-771 ops/s, 1 ms 1,218-2,963,
// 200 µs 927-1,756, and "always" 214-250. A 10 ms delay leaves the disk
// idle while 16 writers wait; 200 µs closes batches before the writers a
// commit released have come back. With MaxBatchSize set to the writers
// as well (TuneForWriters), a batch no longer waits for the delay at all
// when every writer has joined: 16 writers, 3 s runs, load 19-21, rounds
// group, always, always, group twice over: group 2,178-4,139 ops/s,
// always 242-271.
const bboltBatchDelay = time.Millisecond

// OpenBbolt opens (creating if needed) a bbolt database in dir/bbolt.db and
// returns it as a harness.Store that is safe for concurrent use. It is the
// harness.OpenFunc registered as "bbolt".
//
// bbolt commits a read-write transaction by writing the dirty pages,
// fdatasyncing, writing the meta page and fdatasyncing again: two
// fdatasyncs per commit, ordered so that a crash leaves either the old or
// the new meta page pointing at complete pages. Only one read-write
// transaction runs at a time. The policies map onto that as follows.
//
//   - always: one db.Update transaction per Put or Delete. It returns after
//     both fdatasyncs; writers queue on bbolt's writer lock, so 16 writers
//     still pay two fdatasyncs per write, one write at a time.
//   - group: db.Batch. Concurrent Puts are combined into one transaction and
//     share its commit, a real group commit. Unlike kv and Pebble, bbolt
//     collects a batch on a timer: a batch starts when MaxBatchSize (1000)
//     writes are waiting or MaxBatchDelay has passed, so a lone writer
//     waits that long per write. The adapter sets MaxBatchSize to the
//     run's writer count (TuneForWriters), so that a batch commits as soon
//     as every writer has joined it, and MaxBatchDelay to bboltBatchDelay
//     (1 ms) rather than bbolt's default of 10 ms for when fewer have.
//   - batch:N: the adapter keeps one read-write transaction open and commits
//     it (two fdatasyncs) on every Nth Put or Delete. Until then the write
//     lives only in that transaction's memory: unlike kv, where a batch:N
//     Put has handed its bytes to the OS, a bbolt batch:N Put is lost if
//     the process dies, not only if power fails. Gets and scans read
//     through the open transaction so they see those writes; every
//     operation takes the adapter's mutex in this mode.
//   - none: DB.NoSync, one Update per write and no fdatasync. THIS IS
//     UNSAFE: bbolt's crash safety rests on the order of its two
//     fdatasyncs, so a power loss can leave a meta page that points at
//     pages that never reached the disk, a corrupt file rather than a few
//     lost writes. Unlike kv's none, Close does not fdatasync either.
//   - periodic:D: an error. bbolt's only durability point is a commit; the
//     one other tool, DB.Sync under NoSync, gives no ordering between pages
//     and meta page, so a timer could not promise "everything before the
//     last tick survives" without also risking corruption.
//
// Other options: Timeout 1 s waiting for the file lock; page size, freelist
// type and mmap settings are bbolt's defaults.
//
// Which of the probe's fdatasync cases a commit pays: both. bbolt grows its
// file with Truncate, which leaves a hole, so the dirty pages a commit
// writes into new space must allocate blocks (like the probe's append
// case); its meta page is then rewritten in place (the overwrite case),
// each followed by its own fdatasync. The model's probe-fed T_fsync for
// bbolt is the sum, fdatasync_ns + fdatasync_overwrite_ns
// (harness.ProbeFsyncFor).
//
// OpenBbolt does not implement harness.StatsReporter: the fdatasyncs happen
// inside Tx.Commit on bbolt's own file handle, which the adapter cannot
// count or time. (Each always-mode write costs two; the harness's probe
// gives the cost of one.)
func OpenBbolt(dir, syncText string) (harness.Store, error) {
	policy, err := engine.ParseSync(syncText)
	if err != nil {
		return nil, fmt.Errorf("bbolt: %w", err)
	}
	if policy.Mode == engine.SyncPeriodic {
		return nil, unsupportedSync("bbolt", syncText,
			"bbolt only syncs when a transaction commits, and syncing the file on a timer under NoSync can corrupt it on power loss",
			bboltSupported)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("bbolt: %w", err)
	}
	db, err := bolt.Open(filepath.Join(dir, bboltFile), 0o644, &bolt.Options{
		Timeout: time.Second,
		NoSync:  policy.Mode == engine.SyncNone,
	})
	if err != nil {
		return nil, fmt.Errorf("bbolt: open %s: %w", dir, err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists(bboltBucket)
		return err
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("bbolt: create bucket: %w", err)
	}
	db.MaxBatchDelay = bboltBatchDelay
	s := &bboltStore{db: db, mode: policy.Mode}
	if policy.Mode == engine.SyncBatch {
		s.every = policy.N
	}
	return s, nil
}

var (
	_ harness.Store   = (*bboltStore)(nil)
	_ harness.Scanner = (*bboltStore)(nil)
)

// bboltStore adapts a *bolt.DB to harness.Store and harness.Scanner.
// It is safe for concurrent use.
type bboltStore struct {
	db   *bolt.DB
	mode engine.SyncMode // never SyncPeriodic

	// every is N for batch:N, 0 otherwise.
	every int

	// batch:N state.
	mu      sync.Mutex // guards tx and pending; taken by every op in batch mode
	tx      *bolt.Tx   // open read-write tx holding pending writes; nil when none
	pending int        // writes in tx. Invariant: pending < every
}

// TuneForWriters sizes group's batches to the n goroutines that write:
// bbolt starts a batch's commit when MaxBatchSize writes are waiting or
// MaxBatchDelay has passed, so with n closed-loop writers and a batch
// size of n, a commit starts the moment the last writer joins, instead of
// holding the disk idle for the delay. Other policies have nothing to
// tune. It is harness.WriterTuner, called before any write.
func (s *bboltStore) TuneForWriters(n int) string {
	if s.mode != engine.SyncGroup {
		return ""
	}
	s.db.MaxBatchSize = max(n, 1)
	return fmt.Sprintf("bbolt group: db.Batch with MaxBatchSize %d (the writers: a batch commits once all have joined) and MaxBatchDelay %v (when fewer have)", s.db.MaxBatchSize, s.db.MaxBatchDelay)
}

// update runs fn in a read-write transaction chosen by the sync policy.
func (s *bboltStore) update(fn func(b *bolt.Bucket) error) error {
	switch s.mode {
	case engine.SyncGroup:
		// Batch may run fn more than once; Put and Delete are idempotent.
		return s.db.Batch(func(tx *bolt.Tx) error { return fn(tx.Bucket(bboltBucket)) })
	case engine.SyncBatch:
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.tx == nil {
			tx, err := s.db.Begin(true)
			if err != nil {
				return err
			}
			s.tx = tx
		}
		if err := fn(s.tx.Bucket(bboltBucket)); err != nil {
			return err
		}
		s.pending++
		if s.pending < s.every {
			return nil
		}
		return s.commitLocked()
	default: // always, none: one transaction per write
		return s.db.Update(func(tx *bolt.Tx) error { return fn(tx.Bucket(bboltBucket)) })
	}
}

// commitLocked commits the open batch transaction.
// REQUIRES: s.mu held and s.tx != nil.
func (s *bboltStore) commitLocked() error {
	tx := s.tx
	s.tx, s.pending = nil, 0
	return tx.Commit()
}

// view runs fn against a consistent snapshot: the open batch transaction
// when there is one (so reads see pending writes), else a read-only one.
func (s *bboltStore) view(fn func(b *bolt.Bucket) error) error {
	if s.mode == engine.SyncBatch {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.tx != nil {
			return fn(s.tx.Bucket(bboltBucket))
		}
	}
	return s.db.View(func(tx *bolt.Tx) error { return fn(tx.Bucket(bboltBucket)) })
}

// Put stores value under key.
func (s *bboltStore) Put(key, value []byte) error {
	if s.mode == engine.SyncBatch {
		// bbolt keeps the slices until the transaction commits, which in
		// batch mode is after Put returns and the caller may reuse them.
		key, value = bytes.Clone(key), bytes.Clone(value)
	}
	return s.update(func(b *bolt.Bucket) error { return b.Put(key, value) })
}

// Get returns a copy of the value stored under key.
func (s *bboltStore) Get(key []byte) ([]byte, bool, error) {
	var value []byte
	var found bool
	err := s.view(func(b *bolt.Bucket) error {
		// bbolt's slice points into the mmap and is valid only inside the tx.
		if v := b.Get(key); v != nil {
			value, found = bytes.Clone(v), true
		}
		return nil
	})
	return value, found, err
}

// Delete removes key; deleting a missing key is not an error.
func (s *bboltStore) Delete(key []byte) error {
	if s.mode == engine.SyncBatch {
		key = bytes.Clone(key)
	}
	return s.update(func(b *bolt.Bucket) error { return b.Delete(key) })
}

// Scan calls fn for up to limit keys >= start in byte order (limit <= 0
// means no limit), stopping early when fn returns false.
//
// fn gets bbolt's own slices, not copies: they point into the memory map
// (or, in batch:N, into the open transaction's pages) and stay valid for
// the whole transaction, which lasts until Scan returns, so they are valid
// while fn runs, as harness.Scanner promises. fn must copy what it keeps.
func (s *bboltStore) Scan(start []byte, limit int, fn func(key, value []byte) bool) error {
	return s.view(func(b *bolt.Bucket) error {
		c := b.Cursor()
		n := 0
		for k, v := c.Seek(start); k != nil && (limit <= 0 || n < limit); k, v = c.Next() {
			n++
			if !fn(k, v) {
				break
			}
		}
		return nil
	})
}

// Close commits a pending batch:N transaction and closes the file.
func (s *bboltStore) Close() error {
	var err error
	if s.mode == engine.SyncBatch {
		s.mu.Lock()
		if s.tx != nil {
			err = s.commitLocked()
		}
		s.mu.Unlock()
	}
	if cerr := s.db.Close(); err == nil {
		err = cerr
	}
	return err
}
