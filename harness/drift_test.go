package harness

import (
	"math"
	"testing"
	"time"
)

// The drift store's rate falls linearly: 1/cost is 50,000 ops/s at the
// start and loses 1/12 of that every second, until the cap.
func TestDriftCostFallsLinearly(t *testing.T) {
	for _, tc := range []struct {
		elapsed time.Duration
		wantOps float64 // 1/cost, ops/s
	}{
		{-time.Second, 50000}, // a clock read before the open counts as the open
		{0, 50000},
		{time.Second, 50000.0 * 11 / 12},
		{6 * time.Second, 25000},
		{8 * time.Second, 50000.0 * 4 / 12},
		{driftCap, 3125},
		{time.Minute, 3125}, // capped
	} {
		got := 1 / driftCost(tc.elapsed).Seconds()
		if math.Abs(got-tc.wantOps) > 0.5 {
			t.Errorf("driftCost(%v): %.1f ops/s, want %.1f", tc.elapsed, got, tc.wantOps)
		}
	}
}

// Every operation waits at least its cost, on a busy machine too (a wait
// can only end late): a store opened 6 s ago costs at least 40 µs an op.
func TestDriftStoreWaitsItsCost(t *testing.T) {
	s, err := openDrift(t.TempDir(), "none")
	if err != nil {
		t.Fatal(err)
	}
	s.(*driftStore).opened = time.Now().Add(-6 * time.Second)
	start := time.Now()
	const n = 50
	for range n {
		if err := s.Put([]byte("k"), []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	if per := time.Since(start) / n; per < 2*driftBase {
		t.Errorf("a Put 6 s after the open took %v, want at least %v", per, 2*driftBase)
	}
	if _, found, _ := s.Get([]byte("k")); found {
		t.Errorf("the drift store found a key; it keeps nothing")
	}
	if _, err := openDrift(t.TempDir(), "batch:0"); err == nil {
		t.Errorf("openDrift accepted -sync batch:0")
	}
}
