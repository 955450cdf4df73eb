package engine

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// TestStickySyncError: after one failed fdatasync every write fails with
// that error, even though later fdatasyncs would succeed, and nothing more
// is acknowledged.
func TestStickySyncError(t *testing.T) {
	for _, p := range []string{"always", "group", "batch:2", "periodic:1ms"} {
		t.Run(p, func(t *testing.T) {
			pol, _ := ParseSync(p)
			db, mem := openMem(t, Options{Sync: pol})
			mustPut(t, db, "before", "ok")
			mustPut(t, db, "before2", "ok")
			failed := false
			var mu sync.Mutex
			mem.Fault = func(op, name string) error {
				mu.Lock()
				defer mu.Unlock()
				if op == "sync" && !failed {
					failed = true
					return syscall.EIO
				}
				return nil
			}
			var firstErr error
			for i := 0; i < 1000 && firstErr == nil; i++ {
				firstErr = db.Put([]byte(fmt.Sprint(i)), []byte("v"))
				if firstErr == nil && p == "periodic:1ms" {
					// let the timer hit the fault
					for db.commit.failure() == nil && db.Stats().DurableSeq < db.Stats().LastSeq {
					}
				}
			}
			if !errors.Is(firstErr, ErrFailed) || !errors.Is(firstErr, syscall.EIO) {
				t.Fatalf("got %v, want an error wrapping ErrFailed and EIO", firstErr)
			}
			durable := db.Stats().DurableSeq
			for i := range 5 {
				err := db.Put([]byte(fmt.Sprint("after", i)), []byte("v"))
				if !errors.Is(err, ErrFailed) || err.Error() != firstErr.Error() {
					t.Errorf("Put after the failure: got %v, want the first error %v", err, firstErr)
				}
			}
			if err := db.Delete([]byte("before")); !errors.Is(err, ErrFailed) {
				t.Errorf("Delete after the failure: got %v, want ErrFailed", err)
			}
			if got := db.Stats().DurableSeq; got != durable {
				t.Errorf("DurableSeq moved from %d to %d after the failure", durable, got)
			}
			if err := db.Close(); !errors.Is(err, ErrFailed) {
				t.Errorf("Close: got %v, want the sticky error", err)
			}
			db, err := Open("/db", Options{FS: mem})
			if err != nil {
				t.Fatalf("reopen: %v", err)
			}
			defer db.Close()
			checkGet(t, db, "before", "ok")
			mustPut(t, db, "reopened", "yes")
		})
	}
}

// TestENOSPC fills a size-capped MemFS. The failing write gives an error
// that names the file and says the disk is full; the store refuses
// further writes; after space is freed it reopens with everything that
// was acknowledged.
func TestENOSPC(t *testing.T) {
	for _, prealloc := range []int64{0, -1} {
		t.Run(fmt.Sprintf("prealloc=%d", prealloc), func(t *testing.T) {
			mem := NewMemFS()
			mem.SetLimit(3 << 20)
			opts := Options{FS: mem, Preallocate: prealloc, SegmentSize: 1 << 20}
			db, err := Open("/db", opts)
			if err != nil {
				t.Fatal(err)
			}
			acked := model{}
			var werr error
			for i := 0; i < 100000; i++ {
				k, v := fmt.Sprintf("k%d", i), fmt.Sprintf("%0500d", i)
				if werr = db.Put([]byte(k), []byte(v)); werr != nil {
					break
				}
				acked[k] = v
			}
			if !errors.Is(werr, syscall.ENOSPC) || !errors.Is(werr, ErrFailed) || !strings.Contains(werr.Error(), ".seg") {
				t.Fatalf("got %v, want ErrFailed wrapping ENOSPC and naming the segment", werr)
			}
			if err := db.Put([]byte("more"), []byte("x")); !errors.Is(err, ErrFailed) {
				t.Errorf("Put after ENOSPC: got %v, want ErrFailed", err)
			}
			db.Close()
			mem.SetLimit(0)
			db, err = Open("/db", opts)
			if err != nil {
				t.Fatalf("reopen after ENOSPC: %v", err)
			}
			defer db.Close()
			acked.check(t, db)
			mustPut(t, db, "after", "space")
			checkGet(t, db, "after", "space")
		})
	}
}
