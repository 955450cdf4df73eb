package engine

import (
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
