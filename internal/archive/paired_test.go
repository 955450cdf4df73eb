package archive

import (
	"testing"
	"time"
)

// Groups that ran interleaved are compared round by round: a machine that
// slowed everything in round 2 moves the medians' ratio but not the
// paired one; groups run one after the other get no paired figure.
func TestComparePairsInterleavedRounds(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	a := group(1, "always", 1000, 300, 600)
	b := group(4, "batch:64", 3000, 900, 1800)
	at := func(rs []Run, starts ...int) {
		for i := range rs {
			rs[i].Started = t0.Add(time.Duration(starts[i]) * time.Second)
		}
	}
	at(a, 0, 3, 4) // A B B A A B
	at(b, 1, 2, 5)
	c := mustCompare(t, a, b)
	if c.Paired == nil {
		t.Fatal("interleaved groups: no paired comparison")
	}
	if p := c.Paired; p.Rounds != 3 || p.Ratio != 3 || p.Low != 3 || p.High != 3 {
		t.Fatalf("paired %+v, want 3x in each of 3 rounds", p)
	}
	at(a, 0, 1, 2) // A A A B B B
	at(b, 3, 4, 5)
	if c := mustCompare(t, a, b); c.Paired != nil {
		t.Fatalf("groups run one after the other: paired %+v, want none", c.Paired)
	}
}
