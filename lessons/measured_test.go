package lessons_test

import (
	"slices"
	"strings"
	"testing"
)

// notYetMeasured lists, as "slug/quiz-id", the quizzes that fail the
// measurement checker (lesson.AnswerProblem) today: their answer is the
// same on every disk. Each is to be reworked into a quiz a different disk
// can answer differently, and taken off this list; the list must end
// empty. A quiz on it that passes the checker is an error too, so the list
// cannot go stale.
var notYetMeasured = []string{}

// TestQuizzesDependOnMeasurement refuses a quiz whose answer reads no
// measured field, comes out the same for synthetic results that differ
// in every field, or comes out the same on synthetic disks that keep the
// laws every disk keeps (lesson.LawProblem: "≈ threads", "≈ 1").
func TestQuizzesDependOnMeasurement(t *testing.T) {
	var failing []string
	for _, l := range load(t) {
		for _, q := range l.Quizzes {
			name := l.Slug + "/" + q.ID
			var cell []string
			if c := l.Cell(q.Cell); c != nil {
				cell = c.Lines
			}
			err := AnswerProblemFor(q, cell)
			allowed := slices.Contains(notYetMeasured, name)
			switch {
			case err != nil && !allowed:
				t.Errorf("%s: %v", l.Slug, err)
			case err == nil && allowed:
				t.Errorf("%s passes the measurement checker now: take it off notYetMeasured", name)
			}
			if err != nil {
				failing = append(failing, name)
			}
		}
	}
	if len(failing) > 0 {
		t.Logf("quizzes whose answer does not depend on a measurement: %s", strings.Join(failing, ", "))
	}
}

// TestPredictionCounts logs, per chapter, how many quizzes ask for a
// prediction before the measurement (predict: yes, or run:).
func TestPredictionCounts(t *testing.T) {
	for _, c := range CountPredictions(load(t)) {
		t.Log(c)
	}
}
