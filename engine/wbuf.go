package engine

import "fmt"

// The write buffer of "none", "batch:N" and "periodic:D".
//
// Under those policies a Put does not call write(2): appendLocked encodes
// its record at the end of db.pending, a buffer in the process, and points
// the index at the place in the active segment the record will occupy.
// flushBufferLocked hands the whole buffer to the OS with one positioned
// write:
//
//   - at each sync point, right before the fdatasync (batch:N's Nth
//     write, periodic:D's timer, rotation, Compact and Close), so an
//     fdatasync always covers every record appended before it;
//   - when the buffer holds Options.WriteBuffer bytes or more.
//
// Get reads a record that is still in the buffer from the buffer (see Get),
// so a Put is visible to every later Get, as before. The alternative, a
// Get that hands the buffer to the OS and then reads the file, is slower
// for both sides: each such Get costs a write(2) and takes writeMu, and
// the Puts lose their batching. BenchmarkGetWhileBuffering, one writer
// and one reader of the newest key under "none" (ext4 on a virtual disk,
// 2 cores, load average 10, 3 runs of 2 s): reading the buffer 535-896k
// Gets/s beside 132-195k Puts/s; flushing first 399-564k Gets/s beside
// 148-162k Puts/s.
//
// The buffer's size: BenchmarkWriteBuffer alternates chunks of Puts into
// stores with the buffer off and at 4 KiB to 1 MiB (same conditions, 3
// runs): off 185-305k Puts/s; 4 KiB 278-431k, 16 KiB 259-504k, 64 KiB
// 348-384k, 256 KiB 232-423k, 1 MiB 309-519k. Against "off" in the same
// run the buffer is worth 1.1-2.8x; which size above 4 KiB is fastest is
// within the noise. doc.go says why the default is 64 KiB.
//
// "always" and "group" never use it: an "always" Put writes and
// fdatasyncs its own record, and the group-commit flusher already writes a
// whole group with one write(2) (flushGroupLocked).
//
// What the buffer costs is durability against a process kill: a record in
// the buffer is in no file yet, so SIGKILL (or a panic, or os.Exit) loses
// it, where a direct write(2) would have left it in the kernel's page
// cache. Stats().WrittenSeq tells the two apart (doc.go, "Three layers").

// Defaults and limits for Options.WriteBuffer.
const (
	DefaultWriteBuffer = 64 << 10
	MaxWriteBuffer     = 64 << 20
)

// maxIdleBuffer is the most capacity the encoding buffer of "always"
// (db.buf) and the commit-group queue of "group" (db.group) keep once
// what they held is written: one maximum-size record grows them to
// 16 MiB, which a store writing small records would otherwise keep for
// good. A record larger than this costs its own allocation each time.
const maxIdleBuffer = DefaultWriteBuffer

// idle returns b emptied for reuse, or nil if its capacity is above
// maxIdleBuffer, so that the memory of one large record is given back.
func idle(b []byte) []byte {
	if cap(b) > maxIdleBuffer {
		return nil
	}
	return b[:0]
}

// buffering reports whether a Put under the policy goes through the write
// buffer.
func (db *DB) buffering() bool { return db.wbufSize > 0 }

// appendBufferedLocked adds the encoded sync mark (nil: none) and record
// to the write buffer, and the record to the index. They belong at offset
// at of segment seg, which must be where the buffer ends.
//
// REQUIRES: db.writeMu held.
func (db *DB) appendBufferedLocked(seg *segment, at int64, mark []byte, rec record, n int64) {
	db.mu.Lock()
	if len(db.pending) == 0 {
		db.pendingSeg, db.pendingOff = seg.id, at
	}
	db.pending = append(db.pending, mark...)
	db.pending = appendRecord(db.pending, rec)
	off := at + int64(len(mark))
	db.setIndex(rec.key, rec.kind, entry{seg: seg.id, off: uint32(off), size: uint32(n)})
	db.mu.Unlock()
}

// flushBufferLocked hands the write buffer to the OS with one positioned
// write. After it returns without error every record up to db.lastSeq is
// in the file (written, not yet durable). On error the store has failed
// and the buffer is kept, so Get still sees what Put acknowledged.
//
// REQUIRES: db.writeMu held.
func (db *DB) flushBufferLocked() error {
	if len(db.pending) == 0 {
		return nil
	}
	seg := db.active
	if seg.id != db.pendingSeg || db.pendingOff+int64(len(db.pending)) != seg.size {
		panic(fmt.Sprintf("engine: broken invariant: write buffer holds %d bytes for segment %d at offset %d, the active segment %d ends at %d",
			len(db.pending), db.pendingSeg, db.pendingOff, seg.id, seg.size))
	}
	// Readers may copy from db.pending meanwhile (Get holds mu for
	// reading); nothing changes it until this goroutine, which holds
	// writeMu, does.
	if _, err := seg.f.WriteAt(db.pending, db.pendingOff); err != nil {
		db.commit.fail(fmt.Errorf("write %s at offset %d: %w", seg.name, db.pendingOff, err))
		return db.commit.failure()
	}
	db.mu.Lock()
	db.pending = db.pending[:0]
	if cap(db.pending) > 2*db.wbufSize {
		// One huge record grew it; do not keep the memory.
		db.pending = make([]byte, 0, db.wbufSize)
	}
	db.mu.Unlock()
	db.commit.handed(db.lastSeq)
	return nil
}

// flushLocked hands every record appended so far to the OS: the write
// buffer, or the queued group-commit records.
//
// REQUIRES: db.writeMu held.
func (db *DB) flushLocked() error {
	if err := db.flushBufferLocked(); err != nil {
		return err
	}
	return db.flushGroupLocked()
}

// readPending copies the record at e from the write buffer into buf and
// reports whether it was there.
//
// REQUIRES: db.mu held (for reading or writing).
func (db *DB) readPending(e entry, buf []byte) bool {
	if len(db.pending) == 0 || e.seg != db.pendingSeg || int64(e.off) < db.pendingOff {
		return false
	}
	start := int64(e.off) - db.pendingOff
	return copy(buf, db.pending[start:]) == len(buf)
}
