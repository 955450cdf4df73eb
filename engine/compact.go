package engine

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// Compact rewrites the live records of every segment into new segments and
// deletes the old ones, dropping overwritten records and the tombstones
// (all but one: when the last write was a Delete, its tombstone is kept,
// because it carries the highest sequence number).
//
// It is an explicit call that blocks writers (Put and Delete wait) for its
// whole run; Get keeps working until the short moment the new segments are
// swapped in.
//
// Why it cannot resurrect a deleted key: every segment is compacted at
// once, so a tombstone is dropped only together with every older record of
// its key. The order of its steps keeps that true across a crash; each
// step says which promise it keeps:
//
//   - The active segment is fdatasynced, so every record the copy reads
//     is on the disk (Compact itself).
//   - copyLive copies the live records into NNN.seg.tmp files with ids
//     above every existing segment (compactWriter), and compactWriter.sync
//     fdatasyncs them. A crash up to here leaves only .tmp files, which
//     Open deletes.
//   - installCompacted renames them to NNN.seg, fdatasyncs the directory,
//     and only then writes their hints.
//   - swapCompacted creates a new, empty active segment after them and
//     points the index at the new segments.
//   - removeOld deletes the old segments oldest first, with a directory
//     sync after each removal, so that the disk sees them go in that
//     order too. A crash in the middle leaves a suffix of them: a
//     tombstone's segment is never older than the segments holding the
//     records it deleted, so if any record of a deleted key survives, so
//     does its tombstone, and replaying the old segments before the new
//     ones still ends with the key deleted.
//
// An error before installCompacted starts leaves the store as it was. An
// error from then on makes the store fail (ErrFailed) until it is
// reopened.
func (db *DB) Compact() error {
	db.compactMu.Lock()
	defer db.compactMu.Unlock()
	db.flushMu.Lock()
	defer db.flushMu.Unlock()
	db.writeMu.Lock()
	defer db.writeMu.Unlock()
	if db.writeClosed {
		return ErrClosed
	}
	if err := db.commit.failure(); err != nil {
		return err
	}
	// Everything written so far becomes durable before the copy reads it.
	if err := db.flushLocked(); err != nil {
		return err
	}
	if err := db.syncSegment(causeCompaction, db.active, db.lastSeq, db.active.size); err != nil {
		return err
	}
	lives, old := db.compactSources()

	w := &compactWriter{db: db, nextID: db.nextID}
	var tomb *record
	if db.lastDel != nil {
		// The last write was a Delete: its tombstone is the only record
		// with seq lastSeq. Keep it (deleting an absent key is harmless)
		// so that a reopen resumes numbering after lastSeq.
		tomb = &record{seq: db.lastSeq, kind: kindDelete, key: db.lastDel}
	}
	copies, err := db.copyLive(w, lives, db.segs, tomb)
	if err != nil {
		return w.abandon(err)
	}
	newIndex := newKeyIndex(len(lives.lives))
	for i := range lives.lives {
		newIndex.put(lives.key(i), copies[i])
	}
	if err := w.sync(); err != nil {
		return w.abandon(err)
	}
	// Point of no return: from here an error leaves a mix of old and new
	// files that only a reopen sorts out.
	if err := db.installCompacted(w.outs); err != nil {
		return db.compactFailed(err)
	}
	if err := db.swapCompacted(w.outs, newIndex, w.nextID); err != nil {
		return db.compactFailed(err)
	}
	closeErrs, err := db.removeOld(old)
	if err != nil {
		return db.compactFailed(err)
	}
	db.stats.compactions.Add(1)
	return errors.Join(closeErrs...)
}

// live is where a key's live record is, and where the key is in the
// arena of the liveSet it belongs to.
type live struct {
	e          entry
	koff, klen uint32 // the key: liveSet.keys[koff : koff+klen]
}

// liveSet is the live records a compaction copies, with their keys in
// one arena: two allocations, and nothing for the garbage collector to
// chase, where a string per key would make a million objects for a
// million keys, and collections that slow the writers down. The
// background compaction reuses one (compactor.scratch), so that it
// allocates them only when the store grows.
type liveSet struct {
	keys   []byte
	lives  []live
	copies []entry // copyLive's result, kept here so that it can be reused
}

// reset empties s, keeping its memory for the next compaction.
func (s *liveSet) reset() {
	s.keys, s.lives, s.copies = s.keys[:0], s.lives[:0], s.copies[:0]
}

// add appends key k, whose live record is at e.
func (s *liveSet) add(k []byte, e entry) {
	s.lives = append(s.lives, live{e: e, koff: uint32(len(s.keys)), klen: uint32(len(k))})
	s.keys = append(s.keys, k...)
}

// key returns the key of lives[i], in the arena: do not modify it.
func (s *liveSet) key(i int) []byte {
	l := s.lives[i]
	return s.keys[l.koff : l.koff+l.klen : l.koff+l.klen]
}

// compactSources returns the live records, in file order so the copy
// reads sequentially, and the segments they are in now, oldest first.
//
// REQUIRES: db.writeMu held.
func (db *DB) compactSources() (*liveSet, []*segment) {
	db.mu.RLock()
	lives := &liveSet{keys: make([]byte, 0, db.index.keyBytes()), lives: make([]live, 0, db.index.len())}
	db.index.each(func(k []byte, e entry) {
		lives.add(k, e)
	})
	old := make([]*segment, 0, len(db.segs))
	for _, s := range db.segs {
		old = append(old, s)
	}
	db.mu.RUnlock()
	sortByPlace(lives.lives)
	slices.SortFunc(old, func(a, b *segment) int { return int(a.id) - int(b.id) })
	return lives, old
}

// copyLive copies each live record, checksum verified, from its segment
// in segs into w, and then tomb, the last write's tombstone, if it is not
// nil. It returns where each copy landed: copies[i] is the copy of
// lives.lives[i]. They are in file order, so it reads each segment forwards,
// in reads of compactReadSize (chunkReader), not one read per record.
//
// REQUIRES: the segments in segs stay open (db.compactMu held).
func (db *DB) copyLive(w *compactWriter, lives *liveSet, segs map[uint32]*segment, tomb *record) (copies []entry, err error) {
	copies = slices.Grow(lives.copies[:0], len(lives.lives))[:len(lives.lives)]
	lives.copies = copies
	var in chunkReader
	for i, l := range lives.lives {
		src := segs[l.e.seg]
		rec, err := in.read(db, src, int64(l.e.off), int64(l.e.size))
		if err != nil {
			return nil, fmt.Errorf("read %s at offset %d: %w", src.name, l.e.off, err)
		}
		r, _, err := decodeRecord(rec)
		if err != nil || r.kind != kindPut || !bytes.Equal(r.key, lives.key(i)) {
			return nil, fmt.Errorf("%w: %s at offset %d: %v", ErrCorrupt, src.name, l.e.off, err)
		}
		e, err := w.emit(rec, r, l.e.seg)
		if err != nil {
			return nil, err
		}
		w.cur.live += int64(e.size)
		copies[i] = e
		if err := w.yield(); err != nil {
			return nil, err
		}
	}
	if tomb != nil {
		if _, err := w.emit(appendRecord(nil, *tomb), *tomb, 0); err != nil {
			return nil, err
		}
	}
	return copies, nil
}

// compactReadSize is how many bytes of a segment chunkReader reads at a
// time.
const compactReadSize = 1 << 20

// chunkReader reads the records of a compaction's inputs in file order
// through one buffer: a record inside the bytes last read is served from
// them, else the buffer is refilled from the record's offset with one
// read of compactReadSize (or the record's size, if larger), cut at the
// segment's end. Garbage between two live records less than a buffer
// apart is read with them and counted in Stats.CompactionRead; a longer
// run of garbage is skipped. Not safe for concurrent use.
type chunkReader struct {
	seg *segment // the segment buf holds bytes of; nil before the first read
	off int64    // buf's offset in seg
	buf []byte
}

// read returns the size bytes at off in seg. The slice is valid until
// the next call.
func (c *chunkReader) read(db *DB, seg *segment, off, size int64) ([]byte, error) {
	if c.seg != seg || off < c.off || off+size > c.off+int64(len(c.buf)) {
		n := min(max(size, compactReadSize), max(seg.size-off, size))
		if int64(cap(c.buf)) < n {
			c.buf = make([]byte, n)
		}
		c.seg, c.off, c.buf = seg, off, c.buf[:n]
		if _, err := seg.f.ReadAt(c.buf, off); err != nil {
			c.seg = nil
			return nil, err
		}
		db.stats.compactRead.Add(n)
	}
	return c.buf[off-c.off : off-c.off+size], nil
}

// compactFlushSize is how many bytes compactWriter collects before it
// writes them to its output with one positioned write.
const compactFlushSize = 1 << 20

// compactWriter writes compaction's output: records appended in order to
// NNN.seg.tmp files of at most the store's segment size (a record larger
// than that gets a file of its own), each with its hint entries. It owns
// the output being written, the bytes not yet written to it and its hint.
// It is not safe for concurrent use: Compact owns it.
type compactWriter struct {
	db     *DB
	outs   []*segment // every output file, in id order; the last one is cur
	cur    *segment   // the output being written; nil before the first record
	buf    []byte     // records not yet written, which belong at cur.size
	nextID uint32     // id for the next output (or, afterwards, segment)

	// inPlace, for a compaction of the sealed segments (background.go),
	// lists the ids of the input segments, oldest first: output i takes
	// the id of input i instead of nextID, and a record never lands in
	// an output later than the input it came from (pos is each input's
	// place in inPlace).
	inPlace []uint32
	pos     map[uint32]int

	// quit, when not nil, cancels the copy (Close); rate, when > 0,
	// paces it at that many bytes per second from start (yield).
	quit    <-chan struct{}
	rate    int64
	start   time.Time
	written int64 // bytes emitted so far
}

// errRunsAhead is the error of a compaction in place whose output would
// take the id of a segment later than the input a record came from: the
// segments on disk were written with a larger SegmentSize than the
// store's. It is abandoned before anything was renamed.
var errRunsAhead = errors.New("the output runs ahead of its input (segments larger than SegmentSize)")

// errCancelled is the error of a background compaction stopped by Close.
var errCancelled = errors.New("cancelled by Close")

// emit appends one encoded record to the output, starting a new output
// file when the current one is full, and returns where the record landed.
// from is the id of the segment the record was copied from (0 for the
// last write's tombstone).
func (w *compactWriter) emit(rec []byte, r record, from uint32) (entry, error) {
	n := int64(len(rec))
	if end := w.end(); w.cur == nil || (end > 0 && end+n > w.db.segSize) {
		if err := w.next(); err != nil {
			return entry{}, err
		}
	}
	if w.inPlace != nil && from != 0 && len(w.outs)-1 > w.pos[from] {
		return entry{}, errRunsAhead
	}
	w.written += n
	off := w.end()
	w.buf = append(w.buf, rec...)
	if !w.db.noHints {
		w.cur.hint = appendHintEntry(w.cur.hint, r.seq, r.kind, r.key, uint32(off), uint32(n))
	}
	if len(w.buf) >= compactFlushSize {
		if err := w.flush(); err != nil {
			return entry{}, err
		}
	}
	return entry{seg: w.cur.id, off: uint32(off), size: uint32(n)}, nil
}

// end is where the next record goes in cur.
func (w *compactWriter) end() int64 {
	if w.cur == nil {
		return 0
	}
	return w.cur.size + int64(len(w.buf))
}

// next writes what is buffered for the current output and creates the
// next one.
func (w *compactWriter) next() error {
	if err := w.flush(); err != nil {
		return err
	}
	db := w.db
	id := w.nextID
	if w.inPlace != nil {
		if len(w.outs) == len(w.inPlace) {
			return errRunsAhead
		}
		id = w.inPlace[len(w.outs)]
	}
	name := segmentName(id)
	f, err := db.fs.OpenFile(filepath.Join(db.dir, name+tmpExt), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	w.cur = &segment{id: id, name: name, f: f}
	w.outs = append(w.outs, w.cur)
	if w.inPlace == nil {
		w.nextID++
	}
	return nil
}

// flush writes the buffered records at the end of the current output.
func (w *compactWriter) flush() error {
	if len(w.buf) == 0 {
		return nil
	}
	if _, err := w.cur.f.WriteAt(w.buf, w.cur.size); err != nil {
		return err
	}
	w.db.stats.compactWritten.Add(int64(len(w.buf)))
	w.cur.size += int64(len(w.buf))
	w.buf = w.buf[:0]
	return nil
}

// sync writes what is still buffered and fdatasyncs every output.
// Promise kept: once it returns, the output's bytes are on the disk, so
// the renames that follow can never name a file whose data a power cut
// would take away.
func (w *compactWriter) sync() error {
	if err := w.flush(); err != nil {
		return err
	}
	for _, s := range w.outs {
		err := s.f.Sync()
		w.db.stats.fsyncsBy[causeCompaction].Add(1)
		if err != nil {
			return fmt.Errorf("fdatasync %s: %w", s.name+tmpExt, err)
		}
	}
	return nil
}

// abandon closes and removes every output file and returns err as
// Compact's error. The store is as it was before Compact.
func (w *compactWriter) abandon(err error) error {
	for _, s := range w.outs {
		s.f.Close()
		w.db.fs.Remove(filepath.Join(w.db.dir, s.name+tmpExt))
	}
	return fmt.Errorf("engine: compact: %w", err)
}

// compactFailed makes the store fail with err: past the point of no
// return, only a reopen sorts out the mix of old and new files.
func (db *DB) compactFailed(err error) error {
	err = fmt.Errorf("compact: %w", err)
	db.commit.fail(err)
	return db.commit.failure()
}

// installCompacted renames the fdatasynced outputs to their segment names
// and writes their hints.
//
// Promise kept: the new segment names are durable before any hint names
// them. Renames not separated by a directory sync can reach the disk in
// any order, and a hint that outlived its segment would later be read as
// the hint of a new segment reusing the id. (writeHint syncs the
// directory again for the hint's own name.)
func (db *DB) installCompacted(outs []*segment) error {
	for _, s := range outs {
		if err := db.fs.Rename(filepath.Join(db.dir, s.name+tmpExt), filepath.Join(db.dir, s.name)); err != nil {
			return err
		}
	}
	if err := db.fs.SyncDir(db.dir); err != nil {
		return err
	}
	for _, s := range outs {
		s.filled = s.size
		if err := db.writeHint(s); err != nil { // syncs the directory too
			return err
		}
		s.hint = nil
	}
	return nil
}

// swapCompacted creates a fresh active segment with id nextID, after the
// outputs, and makes the outputs and it the store's segments, with
// newIndex as the index. The old segments stay on disk until removeOld.
//
// Promise kept: createSegment syncs the directory, so a reopen finds the
// new active segment after the outputs and resumes writing there.
//
// REQUIRES: db.writeMu held.
func (db *DB) swapCompacted(outs []*segment, newIndex *keyIndex, nextID uint32) error {
	active, err := db.createSegment(nextID)
	if err != nil {
		return err
	}
	nextID++

	db.mu.Lock()
	db.index = newIndex
	db.segs = make(map[uint32]*segment, len(outs)+1)
	for _, s := range outs {
		db.segs[s.id] = s
	}
	db.segs[active.id] = active
	db.mu.Unlock()
	db.active = active
	db.nextID = nextID
	db.unsynced = 0
	return nil
}

// removeOld closes and deletes the old segments, oldest first, and their
// hints. It returns err when removing a segment or syncing the directory
// failed (Compact then fails the store), and separately the errors of
// closing a file or removing a hint, which leave the compaction standing.
//
// Promise kept: each removal is durable (directory sync) before the next
// one starts, so the disk loses the old segments oldest first too.
func (db *DB) removeOld(old []*segment) (closeErrs []error, err error) {
	for _, s := range old {
		closeErrs = append(closeErrs, s.f.Close())
		if err := db.fs.Remove(filepath.Join(db.dir, hintName(s.id))); err != nil && !errors.Is(err, os.ErrNotExist) {
			closeErrs = append(closeErrs, err)
		}
		if err := db.fs.Remove(filepath.Join(db.dir, s.name)); err != nil {
			return closeErrs, err
		}
		// Sync before the next removal: unsynced removals may reach the
		// disk in any order, and only oldest-first keeps a tombstone
		// alive as long as the records it deleted.
		if err := db.fs.SyncDir(db.dir); err != nil {
			return closeErrs, err
		}
	}
	return closeErrs, nil
}
