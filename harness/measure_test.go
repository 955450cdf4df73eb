package harness

import (
	"testing"
)

// Measurement edge cases: what is counted, and from which clock.

// In an open-loop updaterandom run every Put of a unit is recorded beside
// its Get, corrected and uncorrected alike, so the two tables count the
// same ops.
func TestOpenLoopUpdateRecordsPutUncorrected(t *testing.T) {
	r := bench(t, "bench -engine testmap -workload updaterandom -ops 200 -rate 50000")
	for _, k := range []string{"get", "put"} {
		c, u := r.Latency[k], r.LatencyUncorrected[k]
		if c == nil || u == nil {
			t.Fatalf("%s: latency %v, latency_uncorrected %v: want both", k, c, u)
		}
		if c.Count != u.Count {
			t.Errorf("%s: got %d uncorrected samples, want %d (as corrected)", k, u.Count, c.Count)
		}
	}
}
