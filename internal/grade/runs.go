package grade

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"kvlab/internal/archive"
	"kvlab/internal/lesson"
	"kvlab/internal/quiz"
	"kvlab/internal/server/run"
)

// A cell quiz is graded from runs this server recorded for that lesson,
// cell and browser. The page names them by their archive ids, never by
// numbers. A result is read as $N because the record says it was line N
// of the cell, whatever the order of the ids; and a run grades only when
// its line is the lesson's own line N (or an edit the quiz allows:
// package quiz, "edit:"). Runs that cannot grade are kept in Runs.Unused
// with why.

// Unused is a run the request named that did not grade the quiz, and why.
type Unused struct {
	RunID int64  `json:"run_id"`
	Why   string `json:"why"`
}

// Runs are the runs a cell quiz is graded from: Lines[N] holds the runs
// of line N of the cell, oldest first: one, or for a repeat: quiz at
// least its K. Round r is the r-th run of every line.
type Runs struct {
	Lines  [][]*archive.Run
	Unused []Unused
}

// Rounds returns each round's results, one per line, for as many rounds
// as every line has runs: what Grade takes.
func (g *Runs) Rounds() [][]json.RawMessage {
	n := -1
	for _, rs := range g.Lines {
		if n < 0 || len(rs) < n {
			n = len(rs)
		}
	}
	out := make([][]json.RawMessage, max(n, 0))
	for r := range out {
		out[r] = make([]json.RawMessage, len(g.Lines))
		for i, rs := range g.Lines {
			out[r][i] = rs[r].Result
		}
	}
	return out
}

// IDs returns the graded runs' ids, line by line.
func (g *Runs) IDs() []int64 {
	var out []int64
	for _, rs := range g.Lines {
		for _, r := range rs {
			out = append(out, r.ID)
		}
	}
	return out
}

// Started is when the earliest of the graded runs started.
func (g *Runs) Started() time.Time {
	var t time.Time
	for _, rs := range g.Lines {
		for _, r := range rs {
			if t.IsZero() || r.Started.Before(t) {
				t = r.Started
			}
		}
	}
	return t
}

// Load reads the runs ids name, each of which must be one arch recorded
// from cell q.Cell of the lesson for browser; at most maxLines ids per
// round of q.
func Load(ctx context.Context, arch archive.Archive, lessonSlug string, q *quiz.Quiz, browser string, ids []int64, maxLines int) ([]*archive.Run, error) {
	first := fmt.Sprintf("run the cell first: this quiz is graded from the runs this server recorded of cell %s for your browser", q.Cell)
	if len(ids) == 0 {
		return nil, errorf(Ungradable, "%s", first)
	}
	if browser == "" {
		return nil, errorf(BadRequest, "browser: missing; the quiz is graded from the runs recorded for the browser that sends it")
	}
	if err := run.CheckOrigin("", "", browser); err != nil {
		return nil, &Error{Kind: BadRequest, Msg: err.Error(), Err: err}
	}
	if most := maxLines * quiz.MaxRepeat; len(ids) > most {
		return nil, errorf(BadRequest, "run_ids: %d ids; at most %d (%d lines of a cell, %d runs each)", len(ids), most, maxLines, quiz.MaxRepeat)
	}
	runs := make([]*archive.Run, len(ids))
	for i, id := range ids {
		if slices.Contains(ids[:i], id) {
			return nil, errorf(BadRequest, "run_ids: run %d is given twice; give one run per line of the cell", id)
		}
		r, err := arch.Get(ctx, id)
		if errors.Is(err, archive.ErrNotFound) {
			return nil, errorf(Ungradable, "run %d is not in this server's archive: %s", id, first)
		}
		if err != nil {
			return nil, &Error{Kind: Internal, Msg: fmt.Sprintf("reading run %d from the archive: %v", id, err), Err: err}
		}
		if r.Source != "cell" || r.Lesson != lessonSlug || r.Cell != q.Cell || r.Browser != browser {
			return nil, errorf(Ungradable, "run %d was not recorded from cell %s of lesson %s in this browser: %s", id, q.Cell, lessonSlug, first)
		}
		runs[i] = r
	}
	return runs, nil
}

// lineMayGrade reports whether run r, recorded as line r.Line of cell c,
// is that line as the lesson has it, or an edit q allows.
func lineMayGrade(c *lesson.Cell, q *quiz.Quiz, r *archive.Run) bool {
	return r.Line >= 0 && r.Line < len(c.Lines) && q.LineGrades(c.Lines[r.Line], r.Spec)
}

// Pick places each run at the line of the cell its record names and
// keeps those that may grade q: the lesson's own line (or an edit q
// allows), a line q reads. Every line q reads must be filled, with one
// run, or for a repeat: quiz at least q.Repeat; else the error says which
// is missing and why each run was not used.
func Pick(l *lesson.Lesson, q *quiz.Quiz, runs []*archive.Run) (*Runs, error) {
	c := l.Cell(q.Cell)
	if c == nil {
		return nil, errorf(Internal, "quiz %s reads cell %s, which lesson %s does not have", q.ID, q.Cell, l.Slug)
	}
	g := &Runs{Lines: make([][]*archive.Run, q.Lines())}
	for _, r := range runs {
		why := ""
		switch {
		case r.Line < 0:
			why = "it was recorded before the server kept which line of the cell a run was: run the cell again"
		case r.Line >= len(g.Lines):
			why = fmt.Sprintf("this run is line %d of the cell; the quiz reads lines 1 to %d", r.Line+1, len(g.Lines))
		case !lineMayGrade(c, q, r):
			why = editedWhy(q, c.Lines, r)
		case q.Repeat == 0 && len(g.Lines[r.Line]) > 0:
			return nil, errorf(BadRequest, "run_ids: runs %d and %d are both line %d of the cell; give one run per line", g.Lines[r.Line][0].ID, r.ID, r.Line+1)
		default:
			g.Lines[r.Line] = append(g.Lines[r.Line], r)
			continue
		}
		g.Unused = append(g.Unused, Unused{RunID: r.ID, Why: why})
	}
	for i, rs := range g.Lines {
		slices.SortFunc(rs, func(a, b *archive.Run) int { return cmp.Compare(a.ID, b.ID) })
		if q.Repeat > 0 && len(rs) > 0 && len(rs) < q.Repeat {
			return nil, errorf(Ungradable, "quiz %s is graded on %d rounds of cell %s and got %d of line %d: press the cell's Run, which runs the %d rounds", q.ID, q.Repeat, q.Cell, len(rs), i+1, q.Repeat)
		}
		if len(rs) > 0 {
			continue
		}
		if len(g.Unused) == 0 {
			return nil, errorf(Ungradable, "quiz %s reads line %d of cell %s, and no run sent is that line: run the cell first", q.ID, i+1, q.Cell)
		}
		return nil, errorf(Ungradable, "%s", notTheLessonsLine(q, c, i, g.Unused))
	}
	return g, nil
}

// FirstAfter returns, for each line q reads, the first run of that line
// of q's cell recorded for browser that started after at and may grade q
// (Pick's rules), or the first q.Repeat of them for a repeat: quiz; nil
// when some line has not that many yet. A stored prediction is graded
// from these, once.
func FirstAfter(ctx context.Context, arch archive.Archive, l *lesson.Lesson, q *quiz.Quiz, browser string, at time.Time) (*Runs, error) {
	c := l.Cell(q.Cell)
	if c == nil {
		return nil, errorf(Internal, "quiz %s reads cell %s, which lesson %s does not have", q.ID, q.Cell, l.Slug)
	}
	runs, err := arch.List(ctx, archive.Query{Lesson: l.Slug, Cell: q.Cell, Browser: browser, Source: "cell",
		StartedAfter: at, Oldest: true, Limit: archive.MaxLimit})
	if err != nil {
		return nil, &Error{Kind: Internal, Msg: fmt.Sprintf("reading the runs after your prediction: %v", err), Err: err}
	}
	need := max(q.Repeat, 1)
	g := &Runs{Lines: make([][]*archive.Run, q.Lines())}
	missing := len(g.Lines) * need
	for i := range runs {
		r := &runs[i]
		if r.Line < 0 || r.Line >= len(g.Lines) || len(g.Lines[r.Line]) == need || !lineMayGrade(c, q, r) {
			continue
		}
		g.Lines[r.Line] = append(g.Lines[r.Line], r)
		if missing--; missing == 0 {
			return g, nil
		}
	}
	return nil, nil
}

// notTheLessonsLine is the reply when no run sent is line i of the cell as
// the lesson has it: one short paragraph, however many rounds were sent.
// An edited cell (every unused run a line the quiz does not accept) ends
// "press Reset to grade"; otherwise it names why the first run was not
// used.
func notTheLessonsLine(q *quiz.Quiz, c *lesson.Cell, i int, unused []Unused) string {
	edited := true
	for _, u := range unused {
		edited = edited && (strings.Contains(u.Why, "is not the lesson's line") || strings.Contains(u.Why, "is not in the lesson's cell"))
	}
	if edited {
		allowed := "it grades only the cell as the lesson wrote it"
		if len(q.Edit) > 0 {
			allowed = "this quiz lets you change only " + strings.Join(q.Edit, ", ")
		}
		what, _, _ := strings.Cut(unused[0].Why, ";")
		return fmt.Sprintf("Your run of cell %s was of an edited cell (%s), which is recorded but grades no quiz %s (%s): press Reset to grade", q.Cell, what, q.ID, allowed)
	}
	return fmt.Sprintf("quiz %s reads line %d of cell %s, and no run sent is the lesson's line %d: run %d: %s", q.ID, i+1, q.Cell, i+1, unused[0].RunID, unused[0].Why)
}

// editedWhy says why a run's line is not the lesson's.
func editedWhy(q *quiz.Quiz, own []string, r *archive.Run) string {
	if r.Line >= len(own) {
		return fmt.Sprintf("this run's line %d (%s) is not in the lesson's cell, which has %d lines", r.Line+1, r.Spec, len(own))
	}
	why := fmt.Sprintf("this run's line %d (%s) is not the lesson's line %d (%s)", r.Line+1, r.Spec, r.Line+1, own[r.Line])
	if len(q.Edit) > 0 {
		why += fmt.Sprintf("; this quiz lets you change only %s", strings.Join(q.Edit, ", "))
	} else {
		why += "; an edited cell is recorded, but grades no quiz"
	}
	return why
}
