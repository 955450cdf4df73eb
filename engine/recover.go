package engine

import (
	"bytes"
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
//     naming the file and offset. In the newest segment it may be a torn
//     write, which leaves nothing decodable after it: recovery looks for
//     any later record that decodes, trying every offset after the bad
//     one in turn (nextRecord), and not trusting the bad record's length
//     fields, which may be the damaged part. If one decodes, the bad
//     record is damage to data that was written before that later one,
//     possibly durable data, and Open fails with ErrCorrupt naming the
//     file and the bad record's offset. Only if none does is the tail
//     torn, and the file is truncated right after the good prefix.
//
// That rule assumes the unsynced tail reaches the disk in order, as
// MemFS's torn crash does. A real disk may write back the pages of an
// unsynced tail in any order; a power cut under "batch", "periodic" or
// "none" can then leave a hole followed by a whole record, and Open
// reports ErrCorrupt for a tail it could have truncated. It never
// truncates a bad record that a good one follows, because that record
// may be durable data damaged later, and truncating would silently drop
// the durable records after it. For the same reason a torn record whose
// value happens to contain the bytes of a whole encoded record (a store
// holding store files, say) is reported as ErrCorrupt, not truncated.
func (db *DB) recover() error {
	names, err := db.fs.List(db.dir)
	if err != nil {
		return fmt.Errorf("engine: open %s: %w", db.dir, err)
	}
	var ids []uint32
	hints := map[uint32]bool{}
	for _, name := range names {
		if strings.HasSuffix(name, tmpExt) {
			// A leftover of an interrupted compaction or hint write.
			if err := db.fs.Remove(filepath.Join(db.dir, name)); err != nil {
				return fmt.Errorf("engine: remove leftover %s: %w", name, err)
			}
			continue
		}
		if id, ok := parseID(name, segmentExt); ok {
			ids = append(ids, id)
		} else if id, ok := parseID(name, hintExt); ok {
			hints[id] = true
		}
	}
	slices.Sort(ids)
	// Read the hints first: their entry counts size the index, which
	// saves the map from growing (and rehashing) a dozen times.
	hintData := map[uint32]*hintFile{}
	total := 0
	for _, id := range ids {
		if hints[id] && !db.noHints {
			if b, ok := db.readHint(id); ok {
				h, err := parseHint(b)
				if err != nil {
					continue // damaged: scan the segment instead
				}
				hintData[id] = &h
				total += h.count
			}
		}
	}
	if total > 0 {
		db.index = make(map[string]entry, total)
	}
	for i, id := range ids {
		newest := i == len(ids)-1
		if err := db.recoverSegment(id, hintData[id], newest); err != nil {
			return err
		}
		delete(hintData, id)
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
	// leftovers are made durable by the same sync.
	if err := db.fs.SyncDir(db.dir); err != nil {
		return fmt.Errorf("engine: sync directory %s: %w", db.dir, err)
	}
	// After a process crash the kernel may still hold recovered records
	// that never reached the disk; sync so DurableSeq can start at
	// LastSeq honestly.
	for _, id := range ids {
		if err := db.segs[id].f.Sync(); err != nil {
			return fmt.Errorf("engine: fdatasync %s: %w", db.segs[id].name, err)
		}
	}
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
	if hint != nil {
		// A hint that covers more than the file holds is stale and
		// ignored.
		if hint.covered <= fileSize {
			hint.each(func(e hintEntry) {
				db.apply(seg, e.seq, e.kind, e.key, e.off, e.size, newest)
			})
			from = hint.covered
		}
	}

	data := make([]byte, fileSize-from)
	if _, err := f.ReadAt(data, from); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("engine: read %s: %w", path, err)
	}
	off := int64(0)
	for {
		r, n, err := decodeRecord(data[off:])
		if err == nil {
			db.apply(seg, r.seq, r.kind, r.key, uint32(from+off), uint32(n), newest)
			off += int64(n)
			continue
		}
		if errors.Is(err, errEnd) && allZero(data[off:]) {
			seg.size, seg.filled = from+off, fileSize
			return nil
		}
		if errors.Is(err, errEnd) {
			err = errors.New("a zero header with non-zero bytes after it")
		}
		next := nextRecord(data, off+1)
		if !newest || next >= 0 {
			if next >= 0 {
				return fmt.Errorf("%w: %s at offset %d: %v, and a record decodes at offset %d after it, so this is not a torn tail",
					ErrCorrupt, path, from+off, err, from+int64(next))
			}
			return fmt.Errorf("%w: %s at offset %d: %v", ErrCorrupt, path, from+off, err)
		}
		// A torn tail: nothing decodes after it. Keep the good prefix,
		// drop the rest.
		seg.size, seg.filled = from+off, from+off
		if err := f.Truncate(from + off); err != nil {
			return fmt.Errorf("engine: truncate torn tail of %s at offset %d: %w", path, from+off, err)
		}
		return nil
	}
}

// nextRecord returns the first offset at or after from where a record
// decodes in b (its checksum matches), or -1. It tries every offset in
// turn, so it finds a record whatever happened to the lengths of the
// records before it.
func nextRecord(b []byte, from int64) int64 {
	for i := from; i+headerSize <= int64(len(b)); i++ {
		if k := b[i+12]; k != kindPut && k != kindDelete {
			continue // not a header: the kind byte is wrong (fast path over zeros)
		}
		if _, _, err := decodeRecord(b[i:]); err == nil {
			return i
		}
	}
	return -1
}

// readHint returns the contents of segment id's hint file, if it can be
// read. recover checks them with parseHint.
func (db *DB) readHint(id uint32) ([]byte, bool) {
	f, err := db.fs.OpenFile(filepath.Join(db.dir, hintName(id)), os.O_RDONLY, 0)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return nil, false
	}
	data := make([]byte, size)
	if _, err := f.ReadAt(data, 0); err != nil && !errors.Is(err, io.EOF) {
		return nil, false
	}
	return data, true
}

// apply replays one record (from a scan or a hint) into the index.
func (db *DB) apply(seg *segment, seq uint64, kind byte, key []byte, off, size uint32, newest bool) {
	if kind == kindPut {
		db.index[string(key)] = entry{seg: seg.id, off: off, size: size}
	} else {
		delete(db.index, string(key))
	}
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
