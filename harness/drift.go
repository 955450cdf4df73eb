package harness

import (
	"time"
)

// A store that drifts on purpose.
//
// Before and after comparisons assume that nothing but the change moves
// between the runs. On a real machine something always does: a store
// grows, a cache warms, a neighbour starts a backup. Lesson 9 needs such a
// drift that is the same on every machine, to show what the order of the
// runs does to a comparison, so -engine drift makes one: the null store
// (nothing stored, every Get misses) whose every operation busy-waits
// for a time that grows with the time since the store was opened, so
// that one thread's ops/s falls by the same amount every second:
//
//	cost(t) = driftBase × driftSpan / (driftSpan − t)
//	ops/s(t) ≈ (1/driftBase) × (1 − t/driftSpan)
//
// that is, about 50,000 ops/s at the start, losing 1/12 of that every
// second (about 4,170 ops/s a second), until at 11.25 seconds the cost
// stops growing at 16 × driftBase (3,125 ops/s). The drift is linear in ops/s, the figure the
// timeline shows, so an order of runs that is balanced in time cancels it
// exactly. The wait is a busy-wait on the monotonic clock, not a sleep:
// a sleep's wake-up lateness (tens of µs on a virtual machine) would be a
// noise of its own. What the machine's other work does to the run still
// shows, as with every engine: a second in which this process got less CPU
// has fewer ops.
//
// The drift store is safe for concurrent use: it holds only its open time.
const (
	driftBase = 20 * time.Microsecond
	driftSpan = 12 * time.Second
	// driftCap is the time after which the cost stops growing.
	driftCap = driftSpan - driftSpan/16
)

func init() {
	RegisterEngine("drift", openDrift)
	MarkUnordered("drift", "it stores nothing (the null store made to drift)")
}

// driftStore is the null store whose operations get slower with time.
type driftStore struct {
	opened time.Time // monotonic; read-only after open
}

func openDrift(dir, sync string) (Store, error) {
	if _, err := parseSync(sync); err != nil {
		return nil, err
	}
	return &driftStore{opened: time.Now()}, nil
}

// driftCost is what one operation costs at elapsed since the store opened.
func driftCost(elapsed time.Duration) time.Duration {
	elapsed = min(max(elapsed, 0), driftCap)
	return time.Duration(float64(driftBase) * float64(driftSpan) / float64(driftSpan-elapsed))
}

// work busy-waits for the cost of one operation now.
func (s *driftStore) work() {
	start := time.Now()
	d := driftCost(start.Sub(s.opened))
	for time.Since(start) < d {
	}
}

func (s *driftStore) Put(key, value []byte) error          { s.work(); return nil }
func (s *driftStore) Get(key []byte) ([]byte, bool, error) { s.work(); return nil, false, nil }
func (s *driftStore) Delete(key []byte) error              { s.work(); return nil }
func (s *driftStore) Close() error                         { return nil }
