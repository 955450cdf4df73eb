package harness

import (
	"sync/atomic"
	"time"
)

// A simulated disk, for tests of the course. A quiz that asks the reader
// to predict their disk must come out differently on a different disk;
// the lessons' disk check runs each such quiz's cell twice, once with a
// fast flush and once with a slow one, and SimulateFlushCost is how: every
// fdatasync the kv engine makes, and every one the probe times, first
// waits the given extra time, as a disk whose cache flush costs that much
// more would make it wait. Other engines (bbolt, pebble, servers) flush on
// their own and are not slowed.

// simulatedFlush is the extra time each kv and probe fdatasync waits
// (0: none, the real disk alone).
var simulatedFlush atomic.Int64

// SimulateFlushCost makes every fdatasync of the kv engine and of the
// probe wait d before it syncs, until the returned restore is called. It
// is for tests (the lessons' disk check): it changes every run in the
// process.
func SimulateFlushCost(d time.Duration) (restore func()) {
	old := simulatedFlush.Swap(int64(d))
	return func() { simulatedFlush.Store(old) }
}

// simulateFlush waits the simulated extra flush cost, if any. Below a
// millisecond it spins on the monotonic clock: a sleep's wake-up on a busy
// machine is late by more than a fast disk's whole flush.
func simulateFlush() {
	d := time.Duration(simulatedFlush.Load())
	switch {
	case d <= 0:
	case d < time.Millisecond:
		for end := time.Now().Add(d); time.Now().Before(end); {
		}
	default:
		time.Sleep(d)
	}
}
