package server

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"kvlab/harness"
	"kvlab/internal/archive"
	"kvlab/internal/lesson"
	"kvlab/internal/quiz"
	"kvlab/internal/server/guard"
	"kvlab/internal/server/runq"
	"kvlab/internal/server/web"
)

// Quizzes graded from the server's record: a quiz that reads a cell is
// graded from runs this server recorded for that lesson, cell and browser.
// The page sends the archive ids of its latest run of the cell (run_ids,
// from the result messages), never numbers; numbers in "results" are
// refused. Each id must name a run the server recorded from that cell of
// that lesson for that browser.
//
// A result is read as $N because the record says it was line N of the
// cell, whatever the order of run_ids; and a run grades only when its
// line is the lesson's own line N (or an edit the quiz allows: package
// quiz, "edit:"). Runs that cannot grade are named in the reply's
// "unused" with why.

// errClientNumbers is the reply to a request that carries results.
const errClientNumbers = `results: this server grades quizzes from the runs it recorded itself, not from numbers sent with the answer; send "run_ids" (the run_id of each line's result message) and "browser" instead`

// quizError is an HTTP status with the message the student reads.
type quizError struct {
	code int
	msg  string
}

func (e *quizError) Error() string { return e.msg }

// unusedRun is a run the request named that did not grade the quiz, and
// why (the reply's "unused").
type unusedRun struct {
	RunID int64  `json:"run_id"`
	Why   string `json:"why"`
}

// gradingRuns are the runs a cell quiz is graded from: lines[N] holds
// the runs of line N of the cell, oldest first: one, or for a repeat:
// quiz at least its K. Round r is the r-th run of every line.
type gradingRuns struct {
	lines  [][]*archive.Run
	unused []unusedRun
}

// rounds returns each round's results, one per line, for as many rounds
// as every line has runs.
func (g *gradingRuns) rounds() [][]json.RawMessage {
	n := -1
	for _, rs := range g.lines {
		if n < 0 || len(rs) < n {
			n = len(rs)
		}
	}
	out := make([][]json.RawMessage, max(n, 0))
	for r := range out {
		out[r] = make([]json.RawMessage, len(g.lines))
		for i, rs := range g.lines {
			out[r][i] = rs[r].Result
		}
	}
	return out
}

// ids returns the graded runs' ids, line by line.
func (g *gradingRuns) ids() []int64 {
	var out []int64
	for _, rs := range g.lines {
		for _, r := range rs {
			out = append(out, r.ID)
		}
	}
	return out
}

// started is when the earliest of the graded runs started.
func (g *gradingRuns) started() time.Time {
	var t time.Time
	for _, rs := range g.lines {
		for _, r := range rs {
			if t.IsZero() || r.Started.Before(t) {
				t = r.Started
			}
		}
	}
	return t
}

// loadRuns reads the runs ids name, each of which must be one this server
// recorded from cell q.Cell of the lesson for browser.
func (s *Server) loadRuns(ctx context.Context, lessonSlug string, q *quiz.Quiz, browser string, ids []int64) ([]*archive.Run, error) {
	first := fmt.Sprintf("run the cell first: this quiz is graded from the runs this server recorded of cell %s for your browser", q.Cell)
	if len(ids) == 0 {
		return nil, &quizError{http.StatusUnprocessableEntity, first}
	}
	if browser == "" {
		return nil, &quizError{http.StatusBadRequest, "browser: missing; the quiz is graded from the runs recorded for the browser that sends it"}
	}
	if err := runq.CheckOrigin("", "", browser); err != nil {
		return nil, &quizError{http.StatusBadRequest, err.Error()}
	}
	if most := s.cfg.MaxLinesPerCell * quiz.MaxRepeat; len(ids) > most {
		return nil, &quizError{http.StatusBadRequest, fmt.Sprintf("run_ids: %d ids; at most %d (%d lines of a cell, %d runs each)", len(ids), most, s.cfg.MaxLinesPerCell, quiz.MaxRepeat)}
	}
	runs := make([]*archive.Run, len(ids))
	for i, id := range ids {
		if slices.Contains(ids[:i], id) {
			return nil, &quizError{http.StatusBadRequest, fmt.Sprintf("run_ids: run %d is given twice; give one run per line of the cell", id)}
		}
		r, err := s.arch.Get(ctx, id)
		if errors.Is(err, archive.ErrNotFound) {
			return nil, &quizError{http.StatusUnprocessableEntity, fmt.Sprintf("run %d is not in this server's archive: %s", id, first)}
		}
		if err != nil {
			return nil, &quizError{http.StatusInternalServerError, fmt.Sprintf("reading run %d from the archive: %v", id, err)}
		}
		if r.Source != "cell" || r.Lesson != lessonSlug || r.Cell != q.Cell || r.Browser != browser {
			return nil, &quizError{http.StatusUnprocessableEntity, fmt.Sprintf("run %d was not recorded from cell %s of lesson %s in this browser: %s", id, q.Cell, lessonSlug, first)}
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

// pickLines places each run at the line of the cell its record names and
// keeps those that may grade q: the lesson's own line (or an edit q
// allows), a line q reads. Every line q reads must be filled, with one
// run, or for a repeat: quiz at least q.Repeat; else the error says which
// is missing and why each run was not used.
func pickLines(l *lesson.Lesson, q *quiz.Quiz, runs []*archive.Run) (*gradingRuns, error) {
	c := l.Cell(q.Cell)
	if c == nil {
		return nil, &quizError{http.StatusInternalServerError, fmt.Sprintf("quiz %s reads cell %s, which lesson %s does not have", q.ID, q.Cell, l.Slug)}
	}
	g := &gradingRuns{lines: make([][]*archive.Run, q.Lines())}
	for _, r := range runs {
		why := ""
		switch {
		case r.Line < 0:
			why = "it was recorded before the server kept which line of the cell a run was: run the cell again"
		case r.Line >= len(g.lines):
			why = fmt.Sprintf("this run is line %d of the cell; the quiz reads lines 1 to %d", r.Line+1, len(g.lines))
		case !lineMayGrade(c, q, r):
			why = editedWhy(q, c.Lines, r)
		case q.Repeat == 0 && len(g.lines[r.Line]) > 0:
			return nil, &quizError{http.StatusBadRequest, fmt.Sprintf("run_ids: runs %d and %d are both line %d of the cell; give one run per line", g.lines[r.Line][0].ID, r.ID, r.Line+1)}
		default:
			g.lines[r.Line] = append(g.lines[r.Line], r)
			continue
		}
		g.unused = append(g.unused, unusedRun{RunID: r.ID, Why: why})
	}
	for i, rs := range g.lines {
		slices.SortFunc(rs, func(a, b *archive.Run) int { return cmp.Compare(a.ID, b.ID) })
		if q.Repeat > 0 && len(rs) > 0 && len(rs) < q.Repeat {
			return nil, &quizError{http.StatusUnprocessableEntity, fmt.Sprintf("quiz %s is graded on %d rounds of cell %s and got %d of line %d: press the cell's Run, which runs the %d rounds", q.ID, q.Repeat, q.Cell, len(rs), i+1, q.Repeat)}
		}
		if len(rs) > 0 {
			continue
		}
		if len(g.unused) == 0 {
			return nil, &quizError{http.StatusUnprocessableEntity, fmt.Sprintf("quiz %s reads line %d of cell %s, and no run sent is that line: run the cell first", q.ID, i+1, q.Cell)}
		}
		return nil, &quizError{http.StatusUnprocessableEntity, notTheLessonsLine(q, c, i, g.unused)}
	}
	return g, nil
}

// notTheLessonsLine is the reply when no run sent is line i of the cell as
// the lesson has it: one short paragraph, however many rounds were sent.
// An edited cell (every unused run a line the quiz does not accept) ends
// "press Reset to grade"; otherwise it names why the first run was not
// used.
func notTheLessonsLine(q *quiz.Quiz, c *lesson.Cell, i int, unused []unusedRun) string {
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

// gradedFrom returns the runs of a cell quiz's request that grade it.
// ok is false when it has replied with an error.
func (s *Server) gradedFrom(w http.ResponseWriter, r *http.Request, l *lesson.Lesson, q *quiz.Quiz, req *quizRequest) (g *gradingRuns, ok bool) {
	runs, err := s.loadRuns(r.Context(), l.Slug, q, req.Browser, req.RunIDs)
	if err == nil {
		g, err = pickLines(l, q, runs)
	}
	if err != nil {
		qe := err.(*quizError)
		web.JSONError(w, qe.code, qe.msg)
		return nil, false
	}
	return g, true
}

// predictFirst checks a run: quiz request's token, ticket, browser id
// and lines (returning the lines' specs, which the measurement runs),
// then stores its answer as a prediction before the measurement is
// queued. The attempt is nil when there was nothing to store it for (no
// browser) or storing failed. ok is false when it has replied with an
// error.
func (s *Server) predictFirst(w http.ResponseWriter, r *http.Request, lessonSlug string, q *quiz.Quiz, req *quizRequest) (a *attempt, specs []*harness.Spec, ok bool) {
	if ok, throttled := s.guard.TokenGuess(guard.RemoteHost(r), req.Token, func() bool { return s.guard.TokenOK(req.Token) }); !ok {
		if throttled != "" {
			web.JSONError(w, http.StatusTooManyRequests, throttled)
			return nil, nil, false
		}
		s.guard.Refused(guard.RemoteHost(r), "POST /api/quiz: no or a wrong token")
		web.JSONError(w, http.StatusForbidden, errTokenRequired.Error())
		return nil, nil, false
	}
	if len(req.Ticket) > maxTicket {
		web.JSONError(w, http.StatusBadRequest, badTicket)
		return nil, nil, false
	}
	if err := runq.CheckOrigin("", "", req.Browser); err != nil {
		web.JSONError(w, http.StatusBadRequest, err.Error())
		return nil, nil, false
	}
	specs, err := s.checkRunLines(q.Run)
	if err != nil {
		web.JSONError(w, http.StatusInternalServerError, measuringError(q.ID, err))
		return nil, nil, false
	}
	if p := s.notePrediction(r.Context(), lessonSlug, q.ID, req.Browser, req.Answer); p != nil {
		a = &attempt{p: p}
	}
	return a, specs, true
}

// notePrediction stores the answer to a run: quiz as a prediction before
// its measurement starts, so the record shows the prediction came first,
// and returns it. A failure is logged, not fatal: the quiz is still
// graded, as an answer. Without a browser id there is nobody to
// attribute it to: nothing is stored.
func (s *Server) notePrediction(ctx context.Context, lessonSlug, quizID, browser, value string) *archive.Prediction {
	if browser == "" {
		return nil
	}
	p := &archive.Prediction{Browser: browser, Lesson: lessonSlug, Quiz: quizID, Value: value, At: time.Now().UTC()}
	if _, err := s.arch.AddPrediction(ctx, p); err != nil {
		s.log.Printf("archive: storing the prediction for quiz %s: %v", quizID, err)
		return nil
	}
	return p
}
