package calc

import (
	"slices"
	"testing"
)

func TestRoundOrderMirrors(t *testing.T) {
	var got []int
	for r := 1; r <= 3; r++ {
		got = append(got, RoundOrder(2, r)...)
	}
	if want := []int{0, 1, 1, 0, 0, 1}; !slices.Equal(got, want) {
		t.Fatalf("three rounds of two: got %v, want %v (A B B A A B)", got, want)
	}
	if got := RoundOrder(3, 2); !slices.Equal(got, []int{2, 1, 0}) {
		t.Fatalf("round 2 of three configurations: got %v, want [2 1 0]", got)
	}
}

func TestPairRatios(t *testing.T) {
	// A drift that halves everything in round 3 leaves each round's ratio
	// alone: the paired median is 0.5 where the ratio of the sides'
	// medians would mix rounds.
	p, err := PairRatios([]float64{50, 40, 10}, []float64{100, 80, 20})
	if err != nil {
		t.Fatal(err)
	}
	if p.Ratio != 0.5 || p.Low != 0.5 || p.High != 0.5 || p.Rounds != 3 || p.Spread() != 1 {
		t.Fatalf("got %+v, want ratio 0.5 in every round", p)
	}
	p, _ = PairRatios([]float64{1, 3, 2}, []float64{1, 1, 1})
	if p.Ratio != 2 || p.Low != 1 || p.High != 3 || p.Spread() != 3 {
		t.Fatalf("got %+v, want median 2, range 1–3, spread 3", p)
	}
	if _, err := PairRatios([]float64{1}, []float64{1, 2}); err == nil {
		t.Fatal("unequal rounds: want an error")
	}
	if _, err := PairRatios([]float64{1}, []float64{0}); err == nil {
		t.Fatal("zero denominator: want an error")
	}
}
