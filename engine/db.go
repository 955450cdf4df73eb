package engine

import (
	"bytes"
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

const osCreate = os.O_RDWR | os.O_CREATE | os.O_EXCL

// Defaults and limits for Options.
const (
	DefaultSegmentSize = 64 << 20
	MinSegmentSize     = 4 << 10
	MaxSegmentSize     = 1 << 30
	DefaultPreallocate = 1 << 20
	DefaultGroupDelay  = 200 * time.Microsecond
	DefaultAutoCompact = 0.5
	MinAutoCompact     = 0.05
	DefaultStallDebt   = 0.75
)

// Options configure Open. The zero value is a usable configuration: sync
// "always", 64 MiB segments, the OS filesystem.
type Options struct {
	// Sync is the durability policy; see SyncMode.
	Sync SyncPolicy
	// SegmentSize is the size at which the active segment is sealed and a
	// new one started: 0 means DefaultSegmentSize; otherwise it must be
	// between MinSegmentSize and MaxSegmentSize. A record larger than it
	// gets a segment of its own.
	SegmentSize int64
	// FS is the filesystem; nil means OSFS.
	FS FS
	// Preallocate is how much of the active segment is zero-filled ahead
	// of the writes (see ensureSpace), at most SegmentSize: 0 means
	// DefaultPreallocate, except under "none" and "periodic:D", where it
	// means off; a negative value turns preallocation off (plain appends).
	Preallocate int64
	// GroupDelay bounds how long the group-commit flusher waits for the
	// writers it just released to rejoin before it fdatasyncs: 0 means
	// DefaultGroupDelay, negative means never wait. The flusher never
	// waits longer than its last fdatasync took, either (runFlusher).
	GroupDelay time.Duration
	// NoHints makes Open ignore hint files and the store write none, so
	// reopening rescans every segment. For measuring what hints save.
	NoHints bool
	// WriteBuffer is the size of the write buffer of "none", "batch:N"
	// and "periodic:D" (wbuf.go): records collect in the process and go
	// to the OS in one write(2) at each sync point or when this many
	// bytes are waiting. 0 means DefaultWriteBuffer; a negative value
	// turns the buffer off, so every Put is its own write(2); at most
	// MaxWriteBuffer. "always" and "group" ignore it. A process kill
	// loses what is in the buffer (doc.go, "Three layers").
	WriteBuffer int
	// Ticks, when not nil, replaces the timer of "periodic:D" and the
	// commit delay of "group": each channel received from it is one
	// tick, on which the background syncer writes and fdatasyncs what is
	// pending, and which it closes once that is done; it never syncs on
	// its own (a "group" Put waits for a tick, or for another sync such
	// as rotation's or Close's; "periodic:D"'s D only names the policy).
	// For tests and package crashtest, which place the background syncs
	// between known operations: send a channel, wait for it to close.
	Ticks <-chan chan struct{}
	// AutoCompact turns on background compaction (background.go): when
	// the garbage in the sealed segments (overwritten values, tombstones)
	// reaches this fraction of their bytes, a goroutine rewrites them
	// without it while writers go on. 0 means off (Compact and
	// CompactSealed are then the only compactions); otherwise it must be
	// between MinAutoCompact and 1. DefaultAutoCompact keeps the sealed
	// segments within about twice their live bytes.
	AutoCompact float64
	// CompactRate limits background compaction to this many bytes
	// written per second, so that it leaves the disk to the writers:
	// 0 means unlimited; it must not be negative.
	CompactRate int64
	// StallDebt bounds the compaction debt (Stats.CompactionDebt) with
	// backpressure when AutoCompact is on: a write that finds the debt
	// above StallDebt times the live bytes (or above one SegmentSize,
	// whichever is larger) waits until a background compaction brings
	// it back under (a write stall, counted in Stats.WriteStalls and
	// Stats.StallTime), as an LSM stops writes when its compactions
	// fall behind. It keeps the bytes on disk below about 1 + StallDebt
	// times the live bytes, plus the garbage of the active segment,
	// however fast the writers are. 0 means DefaultStallDebt; negative
	// means writes never wait (the debt then grows as fast as writers
	// outrun compaction). Ignored when AutoCompact is 0.
	StallDebt float64

	// Index is the in-memory index: IndexHash (the zero value) or
	// IndexOrdered, which also keeps the keys in order so that Scan can
	// serve ranges (index.go).
	Index IndexKind

	// clock, when not nil, replaces the real clock for the commit
	// delay and the periodic ticker; set only by this package's tests.
	clock clock
	// buildWorkers, when not 0, is how many goroutines Open rebuilds the
	// index from a hint file on (buildHint), in place of one per core;
	// set only by this package's tests.
	buildWorkers int
}

// entry is where the live value of a key is: 12 bytes of each key's slot
// in the index (keyindex.go).
type entry struct {
	seg  uint32 // segment id
	off  uint32 // offset of the record in the segment
	size uint32 // size of the whole record
}

// DB is an open store. It is safe for concurrent use by many goroutines.
//
// Concurrency model. Writers (Put, Delete) are serialized by writeMu: each
// takes it, appends one record to the active segment with a positioned
// write (under "none", "batch:N" and "periodic:D" to the write buffer,
// wbuf.go, instead), updates the index, and, under "always" or "batch:N",
// fdatasyncs while still holding it. Under "group" the writer only queues
// its record (db.group), releases writeMu and waits; the flusher goroutine
// takes writeMu briefly to write the queued group and update the index,
// then fdatasyncs without it, so the next group queues meanwhile. Every
// fdatasync of a segment runs under syncMu (see syncSegment). Readers
// (Get) take mu for reading and read the record with a positioned read, or
// copy it from the write buffer; they never wait for fdatasync.
// A Get can see a value as soon as its Put appended it, before it is
// durable, exactly as a read of the page cache would. Compact holds
// flushMu and writeMu for its whole run (writers wait; readers go on) and
// mu for the moment it swaps in the new segments.
//
// Lock order: compactMu, then flushMu, then writeMu, then mu or syncMu; committer.mu is
// taken last and alone.
type DB struct {
	dir        string
	fs         FS
	policy     SyncPolicy
	segSize    int64
	prealloc   int64
	groupDelay time.Duration
	noHints    bool
	wbufSize   int                  // the write buffer's flush size; 0 = no buffer (always, group, or turned off)
	clock      clock                // timers for the commit delay and periodic:D
	ticks      <-chan chan struct{} // Options.Ticks: the background syncer's ticks, instead of the clock's

	// buildWorkers is how many goroutines recovery rebuilds the index
	// on (buildHint): Options.buildWorkers, or GOMAXPROCS.
	buildWorkers int

	// flushMu is held by whoever fdatasyncs the active segment without
	// holding writeMu (the flusher, the periodic timer) and by Compact
	// and Close, so that no file is closed under a running fdatasync.
	flushMu sync.Mutex

	// compactMu is held by Compact and CompactSealed for their whole
	// run, and by Close, so that only one compaction runs at a time and
	// no file is closed under one.
	compactMu sync.Mutex
	bg        *compactor // background compaction; nil when off

	// syncMu serializes every fdatasync of a segment with the recording
	// of its outcome in commit (syncSegment, ensureSpace), so that a
	// success can never be counted while a failing fdatasync of the same
	// file is still running.
	syncMu sync.Mutex

	writeMu sync.Mutex // guards active, lastSeq, lastDel, unsynced, buf, markBuf, group, groupIdx, nextID, writeClosed
	active  *segment   // the segment being appended to
	lastSeq uint64     // seq of the last record written
	// lastDel is the key of the last record when that record is a
	// tombstone, else nil. Compact keeps that one tombstone, the only
	// record that carries lastSeq, so a reopen resumes numbering after it.
	lastDel  []byte
	unsynced int    // batch:N: writes since the last fdatasync
	buf      []byte // record encoding buffer
	// markBuf holds the sync mark appendLocked writes before a record
	// (a field, not a local, so that encoding it allocates nothing).
	markBuf [markSize]byte
	// group holds the encoded records queued for group commit, which
	// end at active.size; groupIdx their index updates, in seq order.
	group    []byte
	groupIdx []groupEntry
	nextID   uint32 // id for the next segment to create

	// pending is the write buffer (wbuf.go): encoded records not yet
	// handed to the OS, which belong at pendingOff of segment
	// pendingSeg, the active segment. Changed only while holding both
	// writeMu and mu; read while holding either.
	// Invariant: pendingOff+len(pending) == active.size when pending is
	// not empty.
	pending    []byte
	pendingSeg uint32
	pendingOff int64

	writeClosed bool

	mu     sync.RWMutex        // guards index and segs; closed is set while holding it
	index  *keyIndex           // key -> its live record (keyindex.go)
	segs   map[uint32]*segment // every segment, by id
	closed atomic.Bool         // set by Close before files are closed
	// ordered is the ordered set of the live keys (index.go), nil under
	// the hash index; guarded by mu, as index is.
	ordered   keySet
	indexKind IndexKind

	commit *committer
	stats  counters
}

// Open opens the store in dir, creating dir if needed (and syncing its
// parent, so the new directory survives a power cut), and recovers it:
// every segment is replayed (from its hint file where one is valid) to
// rebuild the index; a torn or corrupt tail of the newest segment is
// truncated so the next write lands right after the good prefix;
// corruption anywhere else is an ErrCorrupt naming the file and offset.
// Everything recovered is durable before Open returns (fdatasynced,
// unless a hint file covering a whole segment shows it already was), so
// Stats().DurableSeq == Stats().LastSeq afterwards.
func Open(dir string, opts Options) (*DB, error) {
	if err := opts.Sync.validate(); err != nil {
		return nil, err
	}
	if a := opts.AutoCompact; a != 0 && (a < MinAutoCompact || a > 1) {
		return nil, fmt.Errorf("engine: AutoCompact %v: must be 0 (off) or between %v and 1 (the garbage fraction of the sealed segments that starts a compaction)", a, MinAutoCompact)
	}
	if opts.CompactRate < 0 {
		return nil, fmt.Errorf("engine: CompactRate %d: must be 0 (unlimited) or a number of bytes per second", opts.CompactRate)
	}
	db := &DB{
		dir:        dir,
		fs:         opts.FS,
		policy:     opts.Sync,
		segSize:    opts.SegmentSize,
		prealloc:   opts.Preallocate,
		groupDelay: opts.GroupDelay,
		noHints:    opts.NoHints,
		clock:      opts.clock,
		ticks:      opts.Ticks,
		index:      newKeyIndex(0),
		segs:       map[uint32]*segment{},
	}
	if db.fs == nil {
		db.fs = OSFS{}
	}
	switch opts.Index {
	case IndexHash:
	case IndexOrdered:
		db.ordered, db.indexKind = newSkipList(), IndexOrdered
	default:
		return nil, fmt.Errorf("%w: Options.Index %d: allowed: IndexHash, IndexOrdered", ErrBadIndex, int(opts.Index))
	}
	if db.clock == nil {
		db.clock = realClock{}
	}
	db.buildWorkers = cmp.Or(opts.buildWorkers, runtime.GOMAXPROCS(0))

	switch {
	case db.segSize == 0:
		db.segSize = DefaultSegmentSize
	case db.segSize < MinSegmentSize || db.segSize > MaxSegmentSize:
		return nil, fmt.Errorf("engine: SegmentSize %d: must be 0 (default) or between %d and %d", db.segSize, MinSegmentSize, MaxSegmentSize)
	}
	switch {
	case db.prealloc == 0 && (db.policy.Mode == SyncNone || db.policy.Mode == SyncPeriodic):
		// Zero-filling makes the fdatasyncs that follow it cheaper, and
		// costs one of its own per chunk under writeMu; "none" and
		// "periodic:D" have no fdatasync on the write path to make
		// cheaper (see ensureSpace).
		db.prealloc = -1
	case db.prealloc == 0:
		db.prealloc = DefaultPreallocate
	}
	if db.groupDelay == 0 {
		db.groupDelay = DefaultGroupDelay
	}
	switch wb := opts.WriteBuffer; {
	case wb > MaxWriteBuffer:
		return nil, fmt.Errorf("engine: WriteBuffer %d: must be at most %d (0 = default %d, negative = off)", wb, MaxWriteBuffer, DefaultWriteBuffer)
	case db.policy.Mode == SyncAlways || db.policy.Mode == SyncGroup || wb < 0:
		db.wbufSize = 0
	case wb == 0:
		db.wbufSize = DefaultWriteBuffer
	default:
		db.wbufSize = wb
	}
	_, err := db.fs.List(dir)
	created := err != nil
	if err := db.fs.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("engine: open %s: %w", dir, err)
	}
	if created {
		// The new directory is an entry in its parent: sync the parent,
		// or a power cut can take the whole store with it. (Ancestors
		// that MkdirAll also created are not synced.)
		if err := db.fs.SyncDir(filepath.Dir(filepath.Clean(dir))); err != nil {
			return nil, fmt.Errorf("engine: sync the parent of %s: %w", dir, err)
		}
	}
	if err := db.recover(); err != nil {
		db.closeFiles()
		return nil, err
	}
	db.commit = newCommitter(db.lastSeq)
	switch db.policy.Mode {
	case SyncGroup:
		db.commit.wg.Add(1)
		go db.runFlusher()
	case SyncPeriodic:
		db.commit.wg.Add(1)
		go db.runPeriodic(db.policy.Interval)
	}
	if opts.AutoCompact > 0 {
		stall := opts.StallDebt
		if stall == 0 {
			stall = DefaultStallDebt
		}
		db.startCompactor(opts.AutoCompact, opts.CompactRate, stall)
	}
	return db, nil
}

// Put stores value under key. When it returns depends on the sync policy
// (see SyncMode). key must be 1..MaxKeySize bytes, value at most
// MaxValueSize bytes.
func (db *DB) Put(key, value []byte) error {
	if len(value) > MaxValueSize {
		return fmt.Errorf("%w: %d bytes, the limit is %d", ErrValueTooLarge, len(value), MaxValueSize)
	}
	return db.write(kindPut, key, value)
}

// Delete removes key by appending a tombstone. Deleting an absent key is
// not an error (it still writes a tombstone, so every Delete costs the
// same). Durability follows the sync policy, as for Put.
func (db *DB) Delete(key []byte) error {
	return db.write(kindDelete, key, nil)
}

// write appends one record and makes it as durable as the policy says.
func (db *DB) write(kind byte, key, value []byte) error {
	if len(key) == 0 || len(key) > MaxKeySize {
		return fmt.Errorf("%w: %d bytes, allowed 1..%d", ErrKeyTooLarge, len(key), MaxKeySize)
	}
	n := int64(recordSize(len(key), len(value)))

	if err := db.waitForCompaction(); err != nil {
		return err
	}
	if err := db.lockForWrite(); err != nil {
		return err
	}
	if err := db.roomForKeysLocked(); err != nil {
		db.writeMu.Unlock()
		return err
	}
	seq, err := db.appendLocked(kind, key, value, n)
	return db.commitLocked(seq, 1, err)
}

// lockForWrite takes writeMu for a write (a Put, a batch, a background
// compaction), or returns why the store takes no more writes (closed, or
// failed by an earlier fdatasync error) with writeMu released.
func (db *DB) lockForWrite() error {
	db.writeMu.Lock()
	if db.writeClosed {
		db.writeMu.Unlock()
		return ErrClosed
	}
	if err := db.commit.failure(); err != nil {
		db.writeMu.Unlock()
		return err
	}
	return nil
}

// roomForKeysLocked returns ErrIndexFull if the index's keys take so
// much memory that a 32-bit arena reference could soon not reach a new
// one (keyindex.go).
//
// REQUIRES: db.writeMu held (only its holder adds keys).
func (db *DB) roomForKeysLocked() error {
	if n := db.index.keyBytes(); n > maxKeyBytes {
		return fmt.Errorf("%w: the keys take %d bytes of memory, the limit is %d", ErrIndexFull, n, maxKeyBytes)
	}
	return nil
}

// commitLocked finishes a write whose records end at seq and counted puts
// Puts (appendErr is the append's error): it makes them as durable as the
// policy says before the write returns (always: an fdatasync now;
// batch:N: one after every N Puts), releases writeMu, and under group
// waits for the commit that covers seq.
// REQUIRES: db.writeMu held; released on return.
func (db *DB) commitLocked(seq uint64, puts int, appendErr error) error {
	if appendErr != nil {
		db.writeMu.Unlock()
		return appendErr
	}
	var err error
	switch db.policy.Mode {
	case SyncAlways:
		err = db.syncSegment(causeCommit, db.active, seq, db.active.size)
	case SyncBatch:
		db.unsynced += puts
		if db.unsynced >= db.policy.N {
			db.unsynced = 0
			if err = db.flushBufferLocked(); err == nil {
				err = db.syncSegment(causeCommit, db.active, seq, db.active.size)
			}
		}
	}
	db.writeMu.Unlock()
	if err != nil {
		return err
	}
	if db.policy.Mode == SyncGroup {
		return db.commit.waitDurable(seq)
	}
	return nil
}

// appendLocked rotates if needed, writes the record at the end of the
// active segment and updates the index. It returns the record's seq.
// It allocates nothing of its own on the way (a Delete keeps a copy of
// its key): it is every Put's path.
//
// REQUIRES: db.writeMu held.
func (db *DB) appendLocked(kind byte, key, value []byte, n int64) (uint64, error) {
	mark, markY, err := db.makeRoomLocked(db.markBuf[:0], n)
	if err != nil {
		return 0, err
	}
	seg := db.active
	rec := record{seq: db.lastSeq + 1, kind: kind, key: key, value: value}
	at := seg.size // where this write starts: the mark, if any
	handed, err := db.placeLocked(seg, at, mark, rec, n)
	if err != nil {
		return 0, err
	}
	db.noteAppendedLocked(seg, at, mark, markY, rec, n, handed)
	if db.buffering() && len(db.pending) >= db.wbufSize {
		if err := db.flushBufferLocked(); err != nil {
			return 0, err
		}
	}
	return rec.seq, nil
}

// makeRoomLocked prepares the active segment for a record of n bytes: it
// returns the sync mark (syncmark.go) to write before the record, appended
// to buf, if an fdatasync of the segment returned since its last mark (nil
// otherwise, and always in a new segment), with the offset y it vouches
// for; it rotates to a new segment when the write does not fit; and it
// zero-fills ahead (ensureSpace). An error fails the store.
//
// REQUIRES: db.writeMu held.
func (db *DB) makeRoomLocked(buf []byte, n int64) (mark []byte, markY int64, err error) {
	markY, due := db.active.markDue()
	if due {
		mark = appendMark(buf, markY)
	}
	if db.active.size > 0 && db.active.size+int64(len(mark))+n > db.segSize {
		if err := db.rotateLocked(); err != nil {
			db.commit.fail(err)
			return nil, 0, db.commit.failure()
		}
		mark = nil
	}
	if err := db.ensureSpace(db.active, int64(len(mark))+n); err != nil {
		db.commit.fail(err)
		return nil, 0, db.commit.failure()
	}
	return mark, markY, nil
}

// placeLocked puts the mark and the record of n bytes where the policy
// says, for seg at offset at: queued for the group-commit flusher, in the
// write buffer, or written to the file now. It returns rec.seq if the
// record is now in the file (handed to the OS), else 0. The index learns
// about a record once it is in the file or the write buffer.
//
// REQUIRES: db.writeMu held.
func (db *DB) placeLocked(seg *segment, at int64, mark []byte, rec record, n int64) (uint64, error) {
	off := at + int64(len(mark)) // the record starts after the mark

	handed := uint64(0) // seq now in the file, if it is
	switch {
	case db.policy.Mode == SyncGroup:
		// Group commit: queue the record; the flusher writes the whole
		// group with one write(2) before its fdatasync (flushGroupLocked).
		// The index learns about it only once it is in the file.
		db.group = append(db.group, mark...)
		db.group = appendRecord(db.group, rec)
		db.groupIdx = append(db.groupIdx, groupEntry{key: bytes.Clone(rec.key), kind: rec.kind, e: entry{seg: seg.id, off: uint32(off), size: uint32(n)}})
	case db.buffering():
		// The write buffer (wbuf.go): the record goes to the OS later,
		// with the others, in one write(2).
		db.appendBufferedLocked(seg, at, mark, rec, n)
	default:
		handed = rec.seq
		db.buf = append(db.buf[:0], mark...)
		db.buf = appendRecord(db.buf, rec)
		if _, err := seg.f.WriteAt(db.buf, at); err != nil {
			// The file may now hold part of the record. Nothing after it
			// can be trusted to land in the right place, so the store
			// stops writing; reopening truncates the partial record.
			db.commit.fail(fmt.Errorf("write %s at offset %d: %w", seg.name, at, err))
			return 0, db.commit.failure()
		}
		db.buf = idle(db.buf)
		db.mu.Lock()
		db.setIndex(rec.key, rec.kind, entry{seg: seg.id, off: uint32(off), size: uint32(n)})
		db.mu.Unlock()
	}
	return handed, nil
}

// noteAppendedLocked records that the mark and the record of n bytes were
// placed in seg at offset at: the segment's size and mark, the store's
// last seq and last Delete, the hint entry, the committer's counts and
// the stats.
//
// REQUIRES: db.writeMu held.
func (db *DB) noteAppendedLocked(seg *segment, at int64, mark []byte, markY int64, rec record, n int64, handed uint64) {
	extra := int64(len(mark))
	if mark != nil {
		seg.noteMark(at, markY)
	}
	seg.size += extra + n
	if seg.size > seg.filled {
		seg.filled = seg.size
	}
	db.lastSeq = rec.seq
	db.lastDel = nil
	if rec.kind == kindDelete {
		db.lastDel = bytes.Clone(rec.key)
	}
	if !db.noHints {
		seg.hint = appendHintEntry(seg.hint, rec.seq, rec.kind, rec.key, uint32(at+extra), uint32(n))
	}
	db.commit.wrote(rec.seq, handed, db.policy.Mode == SyncGroup)
	if rec.kind == kindPut {
		db.stats.puts.Add(1)
	} else {
		db.stats.deletes.Add(1)
	}
	db.stats.bytesWritten.Add(extra + n)
}

// setIndex points key at e, or removes it for a tombstone.
//
// REQUIRES: db.mu held for writing.
func (db *DB) setIndex(key []byte, kind byte, e entry) {
	var old entry
	var had bool
	if kind == kindPut {
		old, had = db.index.put(key, e)
		db.segs[e.seg].live += int64(e.size)
	} else {
		old, had = db.index.remove(key)
	}
	if had {
		db.segs[old.seg].live -= int64(old.size)
	}
	db.noteIndex(key, kind)
}

// groupEntry is the index update of a record queued for group commit.
type groupEntry struct {
	key  []byte // a copy of the key
	kind byte
	e    entry
}

// flushGroupLocked writes the queued group-commit records to the active
// segment with one positioned write and then applies their index updates,
// in order. After it returns (without error) every record up to
// db.lastSeq is in the file.
//
// REQUIRES: db.writeMu held.
func (db *DB) flushGroupLocked() error {
	if len(db.group) == 0 {
		return nil
	}
	seg := db.active
	off := seg.size - int64(len(db.group))
	if _, err := seg.f.WriteAt(db.group, off); err != nil {
		db.commit.fail(fmt.Errorf("write %s at offset %d: %w", seg.name, off, err))
		db.group, db.groupIdx = idle(db.group), db.groupIdx[:0]
		return db.commit.failure()
	}
	db.mu.Lock()
	for _, g := range db.groupIdx {
		db.setIndex(g.key, g.kind, g.e)
	}
	db.mu.Unlock()
	db.group, db.groupIdx = idle(db.group), db.groupIdx[:0]
	db.commit.handed(db.lastSeq)
	return nil
}

// rotateLocked seals the active segment (fdatasync, zero tail cut, hint
// file) and starts
// a new one. The fdatasync happens under every policy, "none" included:
// the hint written next must never describe records a power cut could
// take away.
//
// REQUIRES: db.writeMu held.
func (db *DB) rotateLocked() error {
	old := db.active
	if err := db.flushLocked(); err != nil {
		return err
	}
	if err := db.syncSegment(causeSeal, old, db.lastSeq, old.size); err != nil {
		return err
	}
	if err := db.sealTail(old); err != nil {
		return err
	}
	if err := db.writeHint(old); err != nil {
		return err
	}
	old.hint = nil // written to disk; a sealed segment never needs it again
	seg, err := db.createSegment(db.nextID)
	if err != nil {
		return err
	}
	db.nextID++
	db.mu.Lock()
	db.segs[seg.id] = seg
	db.mu.Unlock()
	db.active = seg
	db.unsynced = 0
	db.kickCompactor()
	return nil
}

// Get returns a copy of the live value of key, or an error wrapping
// ErrNotFound. It verifies the record's checksum on every read. After a
// failed fdatasync, Get of a write it did not make durable fails with an
// error wrapping ErrFailed (writeback.go).
func (db *DB) Get(key []byte) ([]byte, error) {
	db.mu.RLock()
	if db.closed.Load() {
		db.mu.RUnlock()
		return nil, ErrClosed
	}
	e, ok := db.index.get(key)
	if !ok {
		db.mu.RUnlock()
		db.stats.gets.Add(1)
		return nil, ErrNotFound
	}
	seg := db.segs[e.seg]
	buf := make([]byte, e.size)
	var err error
	if !db.readPending(e, buf) { // not still in the write buffer
		_, err = seg.f.ReadAt(buf, int64(e.off))
	}
	db.mu.RUnlock()
	db.stats.gets.Add(1)
	if err != nil {
		if ferr := db.commit.failure(); ferr != nil {
			// The failure truncated what no fdatasync covered (writeback.go).
			return nil, fmt.Errorf("engine: read %s at offset %d: %w: the write was not durable when the store failed, and was dropped: %w", seg.name, e.off, err, ferr)
		}
		return nil, fmt.Errorf("engine: read %s at offset %d: %w", seg.name, e.off, err)
	}
	r, _, err := decodeRecord(buf)
	if err != nil || r.kind != kindPut || string(r.key) != string(key) {
		return nil, fmt.Errorf("%w: %s at offset %d: record does not match the index (%v)", ErrCorrupt, seg.name, e.off, err)
	}
	return r.value, nil
}

// Close makes everything written durable (one last fdatasync, under every
// policy), appends a sync mark for the active segment's end and
// fdatasyncs again (closeMarkLocked, syncmark.go), writes its hint, stops the background
// goroutine and closes the files. It returns the store's sticky error if
// it failed earlier. Calling Close twice returns ErrClosed.
func (db *DB) Close() error {
	db.writeMu.Lock()
	if db.writeClosed {
		db.writeMu.Unlock()
		return ErrClosed
	}
	db.writeClosed = true
	db.writeMu.Unlock()

	db.stopCompactor()
	db.compactMu.Lock() // a CompactSealed still running ends first
	defer db.compactMu.Unlock()
	db.commit.stop()

	db.flushMu.Lock()
	db.writeMu.Lock()
	err := db.commit.failure()
	if err == nil {
		err = db.flushLocked()
	}
	if err == nil {
		err = db.syncSegment(causeSeal, db.active, db.lastSeq, db.active.size)
	}
	if err == nil {
		err = db.closeMarkLocked()
	}
	if err == nil {
		err = db.writeHint(db.active)
	}
	db.writeMu.Unlock()
	db.flushMu.Unlock()

	db.mu.Lock()
	db.closed.Store(true)
	db.mu.Unlock()
	if cerr := db.closeFiles(); err == nil {
		err = cerr
	}
	return err
}

// closeFiles closes every segment file.
func (db *DB) closeFiles() error {
	var first error
	for _, s := range db.segs {
		if err := s.f.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}
