package harness

import (
	"strings"
	"testing"
	"time"
)

// -arrivals poisson draws exponential gaps whose mean is threads/rate (so
// the workers together keep the rate), unequal where -arrivals even
// spaces them exactly; it needs -rate.
func TestPoissonArrivals(t *testing.T) {
	cfg := &runConfig{threads: 2, rate: 1000, seed: 1, poisson: true}
	w := &worker{id: 0, cfg: cfg}
	const n = 20000
	var prev time.Duration
	gaps := map[time.Duration]bool{}
	for range n {
		at := w.poissonOffset()
		if at <= prev && prev != 0 {
			t.Fatalf("arrival %v not after %v", at, prev)
		}
		gaps[(at-prev)/time.Microsecond] = true
		prev = at
	}
	mean := prev / n
	if want := 2 * time.Millisecond; mean < want*9/10 || mean > want*11/10 {
		t.Errorf("mean gap %v, want about %v (threads/rate)", mean, want)
	}
	if len(gaps) < n/10 {
		t.Errorf("%d distinct gaps in %d arrivals: not random", len(gaps), n)
	}
	if _, err := ParseSpec("bench -engine null -arrivals poisson -ops 100", DefaultLimits()); err == nil || !strings.Contains(err.Error(), "give -rate too") {
		t.Errorf("-arrivals without -rate: %v, want an error asking for -rate", err)
	}
	if _, err := ParseSpec("bench -engine null -rate 100 -arrivals bursty -ops 100", DefaultLimits()); err == nil || !strings.Contains(err.Error(), "allowed: even, poisson") {
		t.Errorf("-arrivals bursty: %v, want the allowed values", err)
	}
	r := execAs[BenchResult](t, "bench -engine null -rate 2000 -arrivals poisson -ops 200 -warmup 0")
	if !strings.Contains(r.Spec, "-arrivals poisson") || r.Units != 200 {
		t.Errorf("spec %q units %d, want the poisson run's spec and 200 units", r.Spec, r.Units)
	}
}
