package engine

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"
)

// Background compaction. Compact (compact.go) rewrites every segment and
// makes writers wait for its whole run. CompactSealed rewrites only the
// sealed segments, the ones no writer touches again, while writers keep
// appending to the active one; with Options.AutoCompact set, a goroutine
// started by Open runs it whenever the garbage in the sealed segments
// passes that fraction of their bytes, so a store that is overwritten for
// hours stays within a bounded multiple of its live data.
//
// The outputs reuse the ids of the inputs. The segments older than the
// active one are all sealed, so they are a prefix of the log in replay
// order, and the outputs take their place in it: replaying output 1, 2,
// ... and then the segments written since (the active one and any sealed
// during the copy) rebuilds the index, a record copied before it was
// overwritten being replayed before the record that overwrote it.
//
// The order of the steps keeps every acknowledged write across a crash at
// any point, and never resurrects a delete:
//
//   - The active segment is fdatasynced, so that every write that made
//     a record in a sealed segment garbage is durable before the copy
//     drops that record (the one moment writers wait).
//   - The copy reads the sealed segments, which are durable (rotation
//     fdatasyncs a segment before it seals it), in file order, and writes
//     the records the index points at, in that order, into NNN.seg.tmp
//     files (NNN: the ids of the inputs, oldest first), which it
//     fdatasyncs. A record never lands in an output later than the input
//     it came from: the outputs are filled to the same SegmentSize as the
//     inputs were, with fewer bytes (the copy checks it, errRunsAhead). A
//     crash up to here leaves .tmp files, which Open deletes.
//   - installInPlace then replaces the inputs by the outputs, oldest
//     first, each with a directory sync before the next: the old hint is
//     removed (a hint must never describe a file it was not written for),
//     the output renamed over its input, its hint written. Then the
//     inputs left over (the outputs are fewer) are removed, oldest first.
//     A crash in the middle leaves new files 1..j and old files j+1..k:
//     every live record of an old file i <= j is in a new file <= j, and
//     every record older than it was in a file <= i, now replaced; old
//     files after j still hold everything they held, tombstones included.
//     Replaying that mix ends with the same index as either end.
//   - The index is switched to the copies, for the keys that no write
//     changed during the copy, and the old files are closed.
//
// A tombstone is dropped only together with every older record of its
// key, because the inputs are every segment older than the active one.
// The last write's tombstone, when the active segment is still empty, is
// kept, as in Compact, so that a reopen resumes numbering after it.
//
// Writers wait for it only during that first fdatasync: the copy holds
// no lock writers take, and the switch holds db.mu for one pass over the
// copied keys. Close cancels a running copy (between two records, or
// while it waits for its rate) and waits for the install steps if they
// have begun: a few renames and directory syncs.

// compactor is the background compaction goroutine's state.
type compactor struct {
	garbage float64        // Options.AutoCompact: the garbage fraction that starts it
	rate    int64          // Options.CompactRate: bytes per second, 0 = unlimited
	kick    chan struct{}  // a segment was sealed: check the garbage
	quit    chan struct{}  // closed by Close
	wg      sync.WaitGroup // the goroutine
}

// startCompactor starts the background compaction goroutine.
func (db *DB) startCompactor(garbage float64, rate int64) {
	db.bg = &compactor{garbage: garbage, rate: rate, kick: make(chan struct{}, 1), quit: make(chan struct{})}
	db.bg.wg.Add(1)
	go db.runCompactor()
	db.kickCompactor() // a store reopened with garbage starts on it
}

// kickCompactor tells the background goroutine, if there is one, that
// the sealed segments changed. It never blocks.
func (db *DB) kickCompactor() {
	if db.bg == nil {
		return
	}
	select {
	case db.bg.kick <- struct{}{}:
	default:
	}
}

// stopCompactor cancels the background goroutine and waits for it.
func (db *DB) stopCompactor() {
	if db.bg == nil {
		return
	}
	close(db.bg.quit)
	db.bg.wg.Wait()
}

// runCompactor compacts the sealed segments each time their garbage
// passes db.bg.garbage of their bytes, until Close.
func (db *DB) runCompactor() {
	defer db.bg.wg.Done()
	for {
		select {
		case <-db.bg.quit:
			return
		case <-db.bg.kick:
		}
		for db.compactionDue() {
			if err := db.compactSealed(db.bg.quit, db.bg.rate); err != nil {
				// Abandoned (the store is as it was) or failed (the
				// store reports ErrFailed): either way, wait for the
				// next sealed segment.
				db.stats.compactErrors.Add(1)
				break
			}
		}
	}
}

// compactionDue reports whether the garbage in the sealed segments has
// reached db.bg.garbage of their bytes.
func (db *DB) compactionDue() bool {
	sealed, garbage := db.debt()
	return garbage > 0 && float64(garbage) >= db.bg.garbage*float64(sealed)
}

// debt returns the bytes of the sealed segments (every segment but the
// newest, the active one) and how many of them are garbage.
func (db *DB) debt() (sealed, garbage int64) {
	db.mu.RLock()
	defer db.mu.RUnlock()
	newest := uint32(0)
	for id := range db.segs {
		newest = max(newest, id)
	}
	for id, s := range db.segs {
		if id != newest {
			sealed += s.size
			garbage += s.size - s.live
		}
	}
	return sealed, garbage
}

// CompactSealed rewrites the sealed segments (every segment but the
// active one) without their garbage, as the background compaction of
// Options.AutoCompact does, while writers go on writing. It returns nil
// at once when there is nothing sealed. See the comment at the top of
// background.go for why a crash at any point loses no acknowledged write.
//
// An error before the first rename leaves the store as it was; from then
// on it makes the store fail (ErrFailed) until it is reopened.
func (db *DB) CompactSealed() error {
	return db.compactSealed(nil, 0)
}

// compactSealed is CompactSealed, cancelled when quit is closed and paced
// at rate bytes per second (0: unlimited).
func (db *DB) compactSealed(quit <-chan struct{}, rate int64) error {
	db.compactMu.Lock()
	defer db.compactMu.Unlock()

	// What to copy: the sealed segments, as they are now.
	if err := db.lockForWrite(); err != nil {
		return err
	}
	if db.active.id == db.oldestID() {
		db.writeMu.Unlock()
		return nil // nothing is sealed
	}
	// A record in a sealed segment is garbage once a later write of its
	// key is durable, not before: the copy drops it, and a power cut
	// that took the later write would find neither. So everything
	// written so far becomes durable first, as in Compact: one
	// fdatasync of the active segment, while writers wait.
	if err := db.flushLocked(); err != nil {
		db.writeMu.Unlock()
		return err
	}
	if err := db.syncSegment(causeCompaction, db.active, db.lastSeq, db.active.size); err != nil {
		db.writeMu.Unlock()
		return err
	}
	var tomb *record
	if db.active.size == 0 && db.lastDel != nil {
		// The last write was a Delete in a sealed segment: keep it.
		tomb = &record{seq: db.lastSeq, kind: kindDelete, key: bytes.Clone(db.lastDel)}
	}
	activeID := db.active.id
	db.mu.RLock()
	inputs := map[uint32]*segment{}
	var old []*segment // oldest first
	for id, s := range db.segs {
		if id < activeID {
			inputs[id] = s
			old = append(old, s)
		}
	}
	db.writeMu.Unlock()
	var lives []live
	db.index.each(func(k []byte, e entry) {
		if inputs[e.seg] != nil {
			lives = append(lives, live{string(k), e})
		}
	})
	db.mu.RUnlock()
	if len(old) == 0 {
		return nil
	}
	slices.SortFunc(old, func(a, b *segment) int { return int(a.id) - int(b.id) })
	sortByPlace(lives)

	// The copy.
	w := &compactWriter{db: db, quit: quit, rate: rate, start: db.clock.Now(), pos: map[uint32]int{}}
	for i, s := range old {
		w.inPlace = append(w.inPlace, s.id)
		w.pos[s.id] = i
	}
	copies, err := db.copyLive(w, lives, inputs, tomb)
	if err != nil {
		return w.abandon(err)
	}
	if err := w.sync(); err != nil {
		return w.abandon(err)
	}
	// Point of no return.
	if err := db.installInPlace(w.outs, old); err != nil {
		return db.compactFailed(err)
	}
	db.switchInPlace(w.outs, old, lives, copies)
	db.stats.compactions.Add(1)
	db.stats.bgCompactions.Add(1)
	var closeErrs []error
	for _, s := range old {
		closeErrs = append(closeErrs, s.f.Close())
	}
	return errors.Join(closeErrs...)
}

// oldestID returns the id of the oldest segment.
//
// REQUIRES: db.writeMu held (segments come and go under it and db.mu).
func (db *DB) oldestID() uint32 {
	db.mu.RLock()
	defer db.mu.RUnlock()
	oldest := db.active.id
	for id := range db.segs {
		oldest = min(oldest, id)
	}
	return oldest
}

// sortByPlace sorts live records in file order, so the copy reads
// sequentially and keeps their order.
func sortByPlace(lives []live) {
	slices.SortFunc(lives, func(a, b live) int {
		if a.e.seg != b.e.seg {
			return int(a.e.seg) - int(b.e.seg)
		}
		return int(a.e.off) - int(b.e.off)
	})
}

// yield cancels the copy when w.quit is closed, and paces it: once more
// bytes were emitted than w.rate allows since w.start, it waits (on the
// store's clock) until they are due.
func (w *compactWriter) yield() error {
	if w.quit == nil {
		return nil
	}
	select {
	case <-w.quit:
		return errCancelled
	default:
	}
	if w.rate <= 0 {
		return nil
	}
	due := w.start.Add(time.Duration(float64(w.written) / float64(w.rate) * float64(time.Second)))
	wait := due.Sub(w.db.clock.Now())
	if wait <= 0 {
		return nil
	}
	ready := make(chan struct{})
	t := w.db.clock.AfterFunc(wait, func() { close(ready) })
	defer t.Stop()
	select {
	case <-w.quit:
		return errCancelled
	case <-ready:
		return nil
	}
}

// installInPlace replaces the inputs old by the fdatasynced outputs outs
// (output i has the id of input i), oldest first, and removes the inputs
// left over, oldest first. Every step is made durable (directory sync)
// before the next one starts, so a crash leaves a prefix of them done.
func (db *DB) installInPlace(outs, old []*segment) error {
	for _, s := range outs {
		if err := db.removeHint(s.id); err != nil {
			return err
		}
		if err := db.fs.Rename(filepath.Join(db.dir, s.name+tmpExt), filepath.Join(db.dir, s.name)); err != nil {
			return err
		}
		if err := db.fs.SyncDir(db.dir); err != nil {
			return err
		}
		s.filled = s.size
		if err := db.writeHint(s); err != nil { // syncs the directory too
			return err
		}
		s.hint = nil
	}
	for _, s := range old[len(outs):] {
		if err := db.removeHint(s.id); err != nil {
			return err
		}
		if err := db.fs.Remove(filepath.Join(db.dir, s.name)); err != nil {
			return err
		}
		if err := db.fs.SyncDir(db.dir); err != nil {
			return err
		}
	}
	return nil
}

// removeHint removes segment id's hint file, if it has one, durably.
func (db *DB) removeHint(id uint32) error {
	err := db.fs.Remove(filepath.Join(db.dir, hintName(id)))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("remove hint: %w", err)
	}
	return db.fs.SyncDir(db.dir)
}

// switchInPlace makes outs the store's segments in place of old, and
// points each copied key at its copy, unless a write changed the key
// during the copy (its entry is no longer the one copied).
func (db *DB) switchInPlace(outs, old []*segment, lives []live, copies []entry) {
	db.mu.Lock()
	defer db.mu.Unlock()
	for _, s := range old {
		delete(db.segs, s.id)
	}
	for _, s := range outs {
		s.live = 0
		db.segs[s.id] = s
	}
	for i, l := range lives {
		key := []byte(l.key)
		if cur, ok := db.index.get(key); ok && cur == l.e {
			e := copies[i]
			db.index.setEntry(key, e)
			db.segs[e.seg].live += int64(e.size)
		}
	}
}
