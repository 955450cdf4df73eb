package calc

import "strconv"

// FormatNs prints a latency given in nanoseconds the way every table,
// quiz and page of kvlab does: whole nanoseconds below 1 µs, then one
// decimal in µs, two in ms, two in s ("850 ns", "12.3 µs", "4.56 ms",
// "1.20 s"). harness/testdata/durations.json holds the cases; the page's
// fmtNs (static/dom.js) is held to the same table. A value that is not a
// finite number prints as Go writes it, with the unit ("NaN ns").
func FormatNs(ns float64) string {
	format := func(v float64, prec int, unit string) string {
		return strconv.FormatFloat(v, 'f', prec, 64) + unit
	}
	switch {
	case ns != ns || ns > 1e300 || ns < -1e300: // NaN or ±Inf
		return strconv.FormatFloat(ns, 'g', -1, 64) + " ns"
	case ns < 1e3:
		return format(ns, 0, " ns")
	case ns < 1e6:
		return format(ns/1e3, 1, " µs")
	case ns < 1e9:
		return format(ns/1e6, 2, " ms")
	}
	return format(ns/1e9, 2, " s")
}
