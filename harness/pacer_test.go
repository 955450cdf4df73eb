package harness

import (
	"testing"
	"time"
)

// fakeClock is an injected run clock: time moves only when the store
// serves an op (fakeStore) or the generator waits. Each wait wakes late
// by late after the later of its target and now, as a generator that
// loses its core at every wait would.
type fakeClock struct {
	t    time.Duration
	late time.Duration
}

func (c *fakeClock) now() time.Duration { return c.t }

func (c *fakeClock) sleepUntil(at time.Duration, stop <-chan struct{}) bool {
	c.t = max(c.t, at) + c.late
	return true
}

// fakeStore serves every op in exactly service on its clock.
type fakeStore struct {
	clk     *fakeClock
	service time.Duration
}

func (s fakeStore) Put(k, v []byte) error                          { s.clk.t += s.service; return nil }
func (s fakeStore) Get(k []byte) ([]byte, bool, error)             { s.clk.t += s.service; return nil, false, nil }
func (s fakeStore) Delete(k []byte) error                          { s.clk.t += s.service; return nil }
func (s fakeStore) Close() error                                   { return nil }
func (s fakeStore) Scan([]byte, int, func(k, v []byte) bool) error { return nil }

// TestPacerAttribution runs an open loop on an injected clock, with a
// generator that wakes late by a fixed amount and a store that takes a
// fixed time, and checks the pacer's account: its lag, who it says was
// late, and who it says fell behind.
func TestPacerAttribution(t *testing.T) {
	const rate = 1000 // units 1 ms apart
	tests := []struct {
		name          string
		late, service time.Duration
		deadline      time.Duration // after the run's start; 0 = none
		wantLag       time.Duration // every unit's pacer lag (p50 and p99)
		wantLate      bool          // generator_late
		wantBehind    string
	}{
		// The generator wakes 400 µs late for every unit; the store takes
		// 10 µs. The corrected latency is 410 µs, 400 of them the
		// generator's.
		{name: "generator late", late: 400 * time.Microsecond, service: 10 * time.Microsecond,
			wantLag: 400 * time.Microsecond, wantLate: true},
		// A punctual generator, a store at 1.5x the rate: every unit waits
		// for the one before it; none of that is pacer lag.
		{name: "store slow", service: 1500 * time.Microsecond, wantLag: 0, wantLate: false},
		// A punctual generator and a store slightly faster than the rate:
		// neither is late.
		{name: "both on time", service: 900 * time.Microsecond, wantLag: 0, wantLate: false},
		// The store is slower than the rate: units are left due at the
		// deadline, and the store is who fell behind.
		{name: "store behind", service: 1500 * time.Microsecond, deadline: 100 * time.Millisecond,
			wantLag: 0, wantLate: false, wantBehind: "store"},
		// The generator loses 1.5 ms at every wait, more than the 1 ms
		// between units: it falls further behind with every unit and the
		// corrected latency grows to tens of ms, of which its own pacer lag
		// is only 1.5 ms per unit, while a 10 µs store would have kept up
		// at utilization 0.01. The delay it carried over makes it the one
		// that was late and fell behind.
		{name: "generator behind", late: 1500 * time.Microsecond, service: 10 * time.Microsecond, deadline: 100 * time.Millisecond,
			wantLag: 1500 * time.Microsecond, wantLate: true, wantBehind: "generator"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := &fakeClock{late: tt.late}
			cfg := &runConfig{engine: "null", sync: "none", workload: "fillrandom", dist: "uniform", threads: 1,
				ops: 200, rate: rate, valueSize: 8, keys: 1000}
			w := &worker{cfg: cfg, role: roleClient, step: stepPut, store: fakeStore{clk, tt.service}, quota: 200, live: new(liveView),
				plan: planWorker("fillrandom", "uniform", 0, 1, 1000, 200, 8, 1)}
			w.setRecorders(newExactBudget(DefaultExactCap, recordersPerWorker(cfg)))
			start := time.Millisecond
			r := &run{cfg: cfg, stopCh: make(chan struct{}), start: start, fake: clk}
			clk.t = start
			var deadline time.Duration
			if tt.deadline > 0 {
				deadline = start + tt.deadline
			}
			w.loop(r, newKeyTable(1000), 0, w.quota, deadline)
			res := summarizeRun(cfg, []*worker{w}, clk.t-start, nil)

			lag := res.PacerLag
			if lag == nil {
				t.Fatal("no pacer_lag in an open-loop result")
			}
			if lag.Count != res.Units || lag.P50Ns != int64(tt.wantLag) || lag.P99Ns != int64(tt.wantLag) {
				t.Errorf("pacer lag: got %d units, p50 %d, p99 %d; want %d units, p50 = p99 = %d", lag.Count, lag.P50Ns, lag.P99Ns, res.Units, tt.wantLag)
			}
			if lag.DelayP99Ns < lag.P99Ns {
				t.Errorf("generator delay p99 %d < pacer lag p99 %d: the delay includes the lag", lag.DelayP99Ns, lag.P99Ns)
			}
			unc, cor := res.LatencyUncorrected["put"], res.Latency["put"]
			if unc.P99Ns != int64(tt.service) {
				t.Errorf("uncorrected p99 %d, want the service time %d", unc.P99Ns, tt.service)
			}
			if tt.deadline == 0 && tt.late < time.Millisecond && tt.service < time.Millisecond && cor.P99Ns != int64(tt.late+tt.service) {
				t.Errorf("corrected p99 %d, want lateness + service = %d", cor.P99Ns, tt.late+tt.service)
			}
			if res.GeneratorLate != tt.wantLate {
				t.Errorf("generator_late %v, want %v (pacer lag p99 %d, delay p99 %d, corrected p99 %d)", res.GeneratorLate, tt.wantLate, lag.P99Ns, lag.DelayP99Ns, cor.P99Ns)
			}
			if (tt.wantBehind != "") != (res.BacklogUnits > 0) || res.Behind != tt.wantBehind {
				t.Errorf("behind %q with %d units left due, want %q", res.Behind, res.BacklogUnits, tt.wantBehind)
			}
		})
	}
}

// TestSleepUntilNeverEarly checks the real pacer's one hard promise: it
// never returns before the time it was asked for, in each of its stages
// (timer, fine sleep, spin), and it returns false at once when stopped.
func TestSleepUntilNeverEarly(t *testing.T) {
	c := &monoClock{base: time.Now()}
	stop := make(chan struct{})
	for _, d := range []time.Duration{0, 10 * time.Microsecond, 300 * time.Microsecond, 3 * time.Millisecond} {
		at := c.now() + d
		if !c.sleepUntil(at, stop) {
			t.Fatalf("sleepUntil(+%v) returned false with no stop", d)
		}
		if now := c.now(); now < at {
			t.Errorf("sleepUntil(+%v) returned %v early", d, at-now)
		}
	}
	close(stop)
	if c.sleepUntil(c.now()+time.Hour, stop) {
		t.Error("sleepUntil(+1h) after stop returned true, want false")
	}
}

// TestSpinWindowFollowsLateWakes: the spin window stays at spinWindow
// while the fine sleep keeps time, becomes twice a late wake's lateness
// (never above maxSpinWindow), and shrinks back over the sleeps on time
// after it, never below spinWindow.
func TestSpinWindowFollowsLateWakes(t *testing.T) {
	us := time.Microsecond
	if got := nextSpinWindow(spinWindow, 60*us); got != spinWindow {
		t.Errorf("after a wake 60 µs late: window %v, want it kept at %v", got, spinWindow)
	}
	w := nextSpinWindow(spinWindow, 600*us)
	if w != 1200*us {
		t.Errorf("after a wake 600 µs late: window %v, want 1.2ms", w)
	}
	if got := nextSpinWindow(w, 5*time.Millisecond); got != maxSpinWindow {
		t.Errorf("after a wake 5 ms late: window %v, want the cap %v", got, maxSpinWindow)
	}
	n := 0
	for ; w > spinWindow+spinWindow/10; n++ {
		next := nextSpinWindow(w, 20*us)
		if next >= w {
			t.Fatalf("a wake on time left the window at %v (was %v): it must shrink", next, w)
		}
		w = next
	}
	if n < 32 || n > 128 {
		t.Errorf("%d wakes on time brought 1.2ms to within 10%% of %v; want between 32 and 128 (it forgets one late wake in about a hundred units)", n, spinWindow)
	}
	for range 1000 {
		w = nextSpinWindow(w, 0)
	}
	if w != spinWindow {
		t.Errorf("after 1000 wakes on time the window is %v, want %v", w, spinWindow)
	}
}
