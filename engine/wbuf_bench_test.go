package engine

// Benchmarks behind the write buffer's choices (wbuf.go, doc.go).

import (
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// BenchmarkWriteBuffer compares write-buffer sizes under "none",
// alternating chunks of 2000 Puts into one store per size on the same
// disk, so that every size sees the same noise. It reports each size's
// Puts per second; "off" is one write(2) per Put.
func BenchmarkWriteBuffer(b *testing.B) {
	sizes := []int{-1, 4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20}
	dir := b.TempDir()
	dbs := make([]*DB, len(sizes))
	for i, size := range sizes {
		db, err := Open(filepath.Join(dir, fmt.Sprint(i)), Options{Sync: SyncPolicy{Mode: SyncNone}, WriteBuffer: size})
		if err != nil {
			b.Fatal(err)
		}
		defer db.Close()
		dbs[i] = db
	}
	const chunk = 2000
	elapsed := make([]time.Duration, len(sizes))
	next := 0
	for b.Loop() {
		for i, db := range dbs {
			start := time.Now()
			for j := range chunk {
				if err := db.Put(benchKey(next+j), benchValue); err != nil {
					b.Fatal(err)
				}
			}
			elapsed[i] += time.Since(start)
		}
		next += chunk
	}
	for i, size := range sizes {
		name := "off"
		if size > 0 {
			name = fmt.Sprintf("%dKiB", size>>10)
		}
		b.ReportMetric(float64(b.N*chunk)/elapsed[i].Seconds(), name+"-ops/s")
	}
}

// BenchmarkGetWhileBuffering measures Gets of just-written keys while one
// goroutine Puts under "none": either Get copies a record still in the
// buffer from it (what Get does), or Get first hands the buffer to the OS
// and reads the file (the alternative: flush before reading). It reports
// both sides' rates.
func BenchmarkGetWhileBuffering(b *testing.B) {
	for _, flushFirst := range []bool{false, true} {
		name := "read-buffer"
		if flushFirst {
			name = "flush-first"
		}
		b.Run(name, func(b *testing.B) {
			db := openBench(b, b.TempDir(), "none")
			defer db.Close()
			var mu sync.Mutex // guards written
			written := 0
			stop := make(chan struct{})
			done := make(chan int)
			go func() {
				i := 0
				for {
					select {
					case <-stop:
						done <- i
						return
					default:
					}
					if err := db.Put(benchKey(i), benchValue); err != nil {
						b.Error(err)
					}
					i++
					mu.Lock()
					written = i
					mu.Unlock()
				}
			}()
			for written == 0 {
				mu.Lock()
				w := written
				mu.Unlock()
				if w > 0 {
					break
				}
			}
			for b.Loop() {
				mu.Lock()
				k := benchKey(written - 1) // the newest key: in the buffer, mostly
				mu.Unlock()
				if flushFirst {
					db.writeMu.Lock()
					err := db.flushBufferLocked()
					db.writeMu.Unlock()
					if err != nil {
						b.Fatal(err)
					}
				}
				if _, err := db.Get(k); err != nil {
					b.Fatal(err)
				}
			}
			close(stop)
			puts := <-done
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "gets/s")
			b.ReportMetric(float64(puts)/b.Elapsed().Seconds(), "puts/s")
		})
	}
}
