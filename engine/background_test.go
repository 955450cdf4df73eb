package engine

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// kvModel is what a store must hold: key -> value, absent when deleted.
type kvModel map[string]string

// checkModel fails unless db holds exactly the live keys of m, and no
// deleted key of m comes back.
func checkModel(t *testing.T, db *DB, m kvModel) {
	t.Helper()
	for k, v := range m {
		checkGet(t, db, k, v)
	}
	live := 0
	for _, v := range m {
		if v != "" {
			live++
		}
	}
	if got := db.Stats().Keys; got != int64(live) {
		t.Errorf("Keys %d, want %d", got, live)
	}
}

// overwrite writes rounds of every key in keys, deleting one key in
// seven each round, and records it in m.
func overwrite(t *testing.T, db *DB, m kvModel, keys, rounds int) {
	t.Helper()
	for r := range rounds {
		for i := range keys {
			k := fmt.Sprintf("key%03d", i)
			if (i+r)%7 == 0 {
				if err := db.Delete([]byte(k)); err != nil {
					t.Fatal(err)
				}
				m[k] = ""
				continue
			}
			v := fmt.Sprintf("round %d of %s %s", r, k, strings.Repeat("v", 40))
			mustPut(t, db, k, v)
			m[k] = v
		}
	}
}

// TestCompactSealedReclaims: overwritten records and tombstones in the
// sealed segments go, the active segment stays, every value and every
// delete survives, in the open store and after a reopen.
func TestCompactSealedReclaims(t *testing.T) {
	opts := Options{SegmentSize: MinSegmentSize}
	db, mem := openMem(t, opts)
	m := kvModel{}
	overwrite(t, db, m, 40, 10)
	before := db.Stats()
	if before.CompactionDebt == 0 || before.SealedBytes == 0 {
		t.Fatalf("before: debt %d of %d sealed bytes, want some garbage to reclaim", before.CompactionDebt, before.SealedBytes)
	}
	if err := db.CompactSealed(); err != nil {
		t.Fatal(err)
	}
	after := db.Stats()
	if after.CompactionDebt != 0 {
		t.Errorf("after: compaction debt %d bytes, want 0", after.CompactionDebt)
	}
	if after.DiskBytes >= before.DiskBytes || after.Segments >= before.Segments {
		t.Errorf("after: %d bytes in %d segments, want fewer than %d in %d", after.DiskBytes, after.Segments, before.DiskBytes, before.Segments)
	}
	if after.LiveBytes != before.LiveBytes {
		t.Errorf("live bytes %d after, %d before: compaction changed what is live", after.LiveBytes, before.LiveBytes)
	}
	if after.CompactionRead == 0 || after.CompactionWritten == 0 || after.Compactions != 1 {
		t.Errorf("after: compaction read %d, wrote %d bytes in %d compactions; want both > 0 in 1", after.CompactionRead, after.CompactionWritten, after.Compactions)
	}
	checkModel(t, db, m)
	overwrite(t, db, m, 40, 2) // writes go on after it
	live := db.Stats().LiveBytes
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = reopenMem(t, mem, opts)
	checkModel(t, db, m)
	if s := db.Stats(); s.LiveBytes != live || s.DiskBytes < s.LiveBytes {
		t.Errorf("after reopen: %d live bytes of %d on disk, want %d live as before the close", s.LiveBytes, s.DiskBytes, live)
	}
}

// TestCompactSealedWithWritesDuringCopy holds a background compaction in
// the middle of its copy (its rate limit waits on the fake clock) while
// keys it already copied, keys it has yet to copy and new keys are
// written and deleted: the copy must not bring back an old value or a
// deleted key, in the open store or after a reopen.
func TestCompactSealedWithWritesDuringCopy(t *testing.T) {
	clk := newFakeClock()
	opts := Options{SegmentSize: MinSegmentSize, clock: clk}
	db, mem := openMem(t, opts)
	m := kvModel{}
	overwrite(t, db, m, 40, 6)
	for i := range 100 { // seal the last round's values behind other keys
		k := fmt.Sprintf("fill%03d", i)
		mustPut(t, db, k, strings.Repeat("f", 50))
		m[k] = strings.Repeat("f", 50)
	}

	quit := make(chan struct{})
	done := make(chan error, 1)
	go func() { done <- db.compactSealed(quit, 1, 0) }() // 1 byte/s: waits after its first record
	waiting := make(chan time.Duration, 1)
	go func() { waiting <- clk.waitTimer() }()
	select {
	case err := <-done:
		t.Fatalf("the compaction returned (%v) without waiting for its rate", err)
	case <-waiting:
	}
	// Mid-copy: overwrite and delete every key (the first was copied,
	// the rest are yet to be), and add new ones.
	overwrite(t, db, m, 50, 3)
	clk.Advance(1000 * time.Hour)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if s := db.Stats(); s.BackgroundCompactions != 1 {
		t.Fatalf("%d compactions of the sealed segments, want 1", s.BackgroundCompactions)
	}
	checkModel(t, db, m)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	checkModel(t, reopenMem(t, mem, Options{SegmentSize: MinSegmentSize}), m)
}

// TestCloseCancelsCompaction: Close stops a background compaction that
// is waiting for its rate, and the store reopens with everything.
func TestCloseCancelsCompaction(t *testing.T) {
	db, mem := openMem(t, Options{SegmentSize: MinSegmentSize})
	m := kvModel{}
	overwrite(t, db, m, 40, 6)
	for i := range 100 { // seal the last round's values behind other keys
		k := fmt.Sprintf("fill%03d", i)
		mustPut(t, db, k, strings.Repeat("f", 50))
		m[k] = strings.Repeat("f", 50)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	// Reopened with garbage past the threshold, the store starts a
	// compaction at once, which waits for its rate of 1 byte/s.
	clk := newFakeClock()
	db = reopenMem(t, mem, Options{SegmentSize: MinSegmentSize, AutoCompact: MinAutoCompact, CompactRate: 1, clock: clk})
	clk.waitTimer()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	s := db.Stats()
	if s.BackgroundCompactions != 0 || s.CompactionErrors != 1 {
		t.Errorf("%d background compactions, %d abandoned: want 0 and 1, cancelled", s.BackgroundCompactions, s.CompactionErrors)
	}
	checkModel(t, reopenMem(t, mem, Options{SegmentSize: MinSegmentSize}), m)
}

// TestAutoCompact: with AutoCompact set, overwriting a store makes it
// compact by itself, and its sealed segments stay within the garbage
// fraction asked for once it has caught up.
func TestAutoCompact(t *testing.T) {
	opts := Options{SegmentSize: MinSegmentSize, AutoCompact: DefaultAutoCompact}
	db, mem := openMem(t, opts)
	m := kvModel{}
	overwrite(t, db, m, 40, 30)
	// Wait for the compactor to catch up (go test's -timeout bounds it).
	for db.Stats().BackgroundCompactions == 0 || db.compactionDue() {
		time.Sleep(time.Millisecond)
	}
	db.compactMu.Lock() // not in the middle of one
	s := db.Stats()
	db.compactMu.Unlock()
	if float64(s.CompactionDebt) >= DefaultAutoCompact*float64(s.SealedBytes) {
		t.Errorf("debt %d of %d sealed bytes: past the threshold %v", s.CompactionDebt, s.SealedBytes, DefaultAutoCompact)
	}
	if s.CompactionErrors != 0 {
		t.Errorf("%d background compactions failed", s.CompactionErrors)
	}
	checkModel(t, db, m)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	checkModel(t, reopenMem(t, mem, opts), m)
}

// TestCompactSealedConcurrent runs compactions of the sealed segments
// back to back while writers overwrite and delete their own keys, and
// checks every key's last write, before and after a reopen. (Run with
// -race.)
func TestCompactSealedConcurrent(t *testing.T) {
	opts := Options{SegmentSize: MinSegmentSize, Sync: SyncPolicy{Mode: SyncGroup}}
	db, mem := openMem(t, opts)
	const writers, keys, rounds = 4, 20, 15
	models := make([]kvModel, writers)
	var wg sync.WaitGroup
	for w := range writers {
		models[w] = kvModel{}
		wg.Go(func() {
			for r := range rounds {
				for i := range keys {
					k := fmt.Sprintf("w%d-%02d", w, i)
					if (i+r)%5 == 0 {
						if err := db.Delete([]byte(k)); err != nil {
							t.Error(err)
							return
						}
						models[w][k] = ""
						continue
					}
					v := fmt.Sprintf("%s round %d %s", k, r, strings.Repeat("x", 30))
					if err := db.Put([]byte(k), []byte(v)); err != nil {
						t.Error(err)
						return
					}
					models[w][k] = v
				}
			}
		})
	}
	stop := make(chan struct{})
	compacted := make(chan int)
	go func() {
		n := 0
		for {
			select {
			case <-stop:
				compacted <- n
				return
			default:
			}
			if err := db.CompactSealed(); err != nil {
				t.Error(err)
			}
			n++
		}
	}()
	wg.Wait()
	close(stop)
	if n := <-compacted; n == 0 {
		t.Fatal("no compaction ran beside the writers")
	}
	all := kvModel{}
	for _, m := range models {
		for k, v := range m {
			all[k] = v
		}
	}
	checkModel(t, db, all)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	checkModel(t, reopenMem(t, mem, opts), all)
}

// TestAutoCompactOptions: out-of-range thresholds and rates are refused
// with what is allowed.
func TestAutoCompactOptions(t *testing.T) {
	for _, o := range []Options{{AutoCompact: 0.01}, {AutoCompact: 1.5}, {AutoCompact: -1}, {CompactRate: -5}} {
		_, err := Open("/db", Options{FS: NewMemFS(), AutoCompact: o.AutoCompact, CompactRate: o.CompactRate})
		if err == nil || !strings.Contains(err.Error(), "must be") {
			t.Errorf("AutoCompact %v, CompactRate %d: error %v, want one saying what is allowed", o.AutoCompact, o.CompactRate, err)
		}
	}
	db, _ := openMem(t, Options{})
	db.Close()
	if err := db.CompactSealed(); !errors.Is(err, ErrClosed) {
		t.Errorf("CompactSealed after Close: %v, want ErrClosed", err)
	}
}

// overwriteAsync runs overwrite's rounds in a goroutine, without a
// *testing.T (writes may block there), and sends the first error, or
// nil once it is done. rounds < 0 writes until an error.
func overwriteAsync(db *DB, keys, rounds int) <-chan error {
	done := make(chan error, 1)
	go func() {
		for r := 0; rounds < 0 || r < rounds; r++ {
			for i := range keys {
				k := fmt.Sprintf("key%03d", i)
				var err error
				if (i+r)%7 == 0 {
					err = db.Delete([]byte(k))
				} else {
					err = db.Put([]byte(k), []byte(fmt.Sprintf("round %d of %s %s", r, k, strings.Repeat("v", 40))))
				}
				if err != nil {
					done <- err
					return
				}
			}
		}
		done <- nil
	}()
	return done
}

// waitStalls polls until the store has counted n write stalls.
func waitStalls(db *DB, n int64) Stats {
	for {
		if s := db.Stats(); s.WriteStalls >= n {
			return s
		}
		time.Sleep(time.Millisecond)
	}
}

// stallLimit is the most compaction debt a store of live bytes may hold
// under the default StallDebt: the bound, plus what writes add between
// two measures of it (checkEvery) and the garbage of one sealed segment.
func stallLimit(live, segSize int64) int64 {
	return max(int64(DefaultStallDebt*float64(live)), segSize) + segSize/16 + segSize + 200
}

// TestWriteStallWaitsForCompaction: once the compaction debt passes its
// bound, writes stop until a background compaction brings it back under,
// and the stall is counted with its length on the store's clock. The
// test holds compactMu, so no compaction can run until it lets one.
func TestWriteStallWaitsForCompaction(t *testing.T) {
	clk := newFakeClock()
	// AutoCompact 1: the garbage fraction alone (almost) never starts
	// a compaction; the stall bound does.
	opts := Options{SegmentSize: MinSegmentSize, AutoCompact: 1, clock: clk}
	db, mem := openMem(t, opts)
	db.compactMu.Lock()
	writes := overwriteAsync(db, 40, 30)
	s := waitStalls(db, 1)
	select {
	case err := <-writes:
		t.Fatalf("the writes ended (%v) while stalled, with no compaction able to run", err)
	default:
	}
	if bound := max(int64(DefaultStallDebt*float64(s.LiveBytes)), MinSegmentSize); s.CompactionDebt <= bound || s.CompactionDebt > stallLimit(s.LiveBytes, MinSegmentSize) {
		t.Errorf("stalled at a debt of %d bytes (%d live): want above the bound %d and at most %d", s.CompactionDebt, s.LiveBytes, bound, stallLimit(s.LiveBytes, MinSegmentSize))
	}
	clk.Advance(7 * time.Second)
	if got := db.Stats().StallTime; got != 7*time.Second {
		t.Errorf("StallTime during the stall: got %v, want 7s (the stall so far)", got)
	}
	db.compactMu.Unlock()
	if err := <-writes; err != nil {
		t.Fatal(err)
	}
	s = db.Stats()
	// Later stalls, if any, took no time on the fake clock.
	if s.StallTime != 7*time.Second || s.WriteStalls < 1 || s.BackgroundCompactions < 1 {
		t.Errorf("after: %d stalls for %v, %d background compactions; want at least 1 stall for 7s in all, and a compaction", s.WriteStalls, s.StallTime, s.BackgroundCompactions)
	}
	m := kvModel{}
	overwrite(t, db, m, 40, 30) // the same writes again: the model
	checkModel(t, db, m)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	checkModel(t, reopenMem(t, mem, Options{SegmentSize: MinSegmentSize}), m)
}

// TestWriteStallBoundsDebt: with a compaction that only runs while
// writers wait (its rate is 1 byte/s on a clock that never moves, and a
// stall lifts the rate; the cold records make it copy, and so wait), the debt never passes the stall bound by more
// than the slack a check allows, where without the stall it grows with
// every overwrite.
func TestWriteStallBoundsDebt(t *testing.T) {
	for _, c := range []struct {
		stall   float64
		bounded bool
	}{{0, true}, {-1, false}} {
		t.Run(fmt.Sprintf("StallDebt=%v", c.stall), func(t *testing.T) {
			opts := Options{SegmentSize: MinSegmentSize, AutoCompact: DefaultAutoCompact, CompactRate: 1, StallDebt: c.stall, clock: newFakeClock()}
			db, _ := openMem(t, opts)
			defer db.Close()
			m := kvModel{}
			for i := range 100 { // cold records, which every compaction copies
				k, v := fmt.Sprintf("cold%03d", i), strings.Repeat("c", 50)
				mustPut(t, db, k, v)
				m[k] = v
			}
			worst, over := int64(0), false
			for r := range 40 {
				overwrite(t, db, m, 40, 1)
				s := db.Stats()
				worst = max(worst, s.CompactionDebt)
				if s.CompactionDebt > stallLimit(s.LiveBytes, MinSegmentSize) {
					over = true
					if c.bounded {
						t.Fatalf("round %d: debt %d bytes with %d live, past the stall bound's limit %d", r, s.CompactionDebt, s.LiveBytes, stallLimit(s.LiveBytes, MinSegmentSize))
					}
				}
			}
			s := db.Stats()
			if c.bounded && (s.WriteStalls == 0 || s.BackgroundCompactions == 0) {
				t.Errorf("%d stalls, %d background compactions: want both (the copy runs only while writers wait)", s.WriteStalls, s.BackgroundCompactions)
			}
			if !c.bounded && (!over || s.WriteStalls != 0) {
				t.Errorf("without the stall: worst debt %d bytes, %d stalls; want past the limit and none (else the bounded case proves nothing)", worst, s.WriteStalls)
			}
			checkModel(t, db, m)
		})
	}
}

// TestStallEndsWhenCompactionFails: a compaction that cannot be done
// (the segments on disk are larger than the SegmentSize the store is
// reopened with, errRunsAhead) must let stalled writers go, not leave
// them waiting for a compaction that will never bring the debt down.
func TestStallEndsWhenCompactionFails(t *testing.T) {
	db, mem := openMem(t, Options{SegmentSize: 16 << 10})
	m := kvModel{}
	for i := range 300 { // a first segment whose records all stay live
		k, v := fmt.Sprintf("live%03d", i), strings.Repeat("l", 50)
		mustPut(t, db, k, v)
		m[k] = v
	}
	overwrite(t, db, m, 20, 60)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = reopenMem(t, mem, Options{SegmentSize: MinSegmentSize, AutoCompact: 1})
	done := make(chan error, 1)
	go func() {
		for i := range 50 {
			if err := db.Put([]byte(fmt.Sprintf("new%02d", i)), []byte("v")); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute): // a hang, not a speed: the writes take microseconds
		t.Fatalf("writes still waiting after a minute: the failed compaction never ended the stall (%+v)", db.Stats())
	}
	for i := range 50 {
		m[fmt.Sprintf("new%02d", i)] = "v"
	}
	if s := db.Stats(); s.WriteStalls == 0 || s.CompactionErrors < 2 || s.BackgroundCompactions != 0 {
		t.Errorf("%d stalls, %d failed and %d done compactions; want stalls ended by failed compactions (errRunsAhead), none done", s.WriteStalls, s.CompactionErrors, s.BackgroundCompactions)
	}
	checkModel(t, db, m)
}

// TestCloseReleasesStalledWriter: Close returns a stalled write with
// ErrClosed, while the compaction it waits for cannot even start.
func TestCloseReleasesStalledWriter(t *testing.T) {
	db, _ := openMem(t, Options{SegmentSize: MinSegmentSize, AutoCompact: 1, clock: newFakeClock()})
	db.compactMu.Lock()
	writes := overwriteAsync(db, 40, -1)
	waitStalls(db, 1)
	closed := make(chan error, 1)
	go func() { closed <- db.Close() }()
	if err := <-writes; !errors.Is(err, ErrClosed) {
		t.Errorf("stalled write after Close: %v, want ErrClosed", err)
	}
	db.compactMu.Unlock()
	if err := <-closed; err != nil {
		t.Errorf("Close: %v", err)
	}
}

// TestBackgroundCompactionLeavesYoungSegments: the background compaction
// rewrites the oldest sealed segments, full of garbage, and leaves the
// newest sealed one, whose records are live, as it is; every value
// survives, open and reopened. CompactSealed rewrites them all.
func TestBackgroundCompactionLeavesYoungSegments(t *testing.T) {
	opts := Options{SegmentSize: MinSegmentSize, Sync: SyncPolicy{Mode: SyncNone}}
	db, mem := openMem(t, opts)
	m := kvModel{}
	overwrite(t, db, m, 40, 10)
	for i := range 120 { // young records, never overwritten: more than a segment
		k, v := fmt.Sprintf("young%03d", i), strings.Repeat("y", 50)
		mustPut(t, db, k, v)
		m[k] = v
	}
	db.mu.RLock()
	young := db.segs[db.active.id-1]
	db.mu.RUnlock()
	if young == nil || float64(young.size-young.live) >= DefaultAutoCompact*float64(young.size) {
		t.Fatalf("the newest sealed segment is past the garbage threshold (%+v): the test sets nothing up", young)
	}
	before := db.Stats()
	if err := db.compactSealed(nil, 0, DefaultAutoCompact); err != nil {
		t.Fatal(err)
	}
	after := db.Stats()
	db.mu.RLock()
	same := db.segs[young.id] == young
	db.mu.RUnlock()
	if !same {
		t.Errorf("segment %d, all live, was rewritten: want it left for later", young.id)
	}
	if after.CompactionRead >= before.SealedBytes || after.CompactionDebt >= before.CompactionDebt/4 {
		t.Errorf("read %d of %d sealed bytes, debt %d -> %d: want less than all read and most of the debt reclaimed", after.CompactionRead, before.SealedBytes, before.CompactionDebt, after.CompactionDebt)
	}
	checkModel(t, db, m)
	if err := db.CompactSealed(); err != nil {
		t.Fatal(err)
	}
	db.mu.RLock()
	same = db.segs[young.id] == young
	db.mu.RUnlock()
	if s := db.Stats(); same || s.CompactionDebt != 0 {
		t.Errorf("CompactSealed: young segment left as it was %v, debt %d; want every sealed segment rewritten, no debt", same, s.CompactionDebt)
	}
	checkModel(t, db, m)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	checkModel(t, reopenMem(t, mem, opts), m)
}
