package engine

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestWriteBufferLayers follows Puts through the three layers under each
// buffered policy: the process's write buffer, the OS (MemFS's live
// bytes, the page cache) and the disk (MemFS's synced bytes). A Put is
// visible to Get at once; it reaches the OS at a sync point, when the
// buffer is full, or on Close, and Stats().WrittenSeq says how far that
// got; with the buffer off (WriteBuffer < 0) every Put reaches the OS
// before it returns.
func TestWriteBufferLayers(t *testing.T) {
	cases := []struct {
		sync   string
		wbuf   int
		puts   int
		toOS   uint64 // WrittenSeq after the puts
		synced uint64 // DurableSeq after the puts
	}{
		{"none", 0, 10, 0, 0},
		{"none", -1, 10, 10, 0},
		{"none", 200, 10, 8, 0}, // 8 records of 25 bytes fill 200 bytes
		{"batch:4", 0, 10, 8, 8},
		{"batch:4", -1, 10, 10, 8},
		{"periodic:1m", 0, 10, 0, 0},
		{"always", 0, 10, 10, 10},
		{"group", 0, 10, 10, 10},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s/wbuf=%d", c.sync, c.wbuf), func(t *testing.T) {
			pol, _ := ParseSync(c.sync)
			db, mem := openMem(t, Options{Sync: pol, WriteBuffer: c.wbuf})
			for i := range c.puts {
				mustPut(t, db, fmt.Sprintf("key%d", i), fmt.Sprintf("v%d", i)) // 19+4+2 = 25 bytes
				checkGet(t, db, fmt.Sprintf("key%d", i), fmt.Sprintf("v%d", i))
			}
			s := db.Stats()
			if s.WrittenSeq != c.toOS || s.DurableSeq != c.synced || s.LastSeq != uint64(c.puts) {
				t.Errorf("WrittenSeq %d, DurableSeq %d, LastSeq %d; want %d, %d, %d", s.WrittenSeq, s.DurableSeq, s.LastSeq, c.toOS, c.synced, c.puts)
			}
			for i := range c.puts {
				rec := []byte(fmt.Sprintf("key%dv%d", i, i))
				if got, want := mem.Contains(rec, false), uint64(i) < s.WrittenSeq; got != want {
					t.Errorf("key%d (seq %d) in the OS's bytes: got %v, want %v (WrittenSeq %d)", i, i+1, got, want, s.WrittenSeq)
				}
				if got, want := mem.Contains(rec, true), uint64(i) < s.DurableSeq; got != want {
					t.Errorf("key%d (seq %d) on the disk: got %v, want %v (DurableSeq %d)", i, i+1, got, want, s.DurableSeq)
				}
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			if s := db.Stats(); s.WrittenSeq != uint64(c.puts) || s.DurableSeq != uint64(c.puts) {
				t.Errorf("after Close: WrittenSeq %d, DurableSeq %d, want both %d", s.WrittenSeq, s.DurableSeq, c.puts)
			}
		})
	}
}

// TestWriteBufferKillAndPowerCut shows what each layer survives. A process
// kill (the store abandoned without Close, reopened on the same MemFS,
// whose live bytes play the page cache) loses exactly the writes above
// WrittenSeq; a power cut (MemFS.Crash) loses exactly those above
// DurableSeq.
func TestWriteBufferKillAndPowerCut(t *testing.T) {
	for _, power := range []bool{false, true} {
		t.Run(fmt.Sprintf("power=%v", power), func(t *testing.T) {
			mem := NewMemFS()
			opts := Options{FS: mem, Sync: SyncPolicy{Mode: SyncBatch, N: 8}, WriteBuffer: 100, NoHints: true}
			db, err := Open("/db", opts)
			if err != nil {
				t.Fatal(err)
			}
			// 30-byte records: the buffer goes to the OS every 4 Puts, the
			// fdatasync comes every 8.
			const puts = 30
			for i := range puts {
				mustPut(t, db, fmt.Sprintf("k%02d", i), fmt.Sprintf("value-%02d", i))
			}
			s := db.Stats()
			if !(s.DurableSeq < s.WrittenSeq && s.WrittenSeq < s.LastSeq) {
				t.Fatalf("DurableSeq %d, WrittenSeq %d, LastSeq %d: want each layer to hold some writes", s.DurableSeq, s.WrittenSeq, s.LastSeq)
			}
			keep := s.WrittenSeq
			after := FS(mem)
			if power {
				keep = s.DurableSeq
				after = mem.Crash(false, nil)
			}
			// db is abandoned, as a killed process's store is.
			opts.FS = after
			db2, err := Open("/db", opts)
			if err != nil {
				t.Fatal(err)
			}
			defer db2.Close()
			for i := range puts {
				want := ""
				if uint64(i) < keep {
					want = fmt.Sprintf("value-%02d", i)
				}
				checkGet(t, db2, fmt.Sprintf("k%02d", i), want)
			}
			t.Logf("LastSeq %d, WrittenSeq %d, DurableSeq %d: kept %d", s.LastSeq, s.WrittenSeq, s.DurableSeq, keep)
		})
	}
}

// TestWriteBufferReadersAndWriters runs Gets against Puts, rotations and
// compactions under "none" with a small buffer (meaningful under -race):
// every Get sees the latest acknowledged value of its key or a later one.
func TestWriteBufferReadersAndWriters(t *testing.T) {
	db, mem := openMem(t, Options{Sync: SyncPolicy{Mode: SyncNone}, WriteBuffer: 512, SegmentSize: MinSegmentSize})
	const keys = 16
	var acked [keys]int64 // per key, the highest i acknowledged; guarded by mu
	var mu sync.Mutex
	for k := range acked {
		acked[k] = -1
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for r := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				k := (i + r) % keys
				mu.Lock()
				min := acked[k]
				mu.Unlock()
				v, err := db.Get(fmt.Appendf(nil, "k%d", k))
				if errors.Is(err, ErrNotFound) && min < 0 {
					continue
				}
				var got int64
				if err != nil || func() bool { _, e := fmt.Sscanf(string(v), "v%d", &got); return e != nil }() || got < min {
					t.Errorf("Get(k%d): got %q, %v; want v<i> with i >= %d", k, v, err, min)
					return
				}
			}
		}()
	}
	for i := range int64(3000) {
		k := i % keys
		if err := db.Put(fmt.Appendf(nil, "k%d", k), fmt.Appendf(nil, "v%d", i)); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		acked[k] = i
		mu.Unlock()
		if i%1000 == 999 {
			if err := db.Compact(); err != nil {
				t.Fatal(err)
			}
		}
	}
	close(stop)
	wg.Wait()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := Open("/db", Options{FS: mem, SegmentSize: MinSegmentSize})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for k := range keys {
		checkGet(t, db, fmt.Sprintf("k%d", k), fmt.Sprintf("v%d", acked[k]))
	}
}

// TestPeriodicFlushesBuffer: under periodic:D the timer hands the buffer
// to the OS before its fdatasync, so with no further Puts the writes
// become durable. The clock is fake.
func TestPeriodicFlushesBuffer(t *testing.T) {
	clk := newFakeClock()
	db, mem := openMem(t, Options{Sync: SyncPolicy{Mode: SyncPeriodic, Interval: time.Millisecond}, clock: clk})
	defer db.Close()
	clk.waitTicker()
	mustPut(t, db, "k", "periodic")
	if s := db.Stats(); s.WrittenSeq != 0 {
		t.Fatalf("WrittenSeq %d before the tick, want 0 (the record waits in the buffer)", s.WrittenSeq)
	}
	clk.Advance(time.Millisecond)
	if err := db.commit.waitDurable(1); err != nil {
		t.Fatal(err)
	}
	if !mem.Contains([]byte("kperiodic"), true) {
		t.Error("DurableSeq covers the Put, but its record is not on the disk")
	}
}

// TestWriteBufferBoundaries sweeps record sizes around the buffer's size
// (Pebble sweeps blockSize-4 .. blockSize+4 the same way): records that
// just fit, just fill and just overflow it, and one far larger than it.
// Every Put is readable at once and after a reopen, and the buffer never
// keeps more than twice its size of memory after a flush.
func TestWriteBufferBoundaries(t *testing.T) {
	const wbuf = 256
	const keyLen = 4 // "k000"
	for delta := -4; delta <= 4; delta++ {
		for _, big := range []bool{false, true} {
			recLen := wbuf + delta
			if big {
				recLen = 10*wbuf + delta
			}
			t.Run(fmt.Sprintf("record=%d", recLen), func(t *testing.T) {
				opts := Options{Sync: SyncPolicy{Mode: SyncNone}, WriteBuffer: wbuf, SegmentSize: MinSegmentSize}
				db, mem := openMem(t, opts)
				want := map[string]string{}
				for i := range 20 {
					k := fmt.Sprintf("k%03d", i)
					v := string(bytes.Repeat([]byte{byte('a' + i%26)}, recLen-headerSize-keyLen))
					mustPut(t, db, k, v)
					want[k] = v
					for k, v := range want {
						checkGet(t, db, k, v)
					}
					if c := cap(db.pending); c > 2*wbuf && len(db.pending) == 0 {
						t.Fatalf("after a flush the buffer keeps %d bytes of capacity, want at most %d", c, 2*wbuf)
					}
				}
				// A record that fills the buffer goes out with its Put;
				// smaller ones (more than half the buffer here) in pairs.
				waiting := uint64(1)
				if recLen >= wbuf {
					waiting = 0
				}
				if s := db.Stats(); s.LastSeq-s.WrittenSeq > waiting {
					t.Errorf("records of %d bytes, a %d-byte buffer: WrittenSeq %d, LastSeq %d; want at most %d waiting", recLen, wbuf, s.WrittenSeq, s.LastSeq, waiting)
				}
				if err := db.Close(); err != nil {
					t.Fatal(err)
				}
				db = reopenMem(t, mem, opts)
				for k, v := range want {
					checkGet(t, db, k, v)
				}
			})
		}
	}
}

// TestCommitBuffersShrink: after one record larger than maxIdleBuffer,
// the buffers that "always" encodes into and "group" queues into give the
// memory back, as the write buffer does, and the store goes on working.
func TestCommitBuffersShrink(t *testing.T) {
	for _, p := range []string{"always", "group"} {
		t.Run(p, func(t *testing.T) {
			pol, _ := ParseSync(p)
			db, _ := openMem(t, Options{Sync: pol})
			defer db.Close()
			big := string(bytes.Repeat([]byte("b"), 4*maxIdleBuffer))
			mustPut(t, db, "big", big)
			mustPut(t, db, "small", "s")
			db.writeMu.Lock()
			kept := max(cap(db.buf), cap(db.group))
			db.writeMu.Unlock()
			if kept > maxIdleBuffer {
				t.Errorf("after a %d-byte record the commit buffers keep %d bytes of capacity, want at most %d", len(big), kept, maxIdleBuffer)
			}
			checkGet(t, db, "big", big)
			checkGet(t, db, "small", "s")
		})
	}
}

// TestFailedFlushKeepsBuffer: when the write(2) of a full write buffer
// fails, the store fails, but the buffer is kept: Get still returns the
// acknowledged writes that were in it (the failed write left nothing of
// them in the file).
func TestFailedFlushKeepsBuffer(t *testing.T) {
	db, mem := openMem(t, Options{Sync: SyncPolicy{Mode: SyncNone}, WriteBuffer: 256})
	defer db.Close()
	mustPut(t, db, "k0", "acknowledged, in the buffer")
	mem.Fault = func(op, name string) error {
		if op == "write" {
			return syscall.EIO
		}
		return nil
	}
	var err error
	for i := 1; i < 100 && err == nil; i++ {
		err = db.Put(fmt.Appendf(nil, "k%d", i), bytes.Repeat([]byte("v"), 40))
	}
	if !errors.Is(err, ErrFailed) || !errors.Is(err, syscall.EIO) {
		t.Fatalf("Puts until the buffer's write failed: got %v, want ErrFailed wrapping EIO", err)
	}
	if mem.Contains([]byte("acknowledged, in the buffer"), false) {
		t.Fatal("the failed write reached the file; the test needs it not to")
	}
	checkGet(t, db, "k0", "acknowledged, in the buffer")
}
