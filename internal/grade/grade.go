package grade

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"kvlab/harness/calc"
	"kvlab/internal/quiz"
)

// Grade checks answer to q against rounds of results: rounds[r] holds
// round r's results, one per line q reads, each the JSON the harness
// encoded (nil or "null" for a line that gave none). One round is graded
// as quiz.Check does; several (a repeat: quiz) as quiz.CheckRepeated.
// A room's poll, which has no answer to grade, is measured by Measure.
//
// A prediction (asPrediction: the answer was stored before the rounds
// started) on rounds measured on a busy machine is not graded: the
// verdict is quiz.DeclineIfBusy's. An answer given after the result is
// graded whatever the machine was doing: the reader saw the figure.
//
// Each result is decoded once, here. Errors are *Error: BadAnswer for an
// answer that is not a number or a choice, Ungradable for results that
// cannot answer the quiz (BadRequest for a result that is not JSON).
func Grade(q *quiz.Quiz, answer string, rounds [][]json.RawMessage, asPrediction bool) (quiz.Feedback, error) {
	results, err := decode(rounds)
	if err != nil {
		return quiz.Feedback{ID: q.ID}, err
	}
	fb, err := quiz.CheckRepeated(q, results, answer)
	if err != nil {
		return fb, answerError(err)
	}
	if asPrediction {
		fb = quiz.DeclineIfBusy(fb, results...)
	}
	return fb, nil
}

// decode decodes rounds of encoded results as Grade takes them; a nil or
// "null" result stays nil.
func decode(rounds [][]json.RawMessage) ([][]any, error) {
	results := make([][]any, len(rounds))
	for r, raw := range rounds {
		results[r] = make([]any, len(raw))
		for i, m := range raw {
			if len(m) == 0 || bytes.Equal(m, []byte("null")) {
				continue
			}
			if err := json.Unmarshal(m, &results[r][i]); err != nil {
				// Not the reader's doing, but the reply has always been 400.
				return nil, &Error{Kind: BadRequest, Msg: fmt.Sprintf("results[%d]: %v", i, err), Err: err}
			}
		}
	}
	return results, nil
}

// Measure is Grade without an answer, for a room's poll: the figure the
// rounds give (Feedback.WantNum, their median, and Shown) and why they were
// measured on a machine too busy to judge a prediction by (quiz.Busy),
// or "" when they were not. The poll shows the figure either way and
// says so beside it. The rounds are decoded once, for both.
func Measure(q *quiz.Quiz, rounds [][]json.RawMessage) (fb quiz.Feedback, busy string, err error) {
	results, err := decode(rounds)
	if err != nil {
		return quiz.Feedback{ID: q.ID}, "", err
	}
	fb, err = measure(q, results)
	if err != nil {
		return fb, "", err
	}
	return fb, quiz.Busy(results...), nil
}

// measure is Measure on decoded rounds: the value the rounds give (their
// median) and the Show text of the first round.
func measure(q *quiz.Quiz, rounds [][]any) (quiz.Feedback, error) {
	fb := quiz.Feedback{ID: q.ID, Unit: q.Unit, Explain: q.Explain}
	if len(rounds) == 0 {
		return fb, errorf(Ungradable, "quiz %s: no runs to grade from", q.ID)
	}
	vals := make([]float64, len(rounds))
	for r, rs := range rounds {
		v, err := q.Evaluate(rs)
		if err != nil {
			return fb, &Error{Kind: Ungradable, Msg: err.Error(), Err: err}
		}
		vals[r] = v
	}
	fb.WantNum = calc.MedianOf(vals)
	// Show is a courtesy here: a measurement stands without it.
	fb.Shown, _ = q.ShowText(rounds[0])
	return fb, nil
}

// CheckAnswer reports whether answer has the form q asks for (a number in
// its unit, or a choice picked), before anything is measured for it: nil,
// or a BadAnswer *Error.
func CheckAnswer(q *quiz.Quiz, answer string) error {
	if q.Choices == nil {
		if _, err := quiz.ParseNumber(answer, q.Unit); err != nil {
			return answerError(err)
		}
	} else if answer == "" {
		return errorf(BadAnswer, "pick one of the choices")
	}
	return nil
}

// AnswerMessage is the message for an answer that is not a number or not
// a choice. The reader reads it under the quiz, so it says what to fix
// without the package's prefix.
func AnswerMessage(err error) string {
	return "Your answer " + strings.TrimPrefix(err.Error(), quiz.ErrBadAnswer.Error()+": ")
}

// SameAnswer reports whether two answers to q say the same: equal
// numbers for a numeric quiz ("0.95" and "0,95"), the same text up to
// case and spaces for a choice quiz.
func SameAnswer(q *quiz.Quiz, a, b string) bool {
	if q.Choices == nil {
		x, errA := quiz.ParseNumber(a, q.Unit)
		y, errB := quiz.ParseNumber(b, q.Unit)
		return errA == nil && errB == nil && x == y
	}
	return strings.EqualFold(strings.TrimSpace(a), strings.TrimSpace(b))
}
