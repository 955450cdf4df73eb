package engine

import (
	"sync/atomic"
	"time"
)

// Stats is a snapshot of the store's counters since Open.
type Stats struct {
	Puts, Gets, Deletes int64
	// Fsyncs counts fdatasync calls that made records durable (the ones
	// a sync policy asks for, plus rotation and Close, which makes two
	// when it writes a sync mark, and the sync of the active segment
	// that starts every compaction): FsyncsBy's Commit and Seal, and
	// one per compaction.
	// FsyncTime is the total time spent in them.
	Fsyncs    int64
	FsyncTime time.Duration
	// FsyncsBy counts every fdatasync the store made, by why it made it;
	// FsyncsBy.Total() is every File.Sync call on a segment or hint file.
	FsyncsBy FsyncCauses
	// BytesWritten counts the bytes appended to segments by Put, Delete
	// and Close: their records, and the 27-byte sync marks written before
	// them and by Close (syncmark.go).
	BytesWritten int64
	// LastSeq is the seq of the last Put or Delete (each gets the next
	// number); DurableSeq is the highest seq covered by an fdatasync
	// that returned. Every write with seq <= DurableSeq survives a power
	// cut. Invariant: DurableSeq <= LastSeq.
	LastSeq, DurableSeq uint64
	// WrittenSeq is the highest seq handed to the OS: its write(2)
	// returned, so a process kill keeps it (the kernel's page cache
	// survives the process), though a power cut may not. Writes above it
	// wait in the process, in the write buffer of "none", "batch:N" and
	// "periodic:D" or the queue of "group", and a kill loses them.
	// Invariant: DurableSeq <= WrittenSeq <= LastSeq.
	WrittenSeq uint64
	// Keys is the number of live keys; Segments the number of segment
	// files; Compactions the number of completed compactions (Compact,
	// CompactSealed and the background ones), BackgroundCompactions
	// those the background goroutine ran (Options.AutoCompact), and
	// CompactionErrors how many of its runs it abandoned or failed.
	Keys     int64
	Segments int
	// IndexBytes is the memory the hash index holds (keyindex.go): its
	// slots and its arena of keys. IndexBytes / Keys is its cost per key,
	// the key included. The ordered index's skip list (IndexOrdered) is
	// not in it.
	IndexBytes            int64
	Compactions           int64
	BackgroundCompactions int64
	CompactionErrors      int64
	// DiskBytes is the bytes of records (and sync marks) in every
	// segment file, zero-filled space excluded; LiveBytes those of the
	// records the index points at. DiskBytes / LiveBytes is the store's
	// space amplification.
	DiskBytes, LiveBytes int64
	// CompactionDebt is the garbage in the sealed segments: bytes a
	// compaction of them would reclaim. SealedBytes is their size.
	CompactionDebt, SealedBytes int64
	// CompactionRead and CompactionWritten count the bytes compactions
	// read and wrote (reads are of up to 1 MiB, so garbage lying between
	// two live records is read with them). (BytesWritten + CompactionWritten) / the bytes of
	// the records the user wrote is the store's write amplification.
	CompactionRead, CompactionWritten int64
	// WriteStalls counts the times writes stopped because the compaction
	// debt passed its bound (Options.StallDebt), and StallTime is how
	// long they stayed stopped in all, from the first write that found
	// the debt too high to the compaction that brought it back under
	// (on the store's clock; a stall still going on counts up to now).
	// Writes wait for a background compaction
	// only then, and for the one fdatasync that starts it.
	WriteStalls int64
	StallTime   time.Duration
}

// FsyncCauses splits a store's fdatasyncs by the reason for each. Only
// Commit is what the sync policy asks for; the others are the price of
// the files the store keeps, paid under every policy, "none" included.
type FsyncCauses struct {
	// Commit: the policy's own: every Put under "always", every group
	// under "group", every Nth write under "batch:N", every timer tick
	// with something to sync under "periodic:D".
	Commit int64
	// Seal: the active segment sealed at rotation, or at Close (whose
	// sync mark costs a second one).
	Seal int64
	// Prealloc: after zero-filling the next chunk of the active segment
	// (ensureSpace). It runs under writeMu: writers queue behind it.
	Prealloc int64
	// Compaction: Compact's sync of the active segment before it copies,
	// and of each output segment before it is installed.
	Compaction int64
	// Hint: each hint file, before it is renamed into place.
	Hint int64
	// Open: recovery's sync of every segment it found.
	Open int64
}

// Total is the number of fdatasyncs of every cause.
func (c FsyncCauses) Total() int64 {
	return c.Commit + c.Seal + c.Prealloc + c.Compaction + c.Hint + c.Open
}

// fsyncCause indexes counters.fsyncsBy; the order is FsyncCauses'.
type fsyncCause int

const (
	causeCommit fsyncCause = iota
	causeSeal
	causePrealloc
	causeCompaction
	causeHint
	causeOpen
	numCauses
)

// counters are the atomically updated parts of Stats.
type counters struct {
	puts, gets, deletes atomic.Int64
	fsyncs, fsyncNanos  atomic.Int64
	fsyncsBy            [numCauses]atomic.Int64
	bytesWritten        atomic.Int64
	compactions         atomic.Int64
	bgCompactions       atomic.Int64
	compactErrors       atomic.Int64
	compactRead         atomic.Int64
	compactWritten      atomic.Int64
	stalls, stallNanos  atomic.Int64
}

// Stats returns the current counters. It is cheap and safe to call at any
// time, also after Close.
func (db *DB) Stats() Stats {
	s := Stats{
		Puts:         db.stats.puts.Load(),
		Gets:         db.stats.gets.Load(),
		Deletes:      db.stats.deletes.Load(),
		Fsyncs:       db.stats.fsyncs.Load(),
		FsyncTime:    time.Duration(db.stats.fsyncNanos.Load()),
		BytesWritten: db.stats.bytesWritten.Load(),
		Compactions:  db.stats.compactions.Load(),

		BackgroundCompactions: db.stats.bgCompactions.Load(),
		CompactionErrors:      db.stats.compactErrors.Load(),
		CompactionRead:        db.stats.compactRead.Load(),
		CompactionWritten:     db.stats.compactWritten.Load(),
		WriteStalls:           db.stats.stalls.Load(),
		FsyncsBy: FsyncCauses{
			Commit:     db.stats.fsyncsBy[causeCommit].Load(),
			Seal:       db.stats.fsyncsBy[causeSeal].Load(),
			Prealloc:   db.stats.fsyncsBy[causePrealloc].Load(),
			Compaction: db.stats.fsyncsBy[causeCompaction].Load(),
			Hint:       db.stats.fsyncsBy[causeHint].Load(),
			Open:       db.stats.fsyncsBy[causeOpen].Load(),
		},
	}
	db.commit.mu.Lock()
	s.LastSeq, s.WrittenSeq, s.DurableSeq = db.commit.written, db.commit.toOS, db.commit.durable
	db.commit.mu.Unlock()
	// The active segment's size moves under writeMu alone (db.go): hold it
	// too, before mu as the lock order says, so DiskBytes reads a size no
	// writer is changing.
	db.writeMu.Lock()
	db.mu.RLock()
	s.Keys = int64(db.index.len())
	s.IndexBytes = db.index.bytes()
	s.Segments = len(db.segs)
	for _, seg := range db.segs {
		s.DiskBytes += seg.size
		s.LiveBytes += seg.live
	}
	db.mu.RUnlock()
	db.writeMu.Unlock()
	s.SealedBytes, s.CompactionDebt, _ = db.debt()
	s.StallTime = db.stallTime()
	return s
}
