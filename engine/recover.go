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
//   - zero bytes where a header should be: the end of the log (the
//     zero-filled space after it). The rest of the file must be zeros too.
//   - anything else (a short or impossible record, a checksum mismatch):
//     in the newest segment this is a torn write and the file is truncated
//     right after the good prefix; in any older segment it is corruption,
//     and Open fails with ErrCorrupt naming the file and offset. A bad
//     record in the newest segment that is followed by a good one is
//     corruption too: a torn write leaves nothing good after it.
//
// That last rule assumes the unsynced tail reaches the disk in order, as
// MemFS's torn crash does. A real disk may write back the pages of an
// unsynced tail in any order; a power cut under "batch", "periodic" or
// "none" can then leave a hole followed by a whole record, and Open
// reports ErrCorrupt for a tail it could have truncated. It never
// truncates a bad record that a good one follows, because that record
// may be durable data damaged later, and truncating would silently drop
// the durable records after it.
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
		if newest && errors.Is(err, errBadRecord) && validAfter(data[off:]) {
			// A damaged record followed by a good one is not a torn
			// write (those only happen at the end): truncating here
			// would silently drop the good records after it.
			newest = false
		}
		if !newest {
			reason := err
			if errors.Is(err, errEnd) {
				reason = errors.New("non-zero bytes after the end of the log")
			}
			return fmt.Errorf("%w: %s at offset %d: %v", ErrCorrupt, path, from+off, reason)
		}
		// A torn tail: keep the good prefix, drop the rest.
		seg.size, seg.filled = from+off, from+off
		if err := f.Truncate(from + off); err != nil {
			return fmt.Errorf("engine: truncate torn tail of %s at offset %d: %w", path, from+off, err)
		}
		return nil
	}
}

// validAfter reports whether b starts with a record whose header claims a
// plausible size and is followed by a record that decodes.
func validAfter(b []byte) bool {
	if len(b) < headerSize {
		return false
	}
	keyLen := int(binary.LittleEndian.Uint16(b[13:15]))
	valueLen := int(binary.LittleEndian.Uint32(b[15:19]))
	if keyLen == 0 || keyLen > MaxKeySize || valueLen > MaxValueSize {
		return false
	}
	n := recordSize(keyLen, valueLen)
	if n >= len(b) {
		return false
	}
	_, _, err := decodeRecord(b[n:])
	return err == nil
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
