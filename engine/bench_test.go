package engine

// Benchmarks for the engine's speed claims. Run them all in one go, on one
// directory, so their ratios compare like with like:
//
//	go test -run '^$' -bench . ./engine/
//
// Keys are 16 bytes and values 128 bytes (163-byte records). The fsync
// benchmarks measure the disk under b.TempDir(): note the filesystem and
// device with the numbers, and that a shared machine makes them noisy.

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"
)

const benchValueSize = 128

func benchKey(i int) []byte { return fmt.Appendf(nil, "key-%012d", i) }

var benchValue = func() []byte {
	v := make([]byte, benchValueSize)
	for i := range v {
		v[i] = byte('a' + i%26)
	}
	return v
}()

func openBench(b *testing.B, dir string, sync string) *DB {
	b.Helper()
	pol, err := ParseSync(sync)
	if err != nil {
		b.Fatal(err)
	}
	db, err := Open(dir, Options{Sync: pol})
	if err != nil {
		b.Fatal(err)
	}
	return db
}

// putLoop Puts a new key with benchValue once per benchmark iteration.
func putLoop(b *testing.B, db *DB) {
	i := 0
	for b.Loop() {
		if err := db.Put(benchKey(i), benchValue); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// rawLoop is the baseline: append a record-sized buffer to a file and
// fdatasync it, n times, the way the harness probe measures the disk.
type rawLoop struct {
	f   *os.File
	off int64
	buf []byte
}

func newRawLoop(b *testing.B, dir string) *rawLoop {
	f, err := os.OpenFile(filepath.Join(dir, "raw"), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { f.Close() })
	return &rawLoop{f: f, buf: make([]byte, recordSize(16, benchValueSize))}
}

func (r *rawLoop) one(b *testing.B) {
	if _, err := r.f.WriteAt(r.buf, r.off); err != nil {
		b.Fatal(err)
	}
	r.off += int64(len(r.buf))
	if err := Datasync(r.f.Fd()); err != nil {
		b.Fatal(err)
	}
}

func BenchmarkRawWriteFdatasync(b *testing.B) {
	r := newRawLoop(b, b.TempDir())
	for b.Loop() {
		r.one(b)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
}

// BenchmarkPut is one Put per op under each policy, with one writer
// except group-16 (16 concurrent writers).
func BenchmarkPut(b *testing.B) {
	for _, sync := range []string{"always", "batch:16", "periodic:10ms", "none"} {
		b.Run(sync, func(b *testing.B) {
			db := openBench(b, b.TempDir(), sync)
			defer db.Close()
			putLoop(b, db)
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
		})
	}
	b.Run("group-16", func(b *testing.B) {
		db := openBench(b, b.TempDir(), "group")
		defer db.Close()
		b.SetParallelism((16 + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
		var mu sync.Mutex
		next := 0
		b.RunParallel(func(pb *testing.PB) {
			mu.Lock()
			base := next
			next += 1 << 30
			mu.Unlock()
			for i := 0; pb.Next(); i++ {
				if err := db.Put(benchKey(base+i), benchValue); err != nil {
					b.Error(err)
					return
				}
			}
		})
		s := db.Stats()
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
		b.ReportMetric(float64(s.Puts)/float64(max(s.Fsyncs, 1)), "puts/fdatasync")
	})
}

// BenchmarkAlwaysVsRaw alternates chunks of "always" Puts and of the raw
// write+fdatasync loop on the same disk, and reports the store's
// throughput as a fraction of the raw loop's (target: >= 0.9).
func BenchmarkAlwaysVsRaw(b *testing.B) {
	dir := b.TempDir()
	db := openBench(b, filepath.Join(dir, "db"), "always")
	defer db.Close()
	raw := newRawLoop(b, dir)
	const chunk = 100
	var tStore, tRaw time.Duration
	i := 0
	for b.Loop() {
		start := time.Now()
		for range chunk {
			raw.one(b)
		}
		tRaw += time.Since(start)
		start = time.Now()
		for range chunk {
			if err := db.Put(benchKey(i), benchValue); err != nil {
				b.Fatal(err)
			}
			i++
		}
		tStore += time.Since(start)
	}
	b.ReportMetric(tRaw.Seconds()/tStore.Seconds(), "store/raw")
	b.ReportMetric(float64(b.N*chunk)/tStore.Seconds(), "store-ops/s")
	b.ReportMetric(float64(b.N*chunk)/tRaw.Seconds(), "raw-ops/s")
}

// BenchmarkGroup16VsAlways1 alternates a chunk of 1-writer "always" Puts
// with a chunk of 16-writer "group" Puts and reports the throughput ratio
// (target: >= 8).
func BenchmarkGroup16VsAlways1(b *testing.B) {
	dir := b.TempDir()
	always := openBench(b, filepath.Join(dir, "always"), "always")
	defer always.Close()
	group := openBench(b, filepath.Join(dir, "group"), "group")
	defer group.Close()
	const chunk = 100 // per writer
	var tAlways, tGroup time.Duration
	i := 0
	for b.Loop() {
		start := time.Now()
		for range chunk {
			if err := always.Put(benchKey(i), benchValue); err != nil {
				b.Fatal(err)
			}
			i++
		}
		tAlways += time.Since(start)
		start = time.Now()
		var wg sync.WaitGroup
		for w := range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := range chunk {
					if err := group.Put(benchKey(w<<20+j), benchValue); err != nil {
						b.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		tGroup += time.Since(start)
	}
	alwaysRate := float64(b.N*chunk) / tAlways.Seconds()
	groupRate := float64(b.N*chunk*16) / tGroup.Seconds()
	s := group.Stats()
	b.ReportMetric(groupRate/alwaysRate, "group16/always1")
	b.ReportMetric(alwaysRate, "always-ops/s")
	b.ReportMetric(groupRate, "group16-ops/s")
	b.ReportMetric(float64(s.Puts)/float64(max(s.Fsyncs, 1)), "puts/fdatasync")
}

// BenchmarkBatchModel runs batch:N and compares its throughput with the
// model 1/(T_write + T_fsync/N), where T_fsync is the mean fdatasync time
// the store measured during this very run and T_write is the mean time of
// the same number of Puts under "none", measured right after on the same
// disk (so both pay the same index growth and preallocation). Reports
// measured/model (target: within 0.8..1.2).
func BenchmarkBatchModel(b *testing.B) {
	for _, n := range []int{1, 16, 64, 256} {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			dir := b.TempDir()
			db := openBench(b, filepath.Join(dir, "batch"), fmt.Sprintf("batch:%d", n))
			defer db.Close()
			putLoop(b, db)
			elapsed := b.Elapsed()
			s := db.Stats()
			if s.Fsyncs == 0 {
				b.Skipf("no fdatasync in %d Puts", b.N)
			}

			// T_write: the same Puts, as many, under "none", right after,
			// zero-filling ahead as batch:N does ("none" does not by default).
			none, err := Open(filepath.Join(dir, "none"), Options{Sync: SyncPolicy{Mode: SyncNone}, Preallocate: DefaultPreallocate})
			if err != nil {
				b.Fatal(err)
			}
			start := time.Now()
			for i := range b.N {
				if err := none.Put(benchKey(i), benchValue); err != nil {
					b.Fatal(err)
				}
			}
			tWrite := time.Since(start) / time.Duration(b.N)
			none.Close()

			tFsync := s.FsyncTime / time.Duration(s.Fsyncs)
			model := 1 / (tWrite.Seconds() + tFsync.Seconds()/float64(n))
			measured := float64(b.N) / elapsed.Seconds()
			b.ReportMetric(measured, "ops/s")
			b.ReportMetric(model, "model-ops/s")
			b.ReportMetric(measured/model, "measured/model")
			b.ReportMetric(float64(tFsync.Nanoseconds()), "fsync-ns")
			b.ReportMetric(float64(tWrite.Nanoseconds()), "write-ns")
		})
	}
}

// BenchmarkGet reads present keys at random from a 100k-key store whose
// segments are in the page cache (target: >= 500k ops/s on one goroutine).
func BenchmarkGet(b *testing.B) {
	const keys = 100_000
	db := openBench(b, b.TempDir(), "none")
	defer db.Close()
	for i := range keys {
		if err := db.Put(benchKey(i), benchValue); err != nil {
			b.Fatal(err)
		}
	}
	order := make([][]byte, 1<<16)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range order {
		order[i] = benchKey(rng.IntN(keys))
	}
	for _, k := range order { // warm
		db.Get(k)
	}
	i := 0
	for b.Loop() {
		if _, err := db.Get(order[i&(len(order)-1)]); err != nil {
			b.Fatal(err)
		}
		i++
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
}

// BenchmarkReopen1M opens a store of 1M records (163 MB in three 64 MiB
// segments), with and without hint files, from a warm page cache (the
// cold open, with the floor beside it, is labserver bench -workload
// reopen, which make bench runs), and reports the heap the reopened
// index takes per key, the 16-byte key included (index-B/key, by
// runtime.MemStats; the target is at most 64), beside what the store
// says it holds (Stats.IndexBytes per key).
func BenchmarkReopen1M(b *testing.B) {
	const records = 1_000_000
	dir := b.TempDir()
	db := openBench(b, dir, "none")
	for i := range records {
		if err := db.Put(benchKey(i), benchValue); err != nil {
			b.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		b.Fatal(err)
	}
	for _, hints := range []bool{true, false} {
		b.Run(fmt.Sprintf("hints=%v", hints), func(b *testing.B) {
			var perKey, stated float64
			for b.Loop() {
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				db, err := Open(dir, Options{Sync: SyncPolicy{Mode: SyncNone}, NoHints: !hints})
				if err != nil {
					b.Fatal(err)
				}
				if got := db.Stats().Keys; got != records {
					b.Fatalf("reopened with %d keys, want %d", got, records)
				}
				b.StopTimer()
				runtime.GC()
				runtime.ReadMemStats(&after)
				perKey = float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / records
				stated = float64(db.Stats().IndexBytes) / records
				db.Close()
				b.StartTimer()
			}
			// Without hints the index grows as keys come; with them Open
			// sizes it from the hints' entry counts.
			b.ReportMetric(perKey, "index-B/key")
			b.ReportMetric(stated, "stated-B/key")
		})
	}
}

// BenchmarkPreallocate compares "always" Puts into zero-filled space (the
// default) with plain appends (Preallocate < 0), alternating chunks of
// each on the same disk so that both see the same noise: the measurement
// behind ensureSpace's choice. zero-filled/append > 1 means zero-filling
// is faster.
func BenchmarkPreallocate(b *testing.B) {
	dir := b.TempDir()
	zf, err := Open(filepath.Join(dir, "zero"), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer zf.Close()
	ap, err := Open(filepath.Join(dir, "append"), Options{Preallocate: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer ap.Close()
	const chunk = 100
	var tZero, tAppend time.Duration
	i := 0
	for b.Loop() {
		for _, c := range []struct {
			db *DB
			t  *time.Duration
		}{{zf, &tZero}, {ap, &tAppend}} {
			start := time.Now()
			for j := range chunk {
				if err := c.db.Put(benchKey(i+j), benchValue); err != nil {
					b.Fatal(err)
				}
			}
			*c.t += time.Since(start)
		}
		i += chunk
	}
	sz, sa := zf.Stats(), ap.Stats()
	b.ReportMetric(tAppend.Seconds()/tZero.Seconds(), "zero-filled/append")
	b.ReportMetric(float64(sz.FsyncTime.Nanoseconds())/float64(max(sz.Fsyncs, 1)), "zero-fsync-ns")
	b.ReportMetric(float64(sa.FsyncTime.Nanoseconds())/float64(max(sa.Fsyncs, 1)), "append-fsync-ns")
}

// BenchmarkOverwriteAutoCompact overwrites 1M keys for several rounds
// under "none" with background compaction on (AutoCompact 0.5, 8 MiB
// segments) and off, a round of each in turn so that both see the same
// disk, and reports for each: bytes on disk ÷ live bytes at the end
// (space-amp; the target with compaction is under 2), bytes written ÷
// user bytes (write-amp), and the Puts' p99 (put-p99-ns; the target with
// compaction is within 2x of without). Run it alone, once:
//
//	go test -run '^$' -bench OverwriteAutoCompact -benchtime 1x ./engine/
func BenchmarkOverwriteAutoCompact(b *testing.B) {
	const keys, rounds = 1_000_000, 4
	type side struct {
		name string
		db   *DB
		lat  []time.Duration
	}
	var sides []*side
	for _, auto := range []float64{DefaultAutoCompact, 0} {
		db, err := Open(filepath.Join(b.TempDir(), "db"), Options{Sync: SyncPolicy{Mode: SyncNone}, SegmentSize: 8 << 20, AutoCompact: auto})
		if err != nil {
			b.Fatal(err)
		}
		defer db.Close()
		name := "auto-compact"
		if auto == 0 {
			name = "no-compaction"
		}
		sides = append(sides, &side{name: name, db: db})
	}
	for b.Loop() {
		for r := range rounds {
			for _, s := range sides {
				for i := range keys {
					start := time.Now()
					if err := s.db.Put(benchKey(i), benchValue); err != nil {
						b.Fatal(err)
					}
					if r > 0 { // the first round fills; the later ones overwrite
						s.lat = append(s.lat, time.Since(start))
					}
				}
			}
		}
	}
	b.StopTimer()
	for _, s := range sides {
		for s.db.bg != nil && s.db.compactionDue() { // let the compactor catch up
			time.Sleep(10 * time.Millisecond)
		}
		s.db.compactMu.Lock()
		st := s.db.Stats()
		s.db.compactMu.Unlock()
		user := float64(st.Puts) * float64(16+benchValueSize)
		slices.Sort(s.lat)
		p99 := s.lat[len(s.lat)*99/100]
		b.ReportMetric(float64(st.DiskBytes)/float64(st.LiveBytes), s.name+"-space-amp")
		b.ReportMetric(float64(st.BytesWritten+st.CompactionWritten)/user, s.name+"-write-amp")
		b.ReportMetric(float64(p99.Nanoseconds()), s.name+"-put-p99-ns")
	}
}
