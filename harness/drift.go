package harness

import (
	"math"
	"sync/atomic"
	"time"
)

// A store that drifts on purpose.
//
// Before and after comparisons assume that nothing but the change moves
// between the runs. On a real machine something always does: a store
// grows, a cache warms, a neighbour starts a backup. Lesson 9 needs such a
// drift that is the same on every machine, to show what the order of the
// runs does to a comparison, so -engine drift makes one: the null store
// (nothing stored, every Get misses) that completes its operations on a
// schedule whose rate falls by the same amount every second,
//
//	rate(t) = driftRate × (1 − t/driftSpan)
//
// about 50,000 ops/s at the start, losing 1/12 of that every second
// (about 4,170 ops/s a second), until at 11.25 s the rate stops falling
// at 1/16 of the start (3,125 ops/s). The drift is linear in ops/s, the
// figure the timeline shows, so an order of runs that is balanced in time
// cancels it exactly.
//
// Operation k (counted from the open, over all threads) waits until the
// schedule's time for the k-th operation, driftAt(k), and returns; the
// wait is a busy-wait on the monotonic clock, not a sleep, whose wake-up
// lateness (tens of µs on a virtual machine) would be a noise of its own.
// An operation that finds itself behind schedule (the machine took the
// CPU away for a moment) returns at once, so the ones after it catch up
// and each second's count stays on the schedule as long as the process
// gets the few percent of a core the harness needs at these rates. With
// one thread each operation's latency is the gap between two slots,
// 1/rate(t): 20 µs at the start, growing.
//
// The drift store is safe for concurrent use: its open time is read-only
// and its operation count atomic.
const (
	driftRate = 50000.0 // ops/s at the open
	driftSpan = 12 * time.Second
	// driftCap is the time after which the rate stops falling.
	driftCap = driftSpan - driftSpan/16
)

func init() {
	RegisterEngine("drift", openDrift)
	MarkUnordered("drift", "it stores nothing (the null store made to drift)")
}

// driftStore is the null store whose operations keep to a falling rate.
type driftStore struct {
	opened time.Time    // monotonic; read-only after open
	n      atomic.Int64 // operations begun since the open
}

func openDrift(dir, sync string) (Store, error) {
	if _, err := parseSync(sync); err != nil {
		return nil, err
	}
	return &driftStore{opened: time.Now()}, nil
}

// driftAt is the time after the open at which the schedule completes its
// k-th operation (k from 1): the inverse of the count
// N(t) = driftRate × (t − t²/(2·driftSpan)), which grows at rate(t), and
// past driftCap at the last rate, 1/16 of driftRate.
func driftAt(k int64) time.Duration {
	span := driftSpan.Seconds()
	capT := driftCap.Seconds()
	nCap := driftRate * (capT - capT*capT/(2*span))
	x := float64(k)
	if x <= nCap {
		return time.Duration(span * (1 - math.Sqrt(1-2*x/(driftRate*span))) * float64(time.Second))
	}
	return time.Duration((capT + (x-nCap)/(driftRate/16)) * float64(time.Second))
}

// work waits for the next operation's slot in the schedule.
func (s *driftStore) work() {
	due := s.opened.Add(driftAt(s.n.Add(1)))
	for time.Now().Before(due) {
	}
}

func (s *driftStore) Put(key, value []byte) error          { s.work(); return nil }
func (s *driftStore) Get(key []byte) ([]byte, bool, error) { s.work(); return nil, false, nil }
func (s *driftStore) Delete(key []byte) error              { s.work(); return nil }
func (s *driftStore) Close() error                         { return nil }
