package engine

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
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
// The outputs reuse the ids of the inputs. The inputs are sealed
// segments, a prefix of the log in replay order (below), and the
// outputs take their place in it: replaying output 1, 2, ... and then
// the segments not rewritten (younger sealed ones, the active one and
// any sealed during the copy) rebuilds the index, a record copied
// before it was overwritten being replayed before the record that
// overwrote it.
//
// The order of the steps keeps every acknowledged write across a crash at
// any point, and never resurrects a delete:
//
//   - The active segment is fdatasynced, so that every write that made
//     a record in a sealed segment garbage is durable before the copy
//     drops that record (writers wait for it).
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
// The background compaction takes the oldest sealed segments, up to the
// newest one that is itself past the garbage threshold (pickInputs),
// and leaves younger ones, still mostly live, for later; CompactSealed
// takes them all. Either way the inputs are a prefix of the log: every
// segment older than an input is an input. So a tombstone is dropped
// only together with every older record of its key. The last write's
// tombstone, when the active segment is still empty and its segment an
// input, is kept, as in Compact, so that a reopen resumes numbering
// after it.
//
// Writers wait for it during that first fdatasync, while it lists the
// live keys of its inputs (one pass over the index with db.mu held for
// reading; readers go on) and while it switches the index to the copies
// (one pass over the copied keys with db.mu held, readers waiting too);
// the copy itself holds no lock writers take. They wait for it also when it falls behind: once the
// compaction debt passes Options.StallDebt times the live bytes (or one
// segment), each write waits (waitForCompaction) until a compaction
// brings the debt back under, as an LSM stops writes when its level 0
// fills up; a copy paced by CompactRate runs at full speed meanwhile.
// That backpressure is what bounds the bytes on disk when writers are
// faster than compaction. Close cancels a running copy (between two
// records, or while it waits for its rate), returns stalled writes with
// ErrClosed, and waits for the install steps if they have begun: a few
// renames and directory syncs.

// compactor is the background compaction goroutine's state, and the
// write stall that holds writers back while it catches up (in an LSM,
// pebble's L0 stop writes and RocksDB's stopped writes do that job).
// Safe for concurrent use: the goroutine, the writers and Stats share it.
type compactor struct {
	garbage float64        // Options.AutoCompact: the garbage fraction that starts it
	rate    int64          // Options.CompactRate: bytes per second, 0 = unlimited
	stall   float64        // Options.StallDebt: writes wait above it; <= 0 = never
	kick    chan struct{}  // a segment was sealed, or writes stopped: check the debt
	quit    chan struct{}  // closed by Close
	wg      sync.WaitGroup // the goroutine

	// nextCheck is the value of the store's bytesWritten at which the
	// next write measures the debt against the stall bound: writes
	// look every checkEvery bytes and after every seal, not on every
	// Put (the measure walks the segments under mu).
	nextCheck  atomic.Int64
	checkEvery int64 // stallCheckBytes, or 1/16 of a smaller segment
	// stalling mirrors stalled, for the writers' check without stallMu.
	stalling atomic.Bool

	// stallMu guards stalled, since, release and stallBegan. It is
	// taken before mu and never while holding writeMu: writers wait
	// before they take writeMu, which the compaction needs.
	stallMu sync.Mutex
	stalled bool      // writes are stopped
	since   time.Time // when they stopped
	// release is closed when the stall ends; stallBegan is closed when
	// a stall begins (a paced copy stops waiting for its rate then) and
	// replaced by an open one when it ends.
	// Invariant: stalled == (release != nil && release is open), and
	// stallBegan is closed iff stalled.
	release, stallBegan chan struct{}

	// scratch is the live keys and copies of the last compaction of the
	// sealed segments, kept for the next one to reuse: tens of MB for a
	// million keys, which a compaction every few seconds would otherwise
	// allocate anew, each time making the collector run beside the
	// writers. Guarded by db.compactMu.
	scratch liveSet
}

// stallCheckBytes is how many bytes of records the writers append
// between two measures of the compaction debt against the stall bound
// (at most; 1/16 of the segment size when that is less): the debt can
// pass the bound by that much before writes stop, and by the garbage of
// a segment sealed since the last measure.
const stallCheckBytes = 256 << 10

// startCompactor starts the background compaction goroutine.
func (db *DB) startCompactor(garbage float64, rate int64, stall float64) {
	db.bg = &compactor{garbage: garbage, rate: rate, stall: stall,
		kick: make(chan struct{}, 1), quit: make(chan struct{}), stallBegan: make(chan struct{}),
		checkEvery: min(stallCheckBytes, db.segSize/16)}
	db.bg.wg.Add(1)
	go db.runCompactor()
	db.kickCompactor() // a store reopened with garbage starts on it
}

// kickCompactor tells the background goroutine, if there is one, that
// the sealed segments changed, and makes the next write measure the debt.
// It never blocks. The kick channel holds one kick, so a kick sent while
// the goroutine is busy is seen when it looks again, never lost.
func (db *DB) kickCompactor() {
	if db.bg == nil {
		return
	}
	db.bg.nextCheck.Store(0)
	select {
	case db.bg.kick <- struct{}{}:
	default:
	}
}

// stopCompactor cancels the background goroutine and waits for it.
// Writers waiting in a stall return ErrClosed (waitForCompaction).
func (db *DB) stopCompactor() {
	if db.bg == nil {
		return
	}
	close(db.bg.quit)
	db.bg.wg.Wait()
}

// runCompactor compacts the sealed segments each time their garbage
// passes db.bg.garbage of their bytes, or the debt passes the stall
// bound, until Close. After each attempt it ends the stall, if there is
// one, once the debt is back under the bound, and at once if the
// attempt failed: writers must never wait for a compaction that is not
// coming.
func (db *DB) runCompactor() {
	defer db.bg.wg.Done()
	for {
		select {
		case <-db.bg.quit:
			return
		case <-db.bg.kick:
		}
		for db.compactionDue() {
			if err := db.compactSealed(db.bg.quit, db.bg.rate, db.bg.garbage); err != nil {
				// Abandoned (the store is as it was) or failed (the
				// store reports ErrFailed): either way, let the
				// writers go and wait for the next sealed segment.
				db.stats.compactErrors.Add(1)
				db.endStall(true)
				break
			}
			db.endStall(false)
		}
		// Nothing is due: a stall that began on a debt some other
		// compaction (Compact, CompactSealed) has since reclaimed ends.
		db.endStall(false)
	}
}

// compactionDue reports whether the garbage in the sealed segments has
// reached db.bg.garbage of their bytes, or the debt the stall bound.
//
// It does not start earlier to spare the writers their stalls: with
// AutoCompact 0.5 and the default StallDebt both come at about the same
// debt on a store much larger than a segment, so a writer faster than
// compaction stops at each one, but starting at half the stall bound
// made each compaction copy more live bytes for the garbage it reclaims
// (1M keys overwritten 5 times, -sync none, load 30 on 2 cores: write
// amplification 3.45 against 2.00, 36 s of 160 s stalled against 45 s
// of 102 s).
func (db *DB) compactionDue() bool {
	sealed, garbage, live := db.debt()
	if garbage > 0 && float64(garbage) >= db.bg.garbage*float64(sealed) {
		return true
	}
	return db.overStallBound(garbage, live)
}

// stallBound is the debt past which writes stall, for a store of live
// bytes live: Options.StallDebt times them, or one segment, whichever is
// larger.
func (db *DB) stallBound(live int64) int64 {
	return max(int64(db.bg.stall*float64(live)), db.segSize)
}

// overStallBound reports whether a debt of garbage bytes, with live
// bytes live, is past the stall bound.
func (db *DB) overStallBound(garbage, live int64) bool {
	return db.bg.stall > 0 && garbage > db.stallBound(live)
}

// debt returns the bytes of the sealed segments (every segment but the
// newest, the active one), how many of them are garbage, and the live
// bytes of the whole store.
func (db *DB) debt() (sealed, garbage, live int64) {
	db.mu.RLock()
	defer db.mu.RUnlock()
	newest := uint32(0)
	for id := range db.segs {
		newest = max(newest, id)
	}
	for id, s := range db.segs {
		live += s.live
		if id != newest {
			sealed += s.size
			garbage += s.size - s.live
		}
	}
	return sealed, garbage, live
}

// waitForCompaction is the backpressure every write passes before it
// takes writeMu: while the compaction debt is past the stall bound, it
// waits for the background compaction to bring it back (or to give up),
// and returns ErrClosed if the store closes meanwhile. Most writes only
// read two atomics: the debt is measured every stallCheckBytes.
func (db *DB) waitForCompaction() error {
	bg := db.bg
	if bg == nil || bg.stall <= 0 {
		return nil
	}
	if !bg.stalling.Load() && db.stats.bytesWritten.Load() < bg.nextCheck.Load() {
		return nil
	}
	release := db.beginStall()
	if release == nil {
		return nil
	}
	select {
	case <-release:
		return nil
	case <-bg.quit:
		return ErrClosed
	}
}

// beginStall measures the debt and, if it is past the bound, stops
// writes (unless they are stopped already) and tells the compactor. It
// returns the channel that is closed when writes may go on, or nil if
// they need not wait.
func (db *DB) beginStall() <-chan struct{} {
	bg := db.bg
	bg.stallMu.Lock()
	defer bg.stallMu.Unlock()
	if bg.stalled {
		return bg.release
	}
	bg.nextCheck.Store(db.stats.bytesWritten.Load() + bg.checkEvery)
	if _, garbage, live := db.debt(); !db.overStallBound(garbage, live) {
		return nil
	}
	bg.stalled = true
	bg.stalling.Store(true)
	bg.since = db.clock.Now()
	bg.release = make(chan struct{})
	close(bg.stallBegan)
	db.stats.stalls.Add(1)
	// Under stallMu, after stalled is set: the compactor, busy or not,
	// looks at the debt again after this kick, and only it ends the stall.
	db.kickCompactor()
	return bg.release
}

// endStall ends the stall, if there is one, when the debt is back under
// the bound or when force is set (the compaction gave up).
func (db *DB) endStall(force bool) {
	bg := db.bg
	bg.stallMu.Lock()
	defer bg.stallMu.Unlock()
	if !bg.stalled {
		return
	}
	if _, garbage, live := db.debt(); !force && db.overStallBound(garbage, live) {
		return
	}
	db.stats.stallNanos.Add(int64(db.clock.Now().Sub(bg.since)))
	bg.stalled = false
	bg.stalling.Store(false)
	close(bg.release)
	bg.stallBegan = make(chan struct{})
}

// stallBegun returns a channel that is closed while writes are stopped.
// A nil compactor (a CompactSealed with no background goroutine)
// never stalls: its channel is nil, which never becomes ready.
func (bg *compactor) stallBegun() <-chan struct{} {
	if bg == nil {
		return nil
	}
	bg.stallMu.Lock()
	defer bg.stallMu.Unlock()
	return bg.stallBegan
}

// stallTime is how long writes have been stalled in all, the stall
// going on, if any, up to now.
func (db *DB) stallTime() time.Duration {
	total := time.Duration(db.stats.stallNanos.Load())
	if db.bg == nil {
		return total
	}
	db.bg.stallMu.Lock() // endStall adds to stallNanos under it
	defer db.bg.stallMu.Unlock()
	total = time.Duration(db.stats.stallNanos.Load())
	if db.bg.stalled {
		total += db.clock.Now().Sub(db.bg.since)
	}
	return total
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
	return db.compactSealed(nil, 0, 0)
}

// compactSealed is CompactSealed, cancelled when quit is closed and paced
// at rate bytes per second (0: unlimited) except while writes are
// stalled. Its inputs are the oldest sealed segments up to the newest
// one whose own garbage is at least minGarbage of its bytes (pickInputs);
// minGarbage 0 takes them all.
func (db *DB) compactSealed(quit <-chan struct{}, rate int64, minGarbage float64) error {
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
	activeID := db.active.id
	lastDel := db.lastDel
	activeEmpty := db.active.size == 0
	db.mu.RLock()
	old, all := db.pickInputs(activeID, minGarbage)
	var tomb *record
	if all && activeEmpty && lastDel != nil {
		// The last write was a Delete in the newest sealed segment,
		// which is an input: keep it.
		tomb = &record{seq: db.lastSeq, kind: kindDelete, key: bytes.Clone(lastDel)}
	}
	inputs := map[uint32]*segment{}
	for _, s := range old {
		inputs[s.id] = s
	}
	db.writeMu.Unlock()
	lives := &liveSet{}
	if db.bg != nil {
		lives = &db.bg.scratch
		lives.reset()
	}
	db.index.each(func(k []byte, e entry) {
		if inputs[e.seg] != nil {
			lives.add(k, e)
		}
	})
	db.mu.RUnlock()
	if len(old) == 0 {
		return nil
	}
	sortByPlace(lives.lives)

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

// pickInputs chooses what a compaction of the sealed segments (the
// segments older than activeID) rewrites, oldest first: the oldest ones,
// up to and including the newest whose own garbage is at least
// minGarbage of its bytes, so that young segments, whose records are
// still mostly live, are left to collect garbage first. all reports that
// every sealed segment is an input (and so when no segment alone reaches
// minGarbage: the garbage is spread out).
//
// The inputs must be a prefix of the log in replay order, never a pick
// of the segments with the most garbage wherever they are: the outputs
// take the ids of the inputs, and a record may move to an older id only
// if every segment between is rewritten too (see the top of this file).
// In a log overwritten at random, the oldest segments hold the most
// garbage anyway: their records have had the longest to be overwritten.
//
// REQUIRES: db.mu held.
func (db *DB) pickInputs(activeID uint32, minGarbage float64) (old []*segment, all bool) {
	for id, s := range db.segs {
		if id < activeID {
			old = append(old, s)
		}
	}
	slices.SortFunc(old, func(a, b *segment) int { return int(a.id) - int(b.id) })
	if minGarbage <= 0 {
		return old, true
	}
	for i := len(old) - 1; i >= 0; i-- {
		s := old[i]
		if s.size > 0 && float64(s.size-s.live) >= minGarbage*float64(s.size) {
			return old[:i+1], i == len(old)-1
		}
	}
	return old, true
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
// store's clock) until they are due, unless writes are stalled or stall
// while it waits: they are waiting for this copy then.
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
	stalled := w.db.bg.stallBegun()
	select {
	case <-stalled:
		return nil // writers wait for this copy: it runs at full speed
	default:
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
	case <-stalled:
		return nil
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
func (db *DB) switchInPlace(outs, old []*segment, lives *liveSet, copies []entry) {
	db.mu.Lock()
	defer db.mu.Unlock()
	for _, s := range old {
		delete(db.segs, s.id)
	}
	for _, s := range outs {
		s.live = 0
		db.segs[s.id] = s
	}
	for i, l := range lives.lives {
		key := lives.key(i)
		if cur, ok := db.index.get(key); ok && cur == l.e {
			e := copies[i]
			db.index.setEntry(key, e)
			db.segs[e.seg].live += int64(e.size)
		}
	}
}
