package harness

import "fmt"

// Steady state, as db_bench's users define it: a number taken before it is
// noise, and reaching it takes two signals at once, throughput that has
// settled (the last window of one-second intervals varies by less than a
// few percent) and an engine whose background backlog has drained or
// stopped growing (kv's compaction debt; pebble's compaction debt and L0
// files). A store still ramping up, or one whose throughput looks flat
// while its debt grows, is not there yet: the debt comes due later, as
// slower writes or stalls.

// SteadySample is one second of a warm-up: its throughput and the
// engine's backlog at its end.
type SteadySample struct {
	Second    int     `json:"second"` // 1 for the first second
	OpsPerSec float64 `json:"ops_per_sec"`
	// Debt is the engine's background backlog at the end of the second,
	// in bytes (engine_metrics' compaction_debt_bytes); -1 when the
	// engine reports none, and only throughput decides.
	Debt int64 `json:"debt"`
}

// SteadyState is the verdict of FindSteady.
type SteadyState struct {
	// Reached says whether a window of Window seconds met both
	// conditions; AtSecond is the last second of the first one that did
	// (measuring may start after it).
	Reached  bool `json:"reached"`
	AtSecond int  `json:"at_second,omitempty"`
	Window   int  `json:"window_seconds"`
	// Tolerance is the largest spread allowed, as a fraction; Spread is
	// that of the window found, or of the last window when none was:
	// (max - min) / mean of its throughput.
	Tolerance float64 `json:"tolerance"`
	Spread    float64 `json:"spread"`
	// Evidence says, when Reached is false, which condition the last
	// window failed and by how much.
	Evidence string `json:"evidence,omitempty"`
}

// FindSteady returns the first second at which the last window samples
// had a throughput spread of at most tolerance and a backlog that was
// zero or flat: its spread, (max - min) / mean, also at most tolerance,
// and no higher at the end of the window than at its start. With fewer
// than window samples it is not reached.
func FindSteady(samples []SteadySample, window int, tolerance float64) SteadyState {
	st := SteadyState{Window: window, Tolerance: tolerance}
	if window < 2 || len(samples) < window {
		st.Evidence = fmt.Sprintf("%d seconds of warm-up, fewer than the %d-second window", len(samples), window)
		return st
	}
	for end := window; end <= len(samples); end++ {
		w := samples[end-window : end]
		spread := spreadOf(w, func(s SteadySample) float64 { return s.OpsPerSec })
		st.Spread = spread
		debtOK, debtWhy := debtSettled(w, tolerance)
		if spread <= tolerance && debtOK {
			st.Reached, st.AtSecond = true, w[len(w)-1].Second
			st.Evidence = ""
			return st
		}
		switch {
		case spread > tolerance:
			st.Evidence = fmt.Sprintf("throughput over seconds %d-%d varied by %.1f%%, more than %.1f%%", w[0].Second, w[len(w)-1].Second, 100*spread, 100*tolerance)
		default:
			st.Evidence = fmt.Sprintf("throughput settled over seconds %d-%d, but %s", w[0].Second, w[len(w)-1].Second, debtWhy)
		}
	}
	return st
}

// debtSettled reports whether the backlog over w is zero or flat, and
// if not, why.
func debtSettled(w []SteadySample, tolerance float64) (bool, string) {
	if w[0].Debt < 0 {
		return true, "" // the engine reports no backlog
	}
	first, last := w[0].Debt, w[len(w)-1].Debt
	allZero := true
	for _, s := range w {
		allZero = allZero && s.Debt == 0
	}
	if allZero {
		return true, ""
	}
	if last > first {
		return false, fmt.Sprintf("the compaction debt grew from %d to %d bytes", first, last)
	}
	if spread := spreadOf(w, func(s SteadySample) float64 { return float64(s.Debt) }); spread > tolerance {
		return false, fmt.Sprintf("the compaction debt moved by %.0f%% of its mean", 100*spread)
	}
	return true, ""
}

// spreadOf returns (max - min) / mean of f over w; 0 when the mean is 0.
func spreadOf(w []SteadySample, f func(SteadySample) float64) float64 {
	lo, hi, sum := f(w[0]), f(w[0]), 0.0
	for _, s := range w {
		v := f(s)
		lo, hi, sum = min(lo, v), max(hi, v), sum+v
	}
	mean := sum / float64(len(w))
	if mean == 0 {
		return 0
	}
	return (hi - lo) / mean
}
