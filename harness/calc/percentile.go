package calc

import "math"

// Percentile returns the nearest-rank p-th percentile of sorted, which must
// be sorted in ascending order.
//
// Nearest rank: rank = ceil(p/100 * n), and the answer is sorted[rank-1],
// with the index clamped to [0, n-1]. So p=0 gives the minimum, p=100 the
// maximum, and the result is always one of the recorded values: it never
// interpolates. An empty slice gives 0. p outside [0, 100] is clamped.
//
// Tools differ here. HdrHistogram, for example, rounds the rank before it
// takes the ceiling, so its p91 of 1..10 is 9 where nearest rank says 10.
// The lab uses nearest rank everywhere so that a number in a lesson, in a
// JSON result and in a student's exercise mean the same thing.
func Percentile(sorted []int64, p float64) int64 {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	if math.IsNaN(p) || p < 0 {
		p = 0
	}
	if p > 100 {
		p = 100
	}
	i := int(Rank(p, int64(n))) - 1
	if i < 0 {
		i = 0
	}
	if i > n-1 {
		i = n - 1
	}
	return sorted[i]
}

// Rank is the nearest rank, ceil(p/100 * n), of the p-th percentile of n
// values, for p in [0, 100], read as the decimal the caller wrote: p99.9
// of 41000 values is rank 40959 (99.9% of 41000 is exactly 40959), even
// though the float product 99.9*41000/100 comes out a hair above it and
// its plain ceiling would be 40960. A product within a relative 1e-12 of
// a whole number is taken as that number; float rounding errs by about
// 1e-16, and a p given to even ten decimal places moves the product more.
func Rank(p float64, n int64) int64 {
	// p*n/100 rather than p/100*n: for whole-number p the product is exact,
	// while p/100 is not (0.07*100 is 7.000000000000001, whose ceiling is 8).
	r := p * float64(n) / 100
	if w := math.Round(r); math.Abs(r-w) <= 1e-12*math.Max(w, 1) {
		return int64(w)
	}
	return int64(math.Ceil(r))
}
