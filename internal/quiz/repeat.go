package quiz

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"kvlab/harness/calc"
)

// # Graded on several runs
//
// A quantity that moves from run to run by more than its tolerance makes
// a quiz a lottery when one run grades it. A cell: quiz may say
//
//	repeat: 3
//
// and is then graded on K runs of its cell, in rounds: the server runs
// the cell's lines in mirrored order (A B, B A, A B), so an answer that
// divides one line by another is a paired ratio, taken within a round.
// The answer is computed from each round, and the measured answer is
// their median. The tolerance is checked against the rounds' spread: when
// most rounds' answers (2 of 3, 3 of 4 or 5) lie within the band around
// the median, the prediction is graded against that band, and a round
// outside it (a hiccup of a shared machine) is set aside by the median,
// as lesson 9 teaches, and named in the reply; when most do not, the
// machine was too noisy for the band to mean anything: an answer within
// the band of every round is still right and one within no round's band
// still wrong, but any other is not graded (Feedback.TooNoisy) rather
// than the band widened to whatever the rounds gave. The feedback's
// Spread says what they gave.

// MaxRepeat is the most runs a repeat: quiz may ask for: the rounds of
// the page's repeat button.
const MaxRepeat = 5

// Spread is what a repeat: quiz's runs gave: how many, and their lowest
// and highest answer.
type Spread struct {
	Runs int     `json:"runs"`
	Low  float64 `json:"low"`
	High float64 `json:"high"`
	Text string  `json:"text"` // "your 3 rounds gave 104–852× (paired: each round's lines run side by side)"
	// Paired is true when the answer compares two or more lines: each
	// round's answer is then a paired figure, its lines run in the same
	// round.
	Paired bool `json:"paired,omitempty"`
	// Factor is High/Low (0 when Low is 0 or below): how far apart the
	// rounds were, to set against a factor band.
	Factor float64 `json:"factor,omitempty"`
	// Within is true when most rounds' answers (more than half) lie
	// within the quiz's band around the median: the band can grade on
	// this machine.
	Within bool `json:"within"`
	// Outside is how many rounds' answers lie outside the band around
	// the median: set aside by the median when Within, the noise that
	// stops the grading when not.
	Outside int `json:"outside,omitempty"`
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

// CheckRepeated grades answer on several rounds of q's cell: rounds[r] is
// round r's results, one per line, as Check takes them. With one round it
// is Check. The measured answer is the median of the rounds' answers (for
// an answer over two lines, the median of per-round paired ratios).
// Spread reports the rounds' range. When most rounds' answers lie within
// the band around the median the answer is graded against that band;
// otherwise the reply is TooNoisy: not graded, Correct false, and Spread
// says the machine was too noisy to grade the prediction. Show is filled
// from the round whose answer is nearest the median.
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
	med := calc.MedianOf(vals)
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
	fb.WantNum = med
	low, high := q.band(med)
	fb.Spread = q.spread(vals, low, high)
	fb, err = q.checkNumber(fb, med, low, high, answer)
	if err == nil && !fb.Spread.Within {
		fb.TooNoisy, fb.Correct = q.noisyVerdict(vals, answer)
	}
	return fb, err
}

// noisyVerdict grades an answer on rounds that spread wider than the
// band: noise cannot decide a verdict every round agrees on. The answer
// is right when it lies within the band around each round's answer,
// wrong when it lies within none of them, and otherwise not graded
// (tooNoisy): which round one believed would decide it.
func (q *Quiz) noisyVerdict(vals []float64, answer string) (tooNoisy, correct bool) {
	got, err := ParseNumber(answer, q.Unit)
	if err != nil {
		return true, false
	}
	in := 0
	for _, v := range vals {
		if low, high := q.band(v); got >= low && got <= high {
			in++
		}
	}
	switch in {
	case len(vals):
		return false, true
	case 0:
		return false, false
	}
	return true, false
}

// spread describes the rounds' answers vals against the band low..high
// around their median. The band grades when most rounds lie within it
// (more than half: a median of 3 sets one stray round aside, never two).
func (q *Quiz) spread(vals []float64, low, high float64) *Spread {
	lo, hi := slices.Min(vals), slices.Max(vals)
	var outside []string
	for _, v := range vals {
		if v < low || v > high {
			outside = append(outside, FormatNumber(v)+unitSuffix(q.Unit))
		}
	}
	sp := &Spread{Runs: len(vals), Low: lo, High: hi, Paired: q.Lines() > 1,
		Within: 2*(len(vals)-len(outside)) > len(vals), Outside: len(outside)}
	if lo > 0 {
		sp.Factor = hi / lo
	}
	what := fmt.Sprintf("your %d rounds gave %s–%s%s", len(vals), FormatNumber(lo), FormatNumber(hi), unitSuffix(q.Unit))
	if sp.Paired {
		what += " (paired: each round ran the lines side by side, in mirrored order)"
	}
	switch {
	case sp.Within && len(outside) == 0:
		sp.Text = what + ", within this quiz's band around their median"
	case sp.Within:
		aside := "the other"
		if len(outside) > 1 {
			aside = "the others"
		}
		sp.Text = fmt.Sprintf("%s, %d of %d within this quiz's band around their median; the median sets %s aside (%s): stray rounds, fewer than half, do not move it",
			what, len(vals)-len(outside), len(vals), aside, strings.Join(outside, ", "))
	default:
		sp.Text = fmt.Sprintf("%s, wider than this quiz's band (%s) allows around their median (%d of %d outside it): the machine was too noisy to grade the prediction; run the cell again when it is quieter",
			what, q.Tol.String(), len(outside), len(vals))
	}
	return sp
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
