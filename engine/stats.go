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
	// when it writes a sync mark); FsyncTime is the
	// total time spent in them. Preallocation's syncs are not counted.
	Fsyncs    int64
	FsyncTime time.Duration
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
	// files; Compactions the number of completed Compact calls.
	Keys        int64
	Segments    int
	Compactions int64
}

// counters are the atomically updated parts of Stats.
type counters struct {
	puts, gets, deletes atomic.Int64
	fsyncs, fsyncNanos  atomic.Int64
	bytesWritten        atomic.Int64
	compactions         atomic.Int64
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
	}
	db.commit.mu.Lock()
	s.LastSeq, s.WrittenSeq, s.DurableSeq = db.commit.written, db.commit.toOS, db.commit.durable
	db.commit.mu.Unlock()
	db.mu.RLock()
	s.Keys = int64(len(db.index))
	s.Segments = len(db.segs)
	db.mu.RUnlock()
	return s
}
