package engine

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// recover rebuilds the index from the segment files in db.dir and opens the
// newest segment for appending. Called by Open only.
//
// For each segment, in id order: if a valid hint file exists, its entries
// are applied and the segment is scanned only from the offset the hint
// covers; otherwise the whole segment is scanned. The scan stops at the
// first record that does not decode:
//
//   - zero bytes where a header should be, and only zero bytes after
//     them: the end of the log (the zero-filled space after it).
//   - anything else (a short or impossible record, a checksum mismatch,
//     a zero header with non-zero bytes after it): in any segment but
//     the newest this is corruption, and Open fails with ErrCorrupt
//     naming the file and offset. In the newest segment it is either
//     damage to durable data or a torn tail that no fdatasync vouched
//     for, and the sync marks (syncmark.go) tell which: recovery looks
//     for a sync mark that decodes after the bad record at offset B,
//     trying every later offset in turn (vouchingMark) and not trusting
//     the bad record's length fields, which may be the damaged part. If
//     a mark after B claims Y > B, byte B was durable: Open fails with
//     ErrCorrupt naming the file and B. Otherwise the file is truncated
//     at B, right after the good prefix, even if whole records decode
//     after B.
//
// Why that is sound: a mark claiming Y is written only after an
// fdatasync covering every byte before Y returned, so if one is on disk,
// those bytes were durable before it was written, whatever order the
// disk then persisted the unsynced tail in. Records after B that no mark
// vouches for were never durable: a power cut that lets a disk write
// back an unsynced tail out of order (a hole, then whole records) may
// keep them or not, and dropping them breaks no promise. Damage to
// durable records is refused (the durable records after it must not be
// dropped silently) as long as a mark follows them, which it does once
// the next write after their fdatasync happened, and always after Close.
// Damage to the last durable records with no mark after them looks like
// a torn tail and is truncated: nothing durable after them is lost. A
// mark found after B that claims bytes after its own offset is impossible
// (the store writes a mark only after the bytes it vouches for) and is
// not trusted: a torn record followed by a value that happens to hold the
// bytes of such a mark is still a torn tail. A torn record whose value
// happens to contain the bytes of a whole encoded sync mark claiming more
// than B but no more than its own offset (a store holding store files,
// say) is reported as ErrCorrupt, not truncated.
func (db *DB) recover() error {
	names, err := db.fs.List(db.dir)
	if err != nil {
		return fmt.Errorf("engine: open %s: %w", db.dir, err)
	}
	var ids []uint32
	hints := map[uint32]bool{}
	removed := false // a leftover was removed: the directory must be synced
	for _, name := range names {
		if strings.HasSuffix(name, tmpExt) {
			// A leftover of an interrupted compaction or hint write.
			if err := db.fs.Remove(filepath.Join(db.dir, name)); err != nil {
				return fmt.Errorf("engine: remove leftover %s: %w", name, err)
			}
			removed = true
			continue
		}
		if id, ok := parseID(name, segmentExt); ok {
			ids = append(ids, id)
		} else if id, ok := parseID(name, hintExt); ok {
			hints[id] = true
		}
	}
	slices.Sort(ids)
	if !db.noHints {
		// The hints' entry counts size the index, so that it never grows
		// (and rehashes) while it is rebuilt.
		total := 0
		for _, id := range ids {
			if hints[id] {
				total += db.hintCount(id)
			}
		}
		db.index = newKeyIndex(total)
	}
	// The hints are read and checked by a goroutine of their own, a file
	// or two ahead of the replay, so that reading the next file from the
	// disk overlaps building the index from this one.
	ahead := db.readHintsAhead(ids, hints)
	defer ahead.stop()
	for i, id := range ids {
		newest := i == len(ids)-1
		h := <-ahead.next
		if err := db.recoverSegment(id, h, newest); err != nil {
			return err
		}
		if h != nil && !newest {
			ahead.reuse(h.data)
		}
	}
	if len(ids) == 0 {
		seg, err := db.createSegment(1)
		if err != nil {
			return fmt.Errorf("engine: %w", err)
		}
		db.segs[1] = seg
		ids = append(ids, 1)
	}
	db.active = db.segs[ids[len(ids)-1]]
	db.nextID = db.active.id + 1
	// The store writes into the newest segment from now on, so its name
	// must be durable before any write there is acknowledged. It may not
	// be: the process that created it may have died (or its directory
	// sync failed, ErrFailed) before the directory was synced. Removed
	// leftovers are made durable by the same sync. A newest segment
	// whose hint covered it needs none: writeHint synced the directory
	// after the segment's name was in it (and a store that failed writes
	// no hint), so unless a leftover was removed the sync is skipped.
	if removed || !db.active.hinted {
		if err := db.fs.SyncDir(db.dir); err != nil {
			return fmt.Errorf("engine: sync directory %s: %w", db.dir, err)
		}
	}
	// After a process crash the kernel may still hold recovered records
	// that never reached the disk; sync so DurableSeq can start at
	// LastSeq honestly. A segment whose hint covered the whole file was
	// durable before the hint was written, and is skipped: on a cold
	// start of a closed store that is every segment, and each fdatasync
	// skipped is a device flush the Open does not wait for.
	for _, id := range ids {
		if db.segs[id].hinted {
			continue
		}
		err := db.segs[id].f.Sync()
		db.stats.fsyncsBy[causeOpen].Add(1)
		if err != nil {
			return fmt.Errorf("engine: fdatasync %s: %w", db.segs[id].name, err)
		}
	}
	// That fdatasync made the whole active segment durable: the first
	// write into it carries a sync mark that says so.
	db.active.synced.Store(db.active.size)
	return nil
}

// recoverSegment replays one segment into the index, using its checked
// hint file if hint is not nil.
func (db *DB) recoverSegment(id uint32, hint *hintFile, newest bool) error {
	name := segmentName(id)
	path := filepath.Join(db.dir, name)
	f, err := db.fs.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("engine: open segment: %w", err)
	}
	seg := &segment{id: id, name: name, f: f}
	db.segs[id] = seg
	fileSize, err := f.Size()
	if err != nil {
		return fmt.Errorf("engine: stat %s: %w", path, err)
	}

	var from int64
	hinted := false // a valid hint was applied
	if hint != nil {
		// A hint that covers more than the file holds, or whose last
		// entry is not in the file, is stale and ignored.
		if hint.covered <= fileSize && hint.describes(f) {
			db.applyHint(seg, hint)
			if newest {
				// The active segment's hint goes on from the file's
				// entries: it keeps them where they were read (the
				// reader does not reuse the newest file's buffer), and
				// its first append copies them, capacity being full.
				seg.hint = hint.entries[:len(hint.entries):len(hint.entries)]
			}
			hinted = true
			from = hint.covered
			if newest {
				db.noteLastMark(seg, from)
			}
		}
	}

	data := make([]byte, fileSize-from)
	if _, err := f.ReadAt(data, from); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("engine: read %s: %w", path, err)
	}
	off := int64(0)
	for {
		r, n, err := decodeRecord(data[off:])
		if err == nil && r.kind == kindMark {
			// A sync mark is not data: nothing to index.
			seg.noteMark(from+off, markOffset(r))
			off += int64(n)
			continue
		}
		if err == nil && r.kind == kindBatch {
			// An atomic batch (batch.go): its checksum matched, so every
			// record in it is there. Replay each where it lies.
			body := from + off + headerSize
			err = batchRecords(r, func(in record, at, size int) {
				db.apply(seg, in.seq, in.kind, in.key, uint32(body+int64(at)), uint32(size), newest)
			})
			if err != nil {
				return fmt.Errorf("%w: %s: the batch at offset %d: %v", ErrCorrupt, path, from+off, err)
			}
			off += int64(n)
			continue
		}
		if err == nil {
			db.apply(seg, r.seq, r.kind, r.key, uint32(from+off), uint32(n), newest)
			off += int64(n)
			continue
		}
		if errors.Is(err, errEnd) && allZero(data[off:]) {
			seg.size, seg.filled = from+off, fileSize
			// Every record is one the hint covers, all of them synced
			// before it was written; what follows is zero-filled space.
			seg.hinted = hinted && off == 0
			return nil
		}
		if errors.Is(err, errEnd) {
			err = errors.New("a zero header with non-zero bytes after it")
		}
		if !newest {
			return fmt.Errorf("%w: %s at offset %d: %v", ErrCorrupt, path, from+off, err)
		}
		if at, y := vouchingMark(data, from, off); at >= 0 {
			return fmt.Errorf("%w: %s at offset %d: %v, and a sync mark at offset %d says the segment was durable up to offset %d, so this is damage to durable data, not a torn tail",
				ErrCorrupt, path, from+off, err, from+at, y)
		}
		// A torn tail: no sync mark vouches for it, so nothing in it
		// was durable. Keep the good prefix, drop the rest.
		seg.size, seg.filled = from+off, from+off
		if err := f.Truncate(from + off); err != nil {
			return fmt.Errorf("engine: truncate torn tail of %s at offset %d: %w", path, from+off, err)
		}
		return nil
	}
}

// noteLastMark tells seg, the newest segment, about a sync mark that ends
// right at offset end, where its hint file's coverage ends (Close writes
// one there), so that reopening and closing a store without writing to it
// adds no marks.
func (db *DB) noteLastMark(seg *segment, end int64) {
	if end < markSize {
		return
	}
	b := make([]byte, markSize)
	if _, err := seg.f.ReadAt(b, end-markSize); err != nil {
		return
	}
	if r, _, err := decodeRecord(b); err == nil && r.kind == kindMark {
		seg.noteMark(end-markSize, markOffset(r))
	}
}

// hintReader reads the hint files of a store's segments in id order, in
// a goroutine, ahead of the replay (recover): next yields one *hintFile
// per segment, nil where the segment has no hint file or a damaged one.
// Whoever starts it calls stop, which waits for the goroutine to end.
//
// Once a hint file is replayed, recover hands its buffer back (reuse)
// and the reader reads a later file into it: a store of many segments
// then holds a few files' worth of buffers, not all of them, and Open
// does not pay again for memory it had (a page fault per 4 KiB page of
// fresh memory, which on a virtual machine cost as much as building the
// index itself).
type hintReader struct {
	next chan *hintFile
	free chan []byte // buffers recover is done with
	quit chan struct{}
	done chan struct{}
}

// hintsAhead is how many checked hint files the reader keeps ready
// beyond the one being replayed: enough to keep the disk busy, few
// enough that only a few files are in memory at once.
const hintsAhead = 1

// readHintsAhead starts a hintReader for the segments ids, of which those
// in has have a hint file.
func (db *DB) readHintsAhead(ids []uint32, has map[uint32]bool) *hintReader {
	r := &hintReader{
		next: make(chan *hintFile, hintsAhead),
		free: make(chan []byte, hintsAhead+2),
		quit: make(chan struct{}),
		done: make(chan struct{}),
	}
	go func() {
		defer close(r.done)
		for _, id := range ids {
			var h *hintFile
			if has[id] && !db.noHints {
				var buf []byte
				select {
				case buf = <-r.free:
				default:
				}
				h = db.loadHint(id, buf)
			}
			select {
			case r.next <- h:
			case <-r.quit:
				return
			}
		}
	}()
	return r
}

// reuse hands buf, a replayed hint file's, back to the reader; the
// caller must not touch it again. A buffer the reader has no room for
// is left to the garbage collector.
func (r *hintReader) reuse(buf []byte) {
	select {
	case r.free <- buf:
	default:
	}
}

// stop ends the reader's goroutine and waits for it.
func (r *hintReader) stop() {
	close(r.quit)
	<-r.done
}

// loadHint reads and checks segment id's hint file, into buf if it is
// large enough; nil if it is missing or damaged (the segment is then
// scanned).
func (db *DB) loadHint(id uint32, buf []byte) *hintFile {
	b, ok := db.readHint(id, buf)
	if !ok {
		return nil
	}
	h, err := parseHint(b)
	if err != nil {
		return nil
	}
	return &h
}

// hintCount returns the entry count that segment id's hint file claims in
// its trailer (0 if it cannot be read), which is only used to size the
// index: loadHint checks it with the rest of the file.
func (db *DB) hintCount(id uint32) int {
	f, err := db.fs.OpenFile(filepath.Join(db.dir, hintName(id)), os.O_RDONLY, 0)
	if err != nil {
		return 0
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil || size < int64(len(hintMagic)+hintTrailer) {
		return 0
	}
	var t [hintTrailer]byte
	if _, err := f.ReadAt(t[:], size-hintTrailer); err != nil {
		return 0
	}
	// No more entries than the file has room for, whatever it claims.
	return int(min(int64(binary.LittleEndian.Uint32(t[8:12])), size/hintEntryHeader))
}

// readHint returns the contents of segment id's hint file, if it can be
// read, in buf if it is large enough. loadHint checks them with
// parseHint.
func (db *DB) readHint(id uint32, buf []byte) ([]byte, bool) {
	f, err := db.fs.OpenFile(filepath.Join(db.dir, hintName(id)), os.O_RDONLY, 0)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return nil, false
	}
	data := buf[:0]
	if int64(cap(data)) < size {
		data = newBuffer(int(size))
	}
	data = data[:size]
	if _, err := f.ReadAt(data, 0); err != nil && !errors.Is(err, io.EOF) {
		return nil, false
	}
	return data, true
}

// applyHint replays the entries of seg's checked hint file into the
// index (buildHint, on db.buildWorkers goroutines) and into what the
// store keeps beside it, as applying each entry in turn would: the live
// bytes of the segments, lastSeq and lastDel, and the ordered set.
func (db *DB) applyHint(seg *segment, h *hintFile) {
	b := buildHint(db.index, *h, seg.id, db.buildWorkers)
	for id, d := range b.live {
		db.segs[id].live += d
	}
	if b.lastAt >= 0 && b.lastSeq > db.lastSeq {
		e := h.entryAt(b.lastAt)
		db.lastSeq, db.lastDel = e.seq, nil
		if e.kind == kindDelete {
			db.lastDel = bytes.Clone(e.key)
		}
	}
	if db.ordered != nil {
		h.each(func(e hintEntry) { db.noteIndex(e.key, e.kind) })
	}
}

// apply replays one record, found by a scan, into the index.
func (db *DB) apply(seg *segment, seq uint64, kind byte, key []byte, off, size uint32, newest bool) {
	var old entry
	var had bool
	if kind == kindPut {
		old, had = db.index.put(key, entry{seg: seg.id, off: off, size: size})
		seg.live += int64(size)
	} else {
		old, had = db.index.remove(key)
	}
	if had {
		db.segs[old.seg].live -= int64(old.size)
	}
	db.noteIndex(key, kind)
	if seq > db.lastSeq {
		db.lastSeq = seq
		db.lastDel = nil
		if kind == kindDelete {
			db.lastDel = bytes.Clone(key)
		}
	}
	if newest && !db.noHints {
		seg.hint = appendHintEntry(seg.hint, seq, kind, key, off, size)
	}
}
