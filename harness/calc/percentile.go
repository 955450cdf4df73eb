package calc

import (
	"math"
	"math/big"
)

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
// values, computed exactly. Floating point cannot compute it: p/100*n,
// p*n/100 and p*0.01*n each land a hair above a whole rank for some inputs
// (0.14*50 is 7.000000000000001; 64.4*250/100 is 161.00000000000003), and
// a plain ceiling then takes the next rank. So p is read as a whole number
// of millionths of a percent, the decimal the caller wrote (exact for p
// with up to six decimals; more digits are rounded to six), and the rest is
// integer arithmetic:
//
//	pm   = round(p * 1,000,000)                    // p in millionths
//	rank = (pm*n + 99,999,999) / 100,000,000        // ceil(pm*n / 1e8), integers
//
// p outside [0, 100] is clamped. This is the formula lesson 2 and the
// percentile exercise state, and the reference Solution uses.
func Rank(p float64, n int64) int64 {
	if math.IsNaN(p) || p < 0 {
		p = 0
	}
	p = math.Min(p, 100)
	pm := int64(math.Round(p * rankScale)) // at most 1e8
	if n <= math.MaxInt64/(100*rankScale) {
		return (pm*n + 100*rankScale - 1) / (100 * rankScale)
	}
	// More values than memory holds; exact all the same.
	num := new(big.Int).Mul(big.NewInt(pm), big.NewInt(n))
	num.Add(num, big.NewInt(100*rankScale-1))
	return num.Quo(num, big.NewInt(100*rankScale)).Int64()
}

// rankScale is the resolution at which Rank reads p: millionths.
const rankScale = 1_000_000
