package engine

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// TestReopenSyncsDirectory: a rotation creates the next segment file, and
// the directory sync that would make its name durable fails. The store
// fails (ErrFailed); the user closes and reopens it, as ErrFailed's doc
// says. The reopened store writes into that segment, so Open must make
// its name durable: a Put acknowledged under "always" afterwards must
// survive a power cut.
func TestReopenSyncsDirectory(t *testing.T) {
	mem := NewMemFS()
	opts := Options{FS: mem, SegmentSize: MinSegmentSize, NoHints: true}
	db, err := Open("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	created, failed := false, false
	mem.Fault = func(op, name string) error {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case op == "create" && strings.HasSuffix(name, segmentExt):
			created = true
		case op == "syncdir" && created && !failed:
			failed = true
			return syscall.EIO
		}
		return nil
	}
	var werr error
	for i := 0; i < 1000 && werr == nil; i++ {
		werr = db.Put([]byte(strings.Repeat("k", 10)+string(rune('a'+i%26))), make([]byte, 200))
	}
	if !failed {
		t.Fatalf("no rotation reached the directory sync (last error %v)", werr)
	}
	db.Close() // returns the sticky error
	mem.Fault = nil

	db, err = Open("/db", opts)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	mustPut(t, db, "after-reopen", "durable")
	if s := db.Stats(); s.DurableSeq != s.LastSeq {
		t.Fatalf("under always: DurableSeq %d, LastSeq %d, want equal", s.DurableSeq, s.LastSeq)
	}
	rebooted := mem.Crash(false, nil)
	db, err = Open("/db", Options{FS: rebooted, SegmentSize: MinSegmentSize, NoHints: true})
	if err != nil {
		t.Fatalf("open after the power cut: %v", err)
	}
	defer db.Close()
	checkGet(t, db, "after-reopen", "durable")
}

// TestColdOpenSyncsNothing: the Open of a closed store, whose every
// segment has a hint covering it, fdatasyncs no file and syncs no
// directory (each would be a device flush it waits for); a leftover .tmp
// file it removes makes it sync the directory, and without hints it
// fdatasyncs every segment.
func TestColdOpenSyncsNothing(t *testing.T) {
	mem := NewMemFS()
	opts := Options{FS: mem, SegmentSize: MinSegmentSize}
	db, err := Open("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 300 {
		mustPut(t, db, fmt.Sprintf("k%d", i%100), strings.Repeat("v", 40))
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	reopen := func(o Options) (syncs, syncdirs int) {
		t.Helper()
		var mu sync.Mutex
		mem.Fault = func(op, name string) error {
			mu.Lock()
			defer mu.Unlock()
			switch op {
			case "sync":
				syncs++
			case "syncdir":
				syncdirs++
			}
			return nil
		}
		db, err := Open("/db", o)
		mem.Fault = nil
		if err != nil {
			t.Fatal(err)
		}
		segs := db.Stats().Segments
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		if segs < 3 {
			t.Fatalf("%d segments, want several", segs)
		}
		return syncs, syncdirs
	}
	if s, d := reopen(opts); s != 0 || d != 0 {
		t.Errorf("cold open of a closed store: %d fdatasyncs, %d directory syncs; want none", s, d)
	}
	f, _ := mem.OpenFile("/db/000000001.seg.tmp", os.O_RDWR|os.O_CREATE, 0o644)
	f.Close()
	if _, d := reopen(opts); d != 1 {
		t.Errorf("open that removed a leftover: %d directory syncs, want 1", d)
	}
	o := opts
	o.NoHints = true
	if s, _ := reopen(o); s < 3 {
		t.Errorf("open without hints: %d fdatasyncs, want one per segment", s)
	}
}

// TestOpenSyncsRecordsAfterTheHint: a killed process left records in the
// newest segment after the part its hint (from an earlier Close) covers,
// handed to the OS but never fdatasynced. The next Open must fdatasync
// them before it reports them durable (DurableSeq == LastSeq): a power
// cut after that Open must not take them. (Open skips the fdatasync only
// of a segment whose hint covers every record in it.)
func TestOpenSyncsRecordsAfterTheHint(t *testing.T) {
	mem := NewMemFS()
	opts := Options{FS: mem, Sync: SyncPolicy{Mode: SyncNone}, WriteBuffer: -1}
	db, err := Open("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	mustPut(t, db, "a", "covered by the hint")
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if db, err = Open("/db", opts); err != nil {
		t.Fatal(err)
	}
	mustPut(t, db, "b", "after the hint, never synced")
	// The process is killed here: db is never closed, and what it wrote
	// is in the (simulated) page cache only.
	db2, err := Open("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	if s := db2.Stats(); s.DurableSeq != s.LastSeq || s.LastSeq < 2 {
		t.Fatalf("after the reopen: DurableSeq %d, LastSeq %d; want equal, at least 2", s.DurableSeq, s.LastSeq)
	}
	db3, err := Open("/db", Options{FS: mem.Crash(false, nil)})
	if err != nil {
		t.Fatalf("open after the power cut: %v", err)
	}
	defer db3.Close()
	checkGet(t, db3, "a", "covered by the hint")
	checkGet(t, db3, "b", "after the hint, never synced")
}
