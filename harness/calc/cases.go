package calc

// PercentileCase is one row of the shared percentile test table.
type PercentileCase struct {
	Name  string  // short description shown to students when the case fails
	In    []int64 // sorted input
	P     float64 // percentile, 0..100
	Want  int64   // the nearest-rank answer
	Input string  // In written as the course shows it, e.g. "1..100"
	// Note, when set, says why the case is in the table; the exercise
	// shows it beside the case whether it passes or not. The float-trap
	// cases carry one: they are taught, not hidden.
	Note string
}

// PercentileCases is the table every Percentile implementation must pass:
// the harness's own tests run it, and the browser exercise loads it as the
// student's unit tests. Add a case here and both gain it.
var PercentileCases = []PercentileCase{
	{Name: "p50 of 1..100", In: seq(1, 100), P: 50, Want: 50, Input: "1..100"},
	{Name: "p95 of 1..100", In: seq(1, 100), P: 95, Want: 95, Input: "1..100"},
	{Name: "p99 of 1..100", In: seq(1, 100), P: 99, Want: 99, Input: "1..100"},
	{Name: "p100 of 1..100 is the max", In: seq(1, 100), P: 100, Want: 100, Input: "1..100"},
	{Name: "empty slice gives 0", In: nil, P: 50, Want: 0, Input: "[]"},
	{Name: "one element, p50", In: []int64{7}, P: 50, Want: 7, Input: "[7]"},
	{Name: "one element, p99", In: []int64{7}, P: 99, Want: 7, Input: "[7]"},
	{Name: "p0 is the minimum", In: seq(1, 10), P: 0, Want: 1, Input: "1..10"},
	{Name: "p91 of 1..10 rounds the rank up", In: seq(1, 10), P: 91, Want: 10, Input: "1..10"},
	{Name: "p90 of 1..10 is exactly rank 9", In: seq(1, 10), P: 90, Want: 9, Input: "1..10"},
	{Name: "just above a rank boundary", In: seq(1, 10), P: 90.0001, Want: 10, Input: "1..10"},
	{Name: "p10 of 1..10", In: seq(1, 10), P: 10, Want: 1, Input: "1..10"},
	{Name: "p50 of an even count picks the lower middle", In: []int64{1, 2, 3, 4}, P: 50, Want: 2, Input: "[1 2 3 4]"},
	{Name: "p50 of an odd count picks the middle", In: []int64{10, 20, 30}, P: 50, Want: 20, Input: "[10 20 30]"},
	{Name: "p99 of 1000 samples with 20 slow ones", In: tail(1000, 20, 100, 9000), P: 99, Want: 9000, Input: "980 x 100, 20 x 9000"},
	{Name: "p99 of 1000 samples with 5 slow ones", In: tail(1000, 5, 100, 9000), P: 99, Want: 100, Input: "995 x 100, 5 x 9000"},
	{Name: "duplicates", In: []int64{5, 5, 5, 5, 9}, P: 80, Want: 5, Input: "[5 5 5 5 9]"},
	// The float trap lesson 2 teaches: each naive float formula with a
	// plain ceiling fails at least one of these three.
	{Name: "p99.9 of 1..1000: the float trap", In: seq(1, 1000), P: 99.9, Want: 999, Input: "1..1000",
		Note: "float trap: in float64, 99.9/100*1000 and 99.9*0.01*1000 are 999.0000000000001, whose ceiling is 1000; the exact rank is 999"},
	{Name: "p14 of 1..50: the float trap", In: seq(1, 50), P: 14, Want: 7, Input: "1..50",
		Note: "float trap: in float64, 0.14*50 (p/100*n, and p*0.01*n) is 7.000000000000001, whose ceiling is 8; the exact rank is 7"},
	{Name: "p64.4 of 1..250: the float trap for p*n/100", In: seq(1, 250), P: 64.4, Want: 161, Input: "1..250",
		Note: "float trap: even p*n/100 is inexact when p has decimals: 64.4*250/100 is 161.00000000000003 in float64, whose ceiling is 162; the exact rank is 161"},
	{Name: "p above 100 is the max", In: seq(1, 10), P: 150, Want: 10, Input: "1..10"},
	{Name: "negative p is the min", In: seq(1, 10), P: -5, Want: 1, Input: "1..10"},
}

// seq returns lo, lo+1, ..., hi.
func seq(lo, hi int64) []int64 {
	s := make([]int64, 0, hi-lo+1)
	for v := lo; v <= hi; v++ {
		s = append(s, v)
	}
	return s
}

// tail returns n sorted samples of which the last slow ones are slowV and
// the rest fastV.
func tail(n, slow int, fastV, slowV int64) []int64 {
	s := make([]int64, n)
	for i := range s {
		s[i] = fastV
		if i >= n-slow {
			s[i] = slowV
		}
	}
	return s
}
