package engine

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// TestStickySyncError: after one failed fdatasync every write fails with
// that error, even though later fdatasyncs would succeed, and nothing more
// is acknowledged; a reopen finds exactly the writes that were durable.
func TestStickySyncError(t *testing.T) {
	for _, p := range []string{"always", "group", "batch:2", "periodic:1ms"} {
		t.Run(p, func(t *testing.T) {
			pol, _ := ParseSync(p)
			clk := newFakeClock()
			db, mem := openMem(t, Options{Sync: pol, clock: clk})
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
					// The timer syncs, and hits the fault.
					clk.waitTicker()
					clk.Advance(time.Millisecond)
					db.commit.waitDurable(db.Stats().LastSeq)
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
			// The failure dropped what no fdatasync covered (writeback.go):
			// the reopened store holds exactly the writes up to the
			// DurableSeq it had ("before" is seq 1; periodic:1ms never
			// synced it before the failure).
			if got := db.Stats().LastSeq; got != durable {
				t.Errorf("reopened: LastSeq %d, want the DurableSeq at the failure, %d", got, durable)
			}
			if durable >= 1 {
				checkGet(t, db, "before", "ok")
			} else {
				checkGet(t, db, "before", "")
			}
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

// syncHookFS wraps an FS so a test can run code just before each file's
// fdatasync, without holding MemFS's lock (which MemFS.Fault does hold).
type syncHookFS struct {
	FS
	hook func(name string) error
}

func (h syncHookFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	f, err := h.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return syncHookFile{File: f, name: name, hook: h.hook}, nil
}

type syncHookFile struct {
	File
	name string
	hook func(name string) error
}

func (f syncHookFile) Sync() error {
	if err := f.hook(f.name); err != nil {
		return &os.PathError{Op: "sync", Path: f.name, Err: err}
	}
	return f.File.Sync()
}

// TestFailedSyncNotOvertaken: while the group flusher's fdatasync of the
// active segment is running and about to fail, a writer that rotates the
// segment fdatasyncs the same file. On Linux the error of a failed
// writeback is reported to only one of two concurrent fdatasyncs of a
// file, so the other one's success proves nothing: DurableSeq must not
// move, and the Put the failing fdatasync covered must not be
// acknowledged.
func TestFailedSyncNotOvertaken(t *testing.T) {
	mem := NewMemFS()
	var db *DB
	var mu sync.Mutex
	calls := 0
	inFlight := make(chan struct{})
	hook := func(name string) error {
		if !strings.HasSuffix(name, segmentExt) {
			return nil
		}
		mu.Lock()
		calls++
		n := calls
		mu.Unlock()
		if n != 1 {
			return nil
		}
		// The first fdatasync fails, but only after any other that can
		// overlap it had the chance to return and be counted.
		close(inFlight)
		deadline := time.Now().Add(300 * time.Millisecond)
		for db.commit.durableSeq() == 1 && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		return syscall.EIO
	}
	var armed atomic.Bool
	fs := syncHookFS{FS: mem, hook: func(name string) error {
		if !armed.Load() {
			return nil
		}
		return hook(name)
	}}
	var err error
	db, err = Open("/db", Options{FS: fs, Sync: SyncPolicy{Mode: SyncGroup}, SegmentSize: MinSegmentSize, Preallocate: -1, GroupDelay: -1})
	if err != nil {
		t.Fatal(err)
	}
	mustPut(t, db, "first", "ok") // seq 1, durable
	armed.Store(true)

	covered := make(chan error, 1)
	go func() { covered <- db.Put([]byte("covered"), []byte("by the failing fdatasync")) }()
	<-inFlight
	// Enough concurrent Puts to fill the 4 KiB segment: one of them
	// rotates, which fdatasyncs the segment the flusher is syncing.
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			db.Put(fmt.Appendf(nil, "big%d", i), make([]byte, 1000))
		}()
	}
	if err := <-covered; !errors.Is(err, syscall.EIO) {
		t.Errorf("Put covered by a failed fdatasync: got %v, want the EIO", err)
	}
	wg.Wait()
	if got := db.Stats().DurableSeq; got != 1 {
		t.Errorf("DurableSeq after the failed fdatasync: got %d, want 1 (nothing after it is durable)", got)
	}
	db.Close()
}

// TestMemFSLinuxWriteback: under LinuxWriteback a failed Sync marks the
// written bytes clean without making them durable. They stay readable
// (and survive Kill, which keeps the page cache), the next Sync succeeds
// without persisting them, and a power cut finds zeros in their place.
func TestMemFSLinuxWriteback(t *testing.T) {
	mem := NewMemFS()
	mem.LinuxWriteback = true
	mem.MkdirAll("/d", 0o755)
	f, _ := mem.OpenFile("/d/f", os.O_RDWR|os.O_CREATE, 0o644)
	mem.SyncDir("/d")
	f.WriteAt([]byte("durable"), 0)
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte("failed"), 7)
	mem.Fault = func(op, name string) error {
		if op == "sync" {
			return syscall.EIO
		}
		return nil
	}
	if err := f.Sync(); !errors.Is(err, syscall.EIO) {
		t.Fatalf("Sync under the fault: got %v, want EIO", err)
	}
	mem.Fault = nil
	if err := f.Sync(); err != nil {
		t.Fatalf("Sync after the fault: %v", err)
	}
	read := func(fs *MemFS) string {
		g, err := fs.OpenFile("/d/f", os.O_RDONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		n, _ := g.Size()
		b := make([]byte, n)
		g.ReadAt(b, 0)
		return string(b)
	}
	killed := mem.Kill()
	if got := read(killed); got != "durablefailed" {
		t.Errorf("after a kill: %q, want the page cache's %q", got, "durablefailed")
	}
	if got := read(killed.PowerCut(PowerPrefix, nil)); got != "durable\x00\x00\x00\x00\x00\x00" {
		t.Errorf("after a power cut: %q, want the failed bytes never written", got)
	}
}

// TestReopenAfterFailedSync: Linux marks the pages of a failed fdatasync
// clean, so a store reopened in the same boot reads the failed writes back
// from the page cache, and Open's own fdatasync has nothing to write.
// They must not count as durable: an acknowledged Put after the reopen
// (whose sync mark vouches for everything before it) must come back after
// a power cut, and Open must not refuse the store as corrupt. The
// failing fdatasync is, in turn, a Put's (always), the flusher's (group),
// a batch's (batch:2) and a zero-fill's (none, which fdatasyncs only
// there and when it seals a segment; its full write buffer went to the
// OS before).
func TestReopenAfterFailedSync(t *testing.T) {
	for _, c := range []struct {
		name string
		opts Options
	}{
		{"always", Options{}},
		{"group", Options{Sync: SyncPolicy{Mode: SyncGroup}}},
		{"batch:2", Options{Sync: SyncPolicy{Mode: SyncBatch, N: 2}}},
		{"none/zero-fill", Options{Sync: SyncPolicy{Mode: SyncNone}, WriteBuffer: 64, Preallocate: 256, SegmentSize: MinSegmentSize}},
	} {
		t.Run(c.name, func(t *testing.T) {
			mem := NewMemFS()
			mem.LinuxWriteback = true
			opts := c.opts
			opts.FS = mem
			db, err := Open("/db", opts)
			if err != nil {
				t.Fatal(err)
			}
			for i := range 4 {
				mustPut(t, db, fmt.Sprintf("k%d", i), "before")
			}
			durable := db.Stats().DurableSeq
			var failed atomic.Bool
			mem.Fault = func(op, name string) error {
				if op == "sync" && strings.HasSuffix(name, segmentExt) && failed.CompareAndSwap(false, true) {
					return syscall.EIO
				}
				return nil
			}
			var werr error
			for i := 0; i < 1000 && werr == nil; i++ {
				werr = db.Put(fmt.Appendf(nil, "x%d", i), []byte("written, then its fdatasync failed"))
			}
			if !errors.Is(werr, ErrFailed) {
				t.Fatalf("Puts until the fdatasync failed: got %v, want ErrFailed", werr)
			}
			if _, err := db.Get([]byte("x0")); !errors.Is(err, ErrFailed) {
				t.Errorf("Get of a write the failed fdatasync did not make durable: got %v, want ErrFailed", err)
			}
			db.Close()
			mem.Fault = nil

			// A new process, the same boot: the page cache still holds
			// the bytes whose writeback failed.
			mem = mem.Kill()
			db = reopenMem(t, mem, Options{})
			if st := db.Stats(); st.DurableSeq != st.LastSeq {
				t.Errorf("after reopening: DurableSeq %d, LastSeq %d; want them equal", st.DurableSeq, st.LastSeq)
			}
			mustPut(t, db, "after", "acknowledged durable")

			db = reopenMem(t, mem.PowerCut(PowerPrefix, nil), Options{})
			checkGet(t, db, "after", "acknowledged durable")
			for i := range 4 {
				if uint64(i+1) <= durable {
					checkGet(t, db, fmt.Sprintf("k%d", i), "before")
				}
			}
		})
	}
}
