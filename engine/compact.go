package engine

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
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
// its key. The order of installation keeps that true across a crash:
//
//  1. The active segment is fdatasynced.
//  2. Live records are copied into NNN.seg.tmp files with ids above every
//     existing segment; they are fdatasynced, renamed to NNN.seg, the
//     directory is fdatasynced, and then their hints are written. A crash
//     before the renames leaves only .tmp files, which Open deletes.
//  3. A new, empty active segment is created after them.
//  4. The old segments are deleted oldest first, with a directory sync
//     after each removal, so that the disk sees them go in that order too.
//     A crash in the middle leaves a suffix of them: a tombstone's
//     segment is never older than the segments holding the records it
//     deleted, so if any record of a deleted key survives, so does its
//     tombstone, and replaying the old segments before the new ones
//     still ends with the key deleted.
//
// An error before step 2 completes leaves the store as it was. An error
// after it makes the store fail (ErrFailed) until it is reopened.
func (db *DB) Compact() error {
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
	// 1. Everything written so far becomes durable.
	if err := db.flushLocked(); err != nil {
		return err
	}
	if err := db.syncSegment(db.active, db.lastSeq, db.active.size); err != nil {
		return err
	}

	// Live records, in file order so the copy reads sequentially.
	type live struct {
		key string
		e   entry
	}
	db.mu.RLock()
	lives := make([]live, 0, len(db.index))
	for k, e := range db.index {
		lives = append(lives, live{k, e})
	}
	old := make([]*segment, 0, len(db.segs))
	for _, s := range db.segs {
		old = append(old, s)
	}
	db.mu.RUnlock()
	slices.SortFunc(lives, func(a, b live) int {
		if a.e.seg != b.e.seg {
			return int(a.e.seg) - int(b.e.seg)
		}
		return int(a.e.off) - int(b.e.off)
	})
	slices.SortFunc(old, func(a, b *segment) int { return int(a.id) - int(b.id) })

	// 2. Copy into temporary files.
	var outs []*segment
	abandon := func(err error) error {
		for _, s := range outs {
			s.f.Close()
			db.fs.Remove(filepath.Join(db.dir, s.name+tmpExt))
		}
		return fmt.Errorf("engine: compact: %w", err)
	}
	newIndex := make(map[string]entry, len(lives))
	var cur *segment
	var buf []byte
	flush := func() error {
		if len(buf) == 0 {
			return nil
		}
		if _, err := cur.f.WriteAt(buf, cur.size); err != nil {
			return err
		}
		cur.size += int64(len(buf))
		buf = buf[:0]
		return nil
	}
	nextID := db.nextID
	// emit appends one encoded record to the output, starting a new
	// output segment when the current one is full, and returns where the
	// record landed.
	emit := func(rec []byte, r record) (entry, error) {
		n := int64(len(rec))
		if cur == nil || (cur.size+int64(len(buf)) > 0 && cur.size+int64(len(buf))+n > db.segSize) {
			if cur != nil {
				if err := flush(); err != nil {
					return entry{}, err
				}
			}
			name := segmentName(nextID)
			f, err := db.fs.OpenFile(filepath.Join(db.dir, name+tmpExt), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
			if err != nil {
				return entry{}, err
			}
			cur = &segment{id: nextID, name: name, f: f}
			outs = append(outs, cur)
			nextID++
		}
		off := cur.size + int64(len(buf))
		buf = append(buf, rec...)
		if !db.noHints {
			cur.hint = appendHintEntry(cur.hint, r.seq, r.kind, r.key, uint32(off), uint32(n))
		}
		if len(buf) >= 1<<20 {
			if err := flush(); err != nil {
				return entry{}, err
			}
		}
		return entry{seg: cur.id, off: uint32(off), size: uint32(n)}, nil
	}
	for _, l := range lives {
		src := db.segs[l.e.seg]
		rec := make([]byte, l.e.size)
		if _, err := src.f.ReadAt(rec, int64(l.e.off)); err != nil {
			return abandon(fmt.Errorf("read %s at offset %d: %w", src.name, l.e.off, err))
		}
		r, _, err := decodeRecord(rec)
		if err != nil || r.kind != kindPut || string(r.key) != l.key {
			return abandon(fmt.Errorf("%w: %s at offset %d: %v", ErrCorrupt, src.name, l.e.off, err))
		}
		e, err := emit(rec, r)
		if err != nil {
			return abandon(err)
		}
		newIndex[l.key] = e
	}
	if db.lastDel != nil {
		// The last write was a Delete: its tombstone is the only record
		// with seq lastSeq. Keep it (deleting an absent key is harmless)
		// so that a reopen resumes numbering after lastSeq.
		r := record{seq: db.lastSeq, kind: kindDelete, key: db.lastDel}
		if _, err := emit(appendRecord(nil, r), r); err != nil {
			return abandon(err)
		}
	}
	if cur != nil {
		if err := flush(); err != nil {
			return abandon(err)
		}
	}
	for _, s := range outs {
		if err := s.f.Sync(); err != nil {
			return abandon(fmt.Errorf("fdatasync %s: %w", s.name+tmpExt, err))
		}
	}
	// Point of no return: from here an error leaves a mix of old and new
	// files that only a reopen sorts out.
	fail := func(err error) error {
		err = fmt.Errorf("compact: %w", err)
		db.commit.fail(err)
		return db.commit.failure()
	}
	for _, s := range outs {
		if err := db.fs.Rename(filepath.Join(db.dir, s.name+tmpExt), filepath.Join(db.dir, s.name)); err != nil {
			return fail(err)
		}
	}
	// The new segment names must be durable before any hint names them:
	// renames not separated by a directory sync can reach the disk in any
	// order, and a hint that outlived its segment would later be read as
	// the hint of a new segment reusing the id.
	if err := db.fs.SyncDir(db.dir); err != nil {
		return fail(err)
	}
	for _, s := range outs {
		s.filled = s.size
		if err := db.writeHint(s); err != nil { // syncs the directory too
			return fail(err)
		}
		s.hint = nil
	}

	// 3. A fresh active segment after the new ones.
	active, err := db.createSegment(nextID)
	if err != nil {
		return fail(err)
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

	// 4. Delete the old segments, oldest first.
	var errs []error
	for _, s := range old {
		errs = append(errs, s.f.Close())
		if err := db.fs.Remove(filepath.Join(db.dir, hintName(s.id))); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
		if err := db.fs.Remove(filepath.Join(db.dir, s.name)); err != nil {
			return fail(err)
		}
		// Sync before the next removal: unsynced removals may reach the
		// disk in any order, and only oldest-first keeps a tombstone
		// alive as long as the records it deleted.
		if err := db.fs.SyncDir(db.dir); err != nil {
			return fail(err)
		}
	}
	db.stats.compactions.Add(1)
	return errors.Join(errs...)
}
