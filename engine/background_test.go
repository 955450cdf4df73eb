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
	go func() { done <- db.compactSealed(quit, 1) }() // 1 byte/s: waits after its first record
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
