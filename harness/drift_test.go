package harness

import (
	"math"
	"testing"
	"time"
)

// The schedule's rate falls linearly: the count between two instants
// around t is rate(t) × their gap, 50,000 ops/s at the start, 1/12 less
// every second, and 3,125 ops/s from the cap on.
func TestDriftScheduleFallsLinearly(t *testing.T) {
	// rate at t: the count of slots in a 10 ms window centred on t.
	rate := func(t time.Duration) float64 {
		lo, hi := t-5*time.Millisecond, t+5*time.Millisecond
		var n int64
		for k := int64(1); driftAt(k) < hi; k++ {
			if driftAt(k) >= lo {
				n++
			}
		}
		return float64(n) / 0.01
	}
	for _, tc := range []struct {
		at   time.Duration
		want float64
	}{
		{500 * time.Millisecond, 50000 * (1 - 0.5/12)},
		{time.Second, 50000 * 11 / 12.0},
		{6 * time.Second, 25000},
		{8 * time.Second, 50000 * 4 / 12.0},
		{11 * time.Second, 50000 / 12.0},
		{12 * time.Second, 3125},
	} {
		if got := rate(tc.at); math.Abs(got-tc.want) > 0.01*tc.want+100 {
			t.Errorf("rate at %v: %.0f ops/s, want %.0f", tc.at, got, tc.want)
		}
	}
	// Whole seconds: what the timeline of a run that starts at the open
	// shows, falling by 1/12 of the start from one second to the next.
	for s := 1; s <= 8; s++ {
		var n int64
		for k := int64(1); driftAt(k) < time.Duration(s)*time.Second; k++ {
			if driftAt(k) >= time.Duration(s-1)*time.Second {
				n++
			}
		}
		if want := 50000 * (1 - (float64(s)-0.5)/12); math.Abs(float64(n)-want) > 2 {
			t.Errorf("second %d: %d slots, want %.0f", s, n, want)
		}
	}
	for k := int64(1); k < 400000; k += 997 {
		if driftAt(k) >= driftAt(k+1) {
			t.Fatalf("driftAt(%d) = %v is not before driftAt(%d) = %v", k, driftAt(k), k+1, driftAt(k+1))
		}
	}
}

// Each operation waits for its slot (never returns before it, on a busy
// machine too); one that is behind schedule returns at once, so the ones
// after it catch up.
func TestDriftStoreKeepsToTheSchedule(t *testing.T) {
	s, err := openDrift(t.TempDir(), "none")
	if err != nil {
		t.Fatal(err)
	}
	d := s.(*driftStore)
	for range 50 {
		if err := s.Put([]byte("k"), []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	if el := time.Since(d.opened); el < driftAt(50) {
		t.Errorf("50 Puts ended %v after the open, before the 50th slot at %v", el, driftAt(50))
	}
	// Six seconds behind: 10,000 operations are due at once.
	d.opened = d.opened.Add(-6 * time.Second)
	start := time.Now()
	for range 10000 {
		s.Put(nil, nil)
	}
	if el := time.Since(start); el > 20*time.Second { // generous: each is two clock reads
		t.Errorf("10,000 Puts already due took %v; an operation behind schedule must not wait", el)
	}
	if _, found, _ := s.Get([]byte("k")); found {
		t.Errorf("the drift store found a key; it keeps nothing")
	}
	if _, err := openDrift(t.TempDir(), "batch:0"); err == nil {
		t.Errorf("openDrift accepted -sync batch:0")
	}
}
