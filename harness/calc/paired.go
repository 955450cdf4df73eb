package calc

import (
	"fmt"
	"math"
	"slices"
)

// # Paired, interleaved measurement
//
// Two configurations measured one after the other are compared across
// whatever the machine did in between: a neighbour's backup, a cache that
// warmed, a disk that stalled for a while. Lesson 9 shows the cure: run
// them in rounds, in mirrored order (A B, then B A, then A B, ...), so a
// drift that is linear in time lands on both sides equally, and compare
// them round by round. The comparison is then the median of the per-round
// ratios, and how far those ratios spread is what the machine's noise did
// to it: a tolerance narrower than that spread cannot be graded here.

// RoundOrder returns the order in which n configurations run in round r
// (1-based) of an interleaved measurement: 0..n-1 in odd rounds, reversed
// in even ones, so two configurations run A B B A A B ... and neither is
// always first.
func RoundOrder(n, r int) []int {
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	if r%2 == 0 {
		slices.Reverse(order)
	}
	return order
}

// Paired is a comparison of two configurations measured in the same
// rounds: the median of the per-round ratios and their range.
type Paired struct {
	Ratio  float64   `json:"ratio"`  // median of the per-round ratios
	Low    float64   `json:"low"`    // the lowest per-round ratio
	High   float64   `json:"high"`   // the highest per-round ratio
	Rounds int       `json:"rounds"` // how many rounds were paired
	Ratios []float64 `json:"ratios"` // each round's ratio, in round order
}

// Spread is High/Low: the factor by which the per-round ratios disagree
// (1 when they agree, +Inf when Low is 0 or below).
func (p Paired) Spread() float64 {
	if p.Low <= 0 {
		return math.Inf(1)
	}
	return p.High / p.Low
}

// PairRatios compares num against den round by round: num[i]/den[i] for
// each round i, their median and their range. The two slices must be
// equally long (one value per round) and every denominator above 0.
func PairRatios(num, den []float64) (Paired, error) {
	if len(num) != len(den) || len(num) == 0 {
		return Paired{}, fmt.Errorf("calc: pairing %d rounds with %d: want one value per round on each side", len(num), len(den))
	}
	p := Paired{Rounds: len(num), Ratios: make([]float64, len(num))}
	for i := range num {
		if !(den[i] > 0) || math.IsNaN(num[i]) {
			return Paired{}, fmt.Errorf("calc: round %d: cannot divide %g by %g", i+1, num[i], den[i])
		}
		p.Ratios[i] = num[i] / den[i]
	}
	p.Ratio = MedianOf(p.Ratios)
	p.Low, p.High = slices.Min(p.Ratios), slices.Max(p.Ratios)
	return p, nil
}

// MedianOf is the median of v: the middle value, or the mean of the two
// middle ones for an even count; 0 for none. v is not changed.
func MedianOf(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	switch {
	case n == 0:
		return 0
	case n%2 == 1:
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
