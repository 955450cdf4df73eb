package quiz

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// # Which runs grade a quiz
//
// A cell: quiz is graded only from runs of its cell's own lines: line N of
// the run must be line N of the lesson's cell, as written (after the
// page's normalisation: trimmed, comments and blank lines dropped). An
// edited cell still runs and is recorded, but grades nothing, unless the
// quiz names the flags a reader may change:
//
//	edit: -rate, -ops
//
// Then a line that differs from the lesson's only in those flags' values
// (or adds or drops them) grades the quiz: for "try this" quizzes whose
// question asks the reader to pick a value.

// flagRE is a flag name as edit: names it.
var flagRE = regexp.MustCompile(`^-[a-z][a-z0-9-]*$`)

// setEdit reads "edit: -rate, -ops" into q.Edit.
func (q *Quiz) setEdit(val string) error {
	for _, f := range strings.FieldsFunc(val, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' }) {
		if !flagRE.MatchString(f) {
			return fmt.Errorf("edit: %q: name the flags a reader may change, e.g. -rate, -ops", f)
		}
		q.Edit = append(q.Edit, f)
	}
	if len(q.Edit) == 0 {
		return fmt.Errorf("edit: needs the flags a reader may change, e.g. -rate, -ops")
	}
	return nil
}

// LineGrades reports whether line, as run, may stand for the lesson's
// line own in grading q: the same text, or the same but for the values of
// the flags q's edit: names. Both are trimmed lines, as lesson.CellLines
// gives them.
func (q *Quiz) LineGrades(own, line string) bool {
	if own == line {
		return true
	}
	if len(q.Edit) == 0 {
		return false
	}
	return slices.Equal(q.withoutEdits(own), q.withoutEdits(line))
}

// withoutEdits splits a line into words and drops the flags edit: names
// with their values ("-rate 200" and "-rate=200" alike).
func (q *Quiz) withoutEdits(line string) []string {
	words := strings.Fields(line)
	var out []string
	for i := 0; i < len(words); i++ {
		w := words[i]
		name, _, hasValue := strings.Cut(strings.TrimPrefix(w, "-"), "=")
		if strings.HasPrefix(w, "-") && slices.Contains(q.Edit, "-"+strings.TrimPrefix(name, "-")) {
			if !hasValue {
				i++ // the value is the next word
			}
			continue
		}
		out = append(out, w)
	}
	return out
}
