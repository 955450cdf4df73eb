package harness

import "kvlab/harness/calc"

// Percentile returns the nearest-rank p-th percentile of sorted, which must
// be sorted ascending: rank = ceil(p/100 * n), and the answer is
// sorted[rank-1] with the index clamped to [0, n-1]. An empty slice gives 0.
//
// It never interpolates: the answer is always one of the samples. The
// implementation lives in kvlab/harness/calc so that the browser exercise
// and the harness share it and its test table (calc.PercentileCases).
func Percentile(sorted []int64, p float64) int64 {
	return calc.Percentile(sorted, p)
}
