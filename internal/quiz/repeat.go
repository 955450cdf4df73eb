package quiz

import (
	"fmt"
	"math"
	"slices"
	"strconv"
)

// # Graded on several runs
//
// A quantity that moves from run to run by more than its tolerance makes
// a quiz a lottery when one run grades it. A cell: quiz may say
//
//	repeat: 3
//
// and is then graded on K runs of its cell (the page's "repeat 5×" runs
// a cell five times): the answer is computed from each run, the measured
// answer is their median, and the accepted range is the tolerance around
// the median widened to cover every run's answer, the spread the reader's
// own disk showed. The feedback's Spread says what that was.

// MaxRepeat is the most runs a repeat: quiz may ask for: the rounds of
// the page's repeat button.
const MaxRepeat = 5

// Spread is what a repeat: quiz's runs gave: how many, and their lowest
// and highest answer.
type Spread struct {
	Runs int     `json:"runs"`
	Low  float64 `json:"low"`
	High float64 `json:"high"`
	Text string  `json:"text"` // "your disk gave 104–852× over 3 runs"
}

// setRepeat reads "repeat: K".
func (q *Quiz) setRepeat(val string) error {
	k, err := strconv.Atoi(val)
	if err != nil || k < 2 || k > MaxRepeat {
		return fmt.Errorf("repeat: %q: want the number of runs the quiz is graded on, 2 to %d", val, MaxRepeat)
	}
	q.Repeat = k
	return nil
}

// CheckRepeated grades answer on several runs of q's cell: rounds[r] is
// run r's results, one per line, as Check takes them. With one round it
// is Check. The measured answer is the median of the rounds' answers, and
// the accepted range the tolerance around it widened to every round's
// answer; Spread reports the rounds' range. Show is filled from the round
// whose answer is nearest the median.
func CheckRepeated(q *Quiz, rounds [][]any, answer string) (Feedback, error) {
	if len(rounds) == 1 {
		return Check(q, rounds[0], answer)
	}
	fb := Feedback{ID: q.ID, Unit: q.Unit, Explain: q.Explain}
	if len(rounds) == 0 {
		return fb, fmt.Errorf("quiz %s: no runs to grade from", q.ID)
	}
	if q.Choices != nil {
		return fb, fmt.Errorf("quiz %s: a choice quiz is graded on one run", q.ID)
	}
	vals := make([]float64, len(rounds))
	for r, rs := range rounds {
		v, err := q.Evaluate(rs)
		if err != nil {
			return fb, fmt.Errorf("run %d of %d: %w", r+1, len(rounds), err)
		}
		vals[r] = v
	}
	sorted := slices.Clone(vals)
	slices.Sort(sorted)
	med := sorted[len(sorted)/2]
	if len(sorted)%2 == 0 {
		med = (sorted[len(sorted)/2-1] + sorted[len(sorted)/2]) / 2
	}
	nearest := 0
	for r, v := range vals {
		if math.Abs(v-med) < math.Abs(vals[nearest]-med) {
			nearest = r
		}
	}
	var err error
	if fb.Shown, err = q.ShowText(rounds[nearest]); err != nil {
		return fb, fmt.Errorf("quiz %s: show: %v", q.ID, err)
	}
	lo, hi := sorted[0], sorted[len(sorted)-1]
	fb.Spread = &Spread{Runs: len(rounds), Low: lo, High: hi,
		Text: fmt.Sprintf("your disk gave %s–%s%s over %d runs", FormatNumber(lo), FormatNumber(hi), unitSuffix(q.Unit), len(rounds))}
	fb.WantNum = med
	low, high := q.band(med)
	return q.checkNumber(fb, med, min(low, lo), max(high, hi), answer)
}

// unitSuffix is how a unit follows a number in text: "×" right after it
// for x, a space before any other.
func unitSuffix(unit string) string {
	switch unit {
	case "":
		return ""
	case "x", "×":
		return "×"
	}
	return " " + unit
}
