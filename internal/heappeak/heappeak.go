// Package heappeak samples the Go heap while some work runs, for tests
// that bound how much memory the work takes. It is test support: only
// tests import it.
package heappeak

import (
	"runtime"
	"sync"
	"time"
)

// Watch samples runtime.MemStats.HeapInuse until Stop. It is not safe for
// concurrent use: one goroutine starts and stops it.
type Watch struct {
	base uint64        // HeapInuse after a GC, when the watch started
	peak uint64        // the largest HeapInuse seen; written by the sampler only until Stop
	stop chan struct{} // closed by Stop
	wg   sync.WaitGroup
}

// Start runs a GC, notes the heap in use, and samples it every interval
// until Stop.
func Start(interval time.Duration) *Watch {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	w := &Watch{base: ms.HeapInuse, peak: ms.HeapInuse, stop: make(chan struct{})}
	w.wg.Go(func() {
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			w.peak = max(w.peak, m.HeapInuse)
			select {
			case <-w.stop:
				return
			case <-tick.C:
			}
		}
	})
	return w
}

// Stop ends the sampling and returns how far the heap in use grew above
// its size at Start, at its peak (negative if it only shrank).
func (w *Watch) Stop() int64 {
	close(w.stop)
	w.wg.Wait()
	var m runtime.MemStats // the work's end counts too
	runtime.ReadMemStats(&m)
	w.peak = max(w.peak, m.HeapInuse)
	return int64(w.peak) - int64(w.base)
}
