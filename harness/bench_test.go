package harness

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// Benchmarks of the instrument itself. Run with
//
//	go test -run '^$' -bench . -benchmem ./harness/
//
// BenchmarkHarnessNull is the cost of one measured op with the null store:
// two monotonic clock reads, the recording and the loop. BenchmarkRecord
// is the recording alone. BenchmarkRun10M runs a whole 10M-op null bench
// and reports the process's peak memory.

// newLoopWorker builds one worker over the null store, as runOne does,
// with an exact-sample budget of exactCap.
func newLoopWorker(exactCap int64) (*worker, *run, keyTable) {
	cfg := &runConfig{engine: "null", sync: "none", workload: "fillrandom", dist: "uniform", threads: 1,
		valueSize: 128, keys: 1 << 16}
	w := &worker{cfg: cfg, role: roleClient, step: stepPut, store: nullStore{}, live: new(liveView),
		plan: planWorker("fillrandom", "uniform", 0, 1, cfg.keys, 1<<16, cfg.valueSize, 1)}
	w.setRecorders(newExactBudget(exactCap, 3))
	return w, &run{cfg: cfg, stopCh: make(chan struct{}), base: time.Now()}, newKeyTable(cfg.keys)
}

const loopBatch = 1024

func BenchmarkHarnessNull(b *testing.B) {
	for _, mode := range []struct {
		name string
		cap  int64
	}{{"exact", DefaultExactCap}, {"histogram", 0}} {
		b.Run(mode.name, func(b *testing.B) {
			w, r, keys := newLoopWorker(mode.cap)
			b.ReportAllocs()
			var n int64
			for b.Loop() {
				w.loop(r, keys, n, loopBatch, 0)
				n += loopBatch
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/measured-op")
			b.ReportMetric(float64(n)/b.Elapsed().Seconds()/1e6, "M-measured-ops/s")
		})
	}
}

func BenchmarkRecord(b *testing.B) {
	for _, mode := range []struct {
		name string
		cap  int64
	}{{"exact", 1 << 40}, {"histogram", 0}} {
		b.Run(mode.name, func(b *testing.B) {
			r := newRecorder(newSampleBudget(mode.cap))
			b.ReportAllocs()
			var v int64 = 1000
			for b.Loop() {
				r.record(v)
				v = (v*13 + 7) % 5_000_000
			}
		})
	}
}

// BenchmarkClock compares a time.Now pair (wall and monotonic clocks read
// twice) with the two time.Since(base) reads the timed loop uses.
func BenchmarkClock(b *testing.B) {
	b.Run("now-pair", func(b *testing.B) {
		var d time.Duration
		for b.Loop() {
			t := time.Now()
			d += time.Now().Sub(t)
		}
		_ = d
	})
	b.Run("since-pair", func(b *testing.B) {
		base := time.Now()
		var d time.Duration
		for b.Loop() {
			t := time.Since(base)
			d += time.Since(base) - t
		}
		_ = d
	})
}

// TestTimedLoopAllocations checks that the timed loop does not allocate
// per op: a histogram-mode worker allocates nothing at all in 1000 ops, an
// exact-mode one at most one chunk.
func TestTimedLoopAllocations(t *testing.T) {
	for _, mode := range []struct {
		name string
		cap  int64
		max  float64
	}{{"histogram", 0, 0}, {"exact", DefaultExactCap, 1}} {
		w, r, keys := newLoopWorker(mode.cap)
		w.loop(r, keys, 0, 1, 0) // the first record may switch to a histogram
		var n int64
		allocs := testing.AllocsPerRun(50, func() {
			w.loop(r, keys, n, 1000, 0)
			n += 1000
		})
		if allocs > mode.max {
			t.Errorf("%s: %.2f allocations per 1000 timed ops, want at most %v", mode.name, allocs, mode.max)
		}
	}
	// The dishonest keygen rule break is visible as allocations.
	w, r, keys := newLoopWorker(0)
	w.cfg.dishonest.timeKeygen = true
	w.loop(r, keys, 0, 1, 0)
	if allocs := testing.AllocsPerRun(10, func() { w.loop(r, keys, 0, 1000, 0) }); allocs < 1000 {
		t.Errorf("-dishonest-time-keygen: %.0f allocations per 1000 ops, want at least 1000 (keys built in the loop)", allocs)
	}
}

// BenchmarkRun10M is one full 10M-op null bench; it reports the peak
// resident memory of the process (VmHWM) and the heap it grew to.
func BenchmarkRun10M(b *testing.B) {
	dir := b.TempDir()
	for b.Loop() {
		raw, err := Exec(context.Background(), "bench -engine null -ops 10000000 -warmup 0", Env{Dir: dir})
		if err != nil {
			b.Fatal(err)
		}
		if !strings.Contains(string(raw), `"exact":false`) {
			b.Fatal("a 10M-op run should have switched to histograms")
		}
	}
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	b.ReportMetric(float64(m.HeapSys)/(1<<20), "heap-sys-MB")
	if hwm := vmHWM(); hwm > 0 {
		b.ReportMetric(hwm/(1<<20), "peak-RSS-MB")
	}
}

// vmHWM reads the process's peak resident set size from /proc.
func vmHWM() float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		var kb float64
		if _, err := fmt.Sscanf(line, "VmHWM: %f kB", &kb); err == nil {
			return kb * 1024
		}
	}
	return 0
}
