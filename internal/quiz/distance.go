package quiz

import "math"

// distance says how far an answer is from the measured value: in words,
// as a factor (answer ÷ measured, when both are positive) and in percent
// of the measured value (when it is not 0). Within 2× either way the
// words use percent ("15% below the measured value"); further off they
// use the factor ("3.2× the measured value", "a tenth of ...": written as
// 0.1×), since a prediction off by an order of magnitude is better read
// as a ratio.
func distance(got, want float64) (words string, factor, percent *float64) {
	if want != 0 {
		p := (got - want) / math.Abs(want) * 100
		percent = &p
	}
	if got > 0 && want > 0 {
		f := got / want
		factor = &f
	}
	switch {
	case got == want:
		return "exactly the measured value", factor, percent
	case factor != nil && (*factor >= 2 || *factor <= 0.5):
		return FormatNumber(round3(*factor)) + "× the measured value", factor, percent
	case percent != nil:
		dir := "above"
		if *percent < 0 {
			dir = "below"
		}
		return FormatNumber(round3(math.Abs(*percent))) + "% " + dir + " the measured value", factor, percent
	}
	// The measured value is 0: only the absolute difference means anything.
	return FormatNumber(got-want) + " from the measured value", factor, percent
}

// round3 keeps three significant digits, for words a reader takes in at a
// glance.
func round3(x float64) float64 {
	if x == 0 || math.IsInf(x, 0) || math.IsNaN(x) {
		return x
	}
	e := math.Pow(10, 2-math.Floor(math.Log10(math.Abs(x))))
	return math.Round(x*e) / e
}
