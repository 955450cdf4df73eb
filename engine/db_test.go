package engine

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// openMem opens a store on a fresh MemFS.
func openMem(t *testing.T, opts Options) (*DB, *MemFS) {
	t.Helper()
	mem := NewMemFS()
	opts.FS = mem
	db, err := Open("/db", opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return db, mem
}

// reopenMem opens the store on mem again, as the next start would find
// it, and closes it when the test ends.
func reopenMem(t *testing.T, mem *MemFS, opts Options) *DB {
	t.Helper()
	opts.FS = mem
	db, err := Open("/db", opts)
	if err != nil {
		t.Fatalf("reopening: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func mustPut(t *testing.T, db *DB, k, v string) {
	t.Helper()
	if err := db.Put([]byte(k), []byte(v)); err != nil {
		t.Fatalf("Put(%q): %v", k, err)
	}
}

// checkGet fails unless Get(k) returns want; want "" means not found.
func checkGet(t *testing.T, db *DB, k, want string) {
	t.Helper()
	got, err := db.Get([]byte(k))
	if want == "" {
		if !errors.Is(err, ErrNotFound) {
			t.Errorf("Get(%q): got %q, %v; want ErrNotFound", k, got, err)
		}
		return
	}
	if err != nil || string(got) != want {
		t.Errorf("Get(%q): got %q, %v; want %q", k, got, err, want)
	}
}

// TestIndexFollowsWrites runs sequences of operations and checks the
// index after each sequence, then again after a reopen.
func TestIndexFollowsWrites(t *testing.T) {
	type op struct{ kind, key, value string } // kind "put" or "del"
	cases := []struct {
		name string
		ops  []op
		want map[string]string // "" = absent
	}{
		{"put get", []op{{"put", "a", "1"}}, map[string]string{"a": "1", "b": ""}},
		{"overwrite", []op{{"put", "a", "1"}, {"put", "a", "2"}}, map[string]string{"a": "2"}},
		{"delete", []op{{"put", "a", "1"}, {"del", "a", ""}}, map[string]string{"a": ""}},
		{"delete absent", []op{{"del", "a", ""}}, map[string]string{"a": ""}},
		{"put after delete", []op{{"put", "a", "1"}, {"del", "a", ""}, {"put", "a", "3"}}, map[string]string{"a": "3"}},
		{"empty value", []op{{"put", "a", ""}}, nil},
		{"many", []op{{"put", "a", "1"}, {"put", "b", "2"}, {"del", "a", ""}, {"put", "c", "3"}, {"put", "b", "4"}},
			map[string]string{"a": "", "b": "4", "c": "3"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			db, mem := openMem(t, Options{})
			for _, o := range c.ops {
				var err error
				if o.kind == "put" {
					err = db.Put([]byte(o.key), []byte(o.value))
				} else {
					err = db.Delete([]byte(o.key))
				}
				if err != nil {
					t.Fatalf("%s %q: %v", o.kind, o.key, err)
				}
			}
			check := func() {
				for k, v := range c.want {
					checkGet(t, db, k, v)
				}
			}
			check()
			if c.name == "empty value" {
				if v, err := db.Get([]byte("a")); err != nil || len(v) != 0 {
					t.Errorf("Get of empty value: got %q, %v; want empty, nil", v, err)
				}
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			var err error
			if db, err = Open("/db", Options{FS: mem}); err != nil {
				t.Fatalf("reopen: %v", err)
			}
			defer db.Close()
			check()
		})
	}
}

func TestSizeLimits(t *testing.T) {
	db, _ := openMem(t, Options{Sync: SyncPolicy{Mode: SyncNone}})
	defer db.Close()
	cases := []struct {
		name    string
		key     int
		value   int
		wantErr error
	}{
		{"empty key", 0, 1, ErrKeyTooLarge},
		{"max key", MaxKeySize, 1, nil},
		{"key one over", MaxKeySize + 1, 1, ErrKeyTooLarge},
		{"max value", 1, MaxValueSize, nil},
		{"value one over", 1, MaxValueSize + 1, ErrValueTooLarge},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			key := bytes.Repeat([]byte("k"), c.key)
			err := db.Put(key, make([]byte, c.value))
			if !errors.Is(err, c.wantErr) {
				t.Fatalf("Put(key %d B, value %d B): got %v, want %v", c.key, c.value, err, c.wantErr)
			}
			if err != nil && !strings.Contains(err.Error(), fmt.Sprint(c.key+c.value-1)) {
				t.Errorf("error %q should name the size", err)
			}
			if err == nil {
				if v, err := db.Get(key); err != nil || len(v) != c.value {
					t.Errorf("Get: got %d bytes, %v; want %d bytes", len(v), err, c.value)
				}
			}
		})
	}
}

// TestRotationAtSegmentBoundaries writes across segment boundaries
// (sweeping the record sizes around the boundary) and checks every key
// before and after a reopen.
func TestRotationAtSegmentBoundaries(t *testing.T) {
	const segSize = MinSegmentSize
	for _, vsize := range []int{segSize/4 - headerSize - 8, segSize/4 - headerSize - 4, 100, segSize - headerSize - 4, segSize + 10} {
		t.Run(fmt.Sprint(vsize), func(t *testing.T) {
			db, mem := openMem(t, Options{SegmentSize: segSize, Sync: SyncPolicy{Mode: SyncNone}})
			want := map[string]string{}
			for i := range 40 {
				k := fmt.Sprintf("k%04d", i)
				v := strings.Repeat(string(rune('a'+i%26)), vsize)
				mustPut(t, db, k, v)
				want[k] = v
			}
			segs := db.Stats().Segments
			if min := (40*(vsize+headerSize+5))/segSize - 1; segs < min {
				t.Errorf("got %d segments, want at least %d", segs, min)
			}
			for id, s := range db.segs {
				if s != db.active && len(s.hint) != 0 {
					t.Errorf("sealed segment %d keeps %d bytes of hint entries in memory, want 0", id, len(s.hint))
				}
			}
			db.Close()
			db, err := Open("/db", Options{FS: mem, SegmentSize: segSize})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			for k, v := range want {
				checkGet(t, db, k, v)
			}
			if got := db.Stats().Keys; got != 40 {
				t.Errorf("Keys after reopen: got %d, want 40", got)
			}
		})
	}
}

// TestClosedStoreRefusesEverything: after Close, Put, Delete, Compact,
// Get and a second Close all return ErrClosed.
func TestClosedStoreRefusesEverything(t *testing.T) {
	db, _ := openMem(t, Options{})
	mustPut(t, db, "a", "1")
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	for name, err := range map[string]error{
		"Put":     db.Put([]byte("a"), []byte("2")),
		"Delete":  db.Delete([]byte("a")),
		"Compact": db.Compact(),
		"Close":   db.Close(),
		"Get":     func() error { _, err := db.Get([]byte("a")); return err }(),
	} {
		if !errors.Is(err, ErrClosed) {
			t.Errorf("%s after Close: got %v, want ErrClosed", name, err)
		}
	}
}

func TestOpenBadOptions(t *testing.T) {
	cases := []struct {
		name string
		opts Options
		want string
	}{
		{"segment too small", Options{SegmentSize: 100}, "SegmentSize 100"},
		{"segment too large", Options{SegmentSize: 2 << 30}, "SegmentSize"},
		{"batch 0", Options{Sync: SyncPolicy{Mode: SyncBatch}}, "batch N = 0"},
		{"bad mode", Options{Sync: SyncPolicy{Mode: 42}}, "unknown mode 42"},
		{"write buffer too large", Options{Sync: SyncPolicy{Mode: SyncNone}, WriteBuffer: MaxWriteBuffer + 1}, "WriteBuffer 67108865: must be at most 67108864"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.opts.FS = NewMemFS()
			_, err := Open("/db", c.opts)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want an error containing %q", err, c.want)
			}
		})
	}
}

// TestAcknowledgedIsSynced checks, after every Put returns, that its
// record is in the bytes a power cut keeps, for the policies that promise
// it, with many concurrent writers. A slow fdatasync (1ms, injected) makes
// writers pile up, so group commit must share fdatasyncs.
func TestAcknowledgedIsSynced(t *testing.T) {
	cases := []struct {
		sync      string
		writers   int
		maxFsyncs func(puts int64) int64
	}{
		{"always", 4, func(p int64) int64 { return p }},
		{"group", 16, func(p int64) int64 { return p / 3 }},
		{"group", 1, func(p int64) int64 { return p }},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s/%d", c.sync, c.writers), func(t *testing.T) {
			pol, _ := ParseSync(c.sync)
			mem := NewMemFS()
			db, err := Open("/db", Options{FS: mem, Sync: pol})
			if err != nil {
				t.Fatal(err)
			}
			mem.Fault = func(op, name string) error {
				if op == "sync" {
					time.Sleep(time.Millisecond)
				}
				return nil
			}
			var wg sync.WaitGroup
			for w := range c.writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range 30 {
						rec := record{kind: kindPut, key: fmt.Appendf(nil, "w%d-%d", w, i), value: fmt.Appendf(nil, "value-%d-%d", w, i)}
						if err := db.Put(rec.key, rec.value); err != nil {
							t.Error(err)
							return
						}
						if !mem.Contains(append(rec.key, rec.value...), true) {
							t.Errorf("Put(%s) returned before its record was synced", rec.key)
						}
					}
				}()
			}
			wg.Wait()
			s := db.Stats()
			if s.DurableSeq != s.LastSeq {
				t.Errorf("DurableSeq %d, LastSeq %d: want equal", s.DurableSeq, s.LastSeq)
			}
			if max := c.maxFsyncs(s.Puts); s.Fsyncs > max {
				t.Errorf("%d Puts took %d fdatasyncs, want at most %d", s.Puts, s.Fsyncs, max)
			}
			t.Logf("%d puts, %d fdatasyncs", s.Puts, s.Fsyncs)
			mem.Fault = nil
			db.Close()
		})
	}
}

// TestSyncCounts checks how many fdatasyncs each policy issues.
func TestSyncCounts(t *testing.T) {
	cases := []struct {
		sync       string
		puts       int
		wantFsyncs int64
	}{
		{"always", 10, 10},
		{"batch:1", 10, 10},
		{"batch:4", 10, 2},
		{"batch:16", 64, 4},
		{"none", 100, 0},
	}
	for _, c := range cases {
		t.Run(c.sync, func(t *testing.T) {
			pol, _ := ParseSync(c.sync)
			db, _ := openMem(t, Options{Sync: pol})
			for i := range c.puts {
				mustPut(t, db, fmt.Sprint(i), "v")
			}
			s := db.Stats()
			if s.Fsyncs != c.wantFsyncs {
				t.Errorf("%d puts: got %d fdatasyncs, want %d", c.puts, s.Fsyncs, c.wantFsyncs)
			}
			wantDurable := uint64(c.wantFsyncs) * uint64(c.puts) / uint64(max(c.wantFsyncs, 1))
			if c.sync == "batch:4" {
				wantDurable = 8
			}
			if c.wantFsyncs == 0 {
				wantDurable = 0
			}
			if s.DurableSeq != wantDurable || s.LastSeq != uint64(c.puts) {
				t.Errorf("DurableSeq %d LastSeq %d, want %d %d", s.DurableSeq, s.LastSeq, wantDurable, c.puts)
			}
			db.Close()
			if s := db.Stats(); s.DurableSeq != uint64(c.puts) {
				t.Errorf("after Close: DurableSeq %d, want %d", s.DurableSeq, c.puts)
			}
		})
	}
}

// TestPeriodicTimer: with no further writes, the timer alone makes the
// writes durable, and nothing else does. The clock is fake: the timer
// fires when the test advances it.
func TestPeriodicTimer(t *testing.T) {
	clk := newFakeClock()
	db, mem := openMem(t, Options{Sync: SyncPolicy{Mode: SyncPeriodic, Interval: time.Millisecond}, clock: clk})
	defer db.Close()
	clk.waitTicker()
	for i := range 10 {
		mustPut(t, db, fmt.Sprint(i), "v")
	}
	if s := db.Stats(); s.DurableSeq != 0 || s.Fsyncs != 0 {
		t.Fatalf("before the timer fired: DurableSeq %d after %d fdatasyncs, want 0 and 0", s.DurableSeq, s.Fsyncs)
	}
	clk.Advance(time.Millisecond)
	if err := db.commit.waitDurable(10); err != nil {
		t.Fatal(err)
	}
	if s := db.Stats(); s.Fsyncs != 1 {
		t.Errorf("one tick: %d fdatasyncs, want 1", s.Fsyncs)
	}
	if !mem.Contains([]byte("9v"), true) {
		t.Error("DurableSeq covers the last Put, but its record is not on the disk")
	}
}

// TestConcurrentReadWrite runs readers and writers together (meaningful
// under -race) and checks every read sees a value that was written.
func TestConcurrentReadWrite(t *testing.T) {
	db, _ := openMem(t, Options{Sync: SyncPolicy{Mode: SyncGroup}, SegmentSize: MinSegmentSize})
	defer db.Close()
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for i := range 200 {
				if err := db.Put(fmt.Appendf(nil, "k%d", i%20), fmt.Appendf(nil, "v%d-%d", w, i)); err != nil {
					t.Error(err)
					return
				}
				if i%50 == 49 && w == 0 {
					if err := db.Compact(); err != nil {
						t.Error(err)
						return
					}
				}
			}
		}()
		go func() {
			defer wg.Done()
			for i := range 400 {
				v, err := db.Get(fmt.Appendf(nil, "k%d", i%20))
				if err != nil && !errors.Is(err, ErrNotFound) {
					t.Error(err)
					return
				}
				if err == nil && !bytes.HasPrefix(v, []byte("v")) {
					t.Errorf("Get: got %q, want a written value", v)
				}
			}
		}()
	}
	wg.Wait()
}

// TestOpenSyncsNewDirectory: a store directory that Open creates is an
// entry in its parent, which is not durable until the parent is synced;
// without that a power cut can take the whole store, DurableSeq or not.
// A directory that already exists needs no parent sync.
func TestOpenSyncsNewDirectory(t *testing.T) {
	for _, exists := range []bool{false, true} {
		t.Run(fmt.Sprintf("exists=%v", exists), func(t *testing.T) {
			mem := NewMemFS()
			if exists {
				mem.MkdirAll("/data/db", 0o755)
			}
			var synced []string
			mem.Fault = func(op, name string) error {
				if op == "syncdir" {
					synced = append(synced, name)
				}
				return nil
			}
			db, err := Open("/data/db", Options{FS: mem})
			if err != nil {
				t.Fatal(err)
			}
			db.Close()
			got := slices.Contains(synced, "/data")
			if got != !exists {
				t.Errorf("parent /data synced: got %v, want %v (directories synced: %q)", got, !exists, synced)
			}
		})
	}
}

// TestCloseRacesWrites closes the store while writers, readers and a
// compaction are running, under every policy. Each call either succeeds
// or fails with ErrClosed; Close returns, so the background goroutine
// stopped; and every Put that returned nil is there after a reopen.
func TestCloseRacesWrites(t *testing.T) {
	for _, p := range []string{"always", "group", "batch:4", "periodic:1ms", "none"} {
		t.Run(p, func(t *testing.T) {
			pol, _ := ParseSync(p)
			opts := Options{Sync: pol, SegmentSize: MinSegmentSize}
			db, mem := openMem(t, opts)
			var mu sync.Mutex
			acked := map[string]string{}
			var wg sync.WaitGroup
			start := make(chan struct{})
			for w := range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					for i := 0; ; i++ {
						k, v := fmt.Sprintf("w%d-k%d", w, i%30), fmt.Sprintf("v%d", i)
						err := db.Put([]byte(k), []byte(v))
						if err == nil {
							mu.Lock()
							acked[k] = v
							mu.Unlock()
							if _, gerr := db.Get([]byte(k)); gerr != nil && !errors.Is(gerr, ErrClosed) {
								t.Errorf("Get(%s) after its Put: got %v, want the value or ErrClosed", k, gerr)
							}
							if w == 0 && i%40 == 39 {
								err = db.Compact()
							}
						}
						if err != nil {
							if !errors.Is(err, ErrClosed) {
								t.Errorf("write while closing: got %v, want nil or ErrClosed", err)
							}
							return
						}
					}
				}()
			}
			close(start)
			for db.Stats().LastSeq < 200 {
				runtime.Gosched()
			}
			if err := db.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			wg.Wait()
			db = reopenMem(t, mem, opts)
			for k, v := range acked {
				checkGet(t, db, k, v)
			}
		})
	}
}
