package calc

import "math"

// Which path did a measured p99 land on?
//
// A Put either returns after a write(2) into the page cache (the fast
// path) or waits for an fdatasync (the slow path). To say which one a
// measured p99 is, compare it with a typical Put and a typical fdatasync
// of the same run, on a log scale (the two paths are often 50x or more
// apart, and the slow one has a long tail):
//
//	slow  when  |log(p99 / fsyncP50)| <= |log(p99 / putP50)|
//	      i.e.  p99 >= sqrt(putP50 * fsyncP50)    (given p99 >= putP50)
//
// The threshold is the geometric mean of the run's median Put and its
// median fdatasync. Both are medians: a single huge flush, which can drag
// the mean fdatasync to ten times the typical one, moves neither, so it
// cannot hide a p99 that plainly waited for a flush. (The rule this
// replaces, p99 >= T_write + mean fdatasync / 2, called a p99 of 115 µs
// "fast" in a run whose fdatasyncs took 100 µs but whose mean was 1.1 ms
// because of one slow flush.) When the run made no fdatasync at all, no
// Put can have waited for one: fast.
//
// Under "always" every Put is slow, so putP50 is itself about a write plus
// an fdatasync and p99 >= putP50 >= the threshold: slow, as it should be.

// P99Threshold is the latency from which MeasuredP99Path calls a p99 slow:
// the geometric mean of the median Put and the median fdatasync, in
// nanoseconds. It is 0 when either median is not positive.
func P99Threshold(putP50Ns, fsyncP50Ns float64) float64 {
	if !(putP50Ns > 0) || !(fsyncP50Ns > 0) {
		return 0
	}
	return math.Sqrt(putP50Ns) * math.Sqrt(fsyncP50Ns)
}

// MeasuredP99Path classifies a measured Put p99 as P99Slow or P99Fast by
// the rule above: slow when p99 is at least P99Threshold(putP50Ns,
// fsyncP50Ns), fast when it is below it or when fsyncP50Ns is 0 (no
// fdatasync to wait for). All times in nanoseconds.
func MeasuredP99Path(p99Ns, putP50Ns, fsyncP50Ns float64) string {
	if !(fsyncP50Ns > 0) {
		return P99Fast
	}
	if !(putP50Ns > 0) {
		// A Put faster than the clock's resolution: any p99 at or above
		// a typical flush waited for one.
		if p99Ns >= fsyncP50Ns {
			return P99Slow
		}
		return P99Fast
	}
	if p99Ns >= P99Threshold(putP50Ns, fsyncP50Ns) {
		return P99Slow
	}
	return P99Fast
}
