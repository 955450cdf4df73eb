package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"kvlab/internal/archive"
	"kvlab/internal/lesson"
	"kvlab/internal/quiz"
	"kvlab/internal/server/runq"
	"kvlab/internal/server/web"
)

// Predictions, graded once. A quiz's answer counts as a prediction only
// when the server stored it (POST /api/predict, or a run: quiz's own
// request) before the run that grades it started, by the archive's own
// times: Prediction.At, taken when the server accepted the prediction,
// against Run.Started. What the client says ("prediction": true) decides
// nothing.
//
// A predict: yes quiz's answer that is one of the browser's stored
// predictions for it (the latest with that value) is graded against, for
// each line the quiz reads, the first run of that line after the
// prediction that may grade it (pickLines' rules), not against the runs
// the request names; the verdict is kept with the prediction
// (archive.SetVerdict) and every later request for it gets the kept
// verdict back: a later run does not re-grade it. A new prediction is a
// new attempt. An answer that was not stored before a run is graded from
// the request's runs as an answer, with "timing": "answered after the
// result".

// Reply timings (quizReply.Timing).
const (
	timingPredicted = "predicted before the run"
	timingAfter     = "answered after the result"
)

// attempt is a prediction being graded: the stored prediction, its
// 1-based number among the browser's predictions for the quiz, and how
// many there are.
type attempt struct {
	p        *archive.Prediction
	n, count int
}

// predictionAttempt finds the stored prediction a predict: yes quiz's
// answer is, and the runs that grade it. It returns a nil attempt when
// the answer is no stored prediction, or when no run after it may grade
// it but the request names runs (graded then as an answer after the
// result); g is nil when the attempt already has its verdict. ok is false
// when it has replied with an error.
func (s *Server) predictionAttempt(w http.ResponseWriter, ctx context.Context, l *lesson.Lesson, q *quiz.Quiz, req *quizRequest) (a *attempt, g *gradingRuns, ok bool) {
	if req.Browser == "" || runq.CheckOrigin("", "", req.Browser) != nil {
		return nil, nil, true // loadRuns says what is wrong with it
	}
	all, err := s.arch.Predictions(ctx, req.Browser, q.ID)
	if err != nil {
		web.JSONError(w, http.StatusInternalServerError, "reading your predictions: "+err.Error())
		return nil, nil, false
	}
	var mine []archive.Prediction
	for _, p := range all {
		if p.Lesson == l.Slug {
			mine = append(mine, p)
		}
	}
	for i := len(mine) - 1; i >= 0; i-- {
		if sameAnswer(q, mine[i].Value, req.Answer) {
			a = &attempt{p: &mine[i], n: i + 1, count: len(mine)}
			break
		}
	}
	if a == nil || a.p.Verdict != nil {
		return a, nil, true
	}
	g, err = s.firstRunsAfter(ctx, l, q, req.Browser, a.p.At)
	if err != nil {
		web.JSONError(w, http.StatusInternalServerError, err.Error())
		return nil, nil, false
	}
	if g != nil {
		return a, g, true
	}
	if len(req.RunIDs) == 0 {
		web.JSONError(w, http.StatusUnprocessableEntity, fmt.Sprintf("your prediction %s (attempt %d) is graded by the first run of cell %s after it: run the cell", a.p.Value, a.n, q.Cell))
		return nil, nil, false
	}
	return nil, nil, true
}

// firstRunsAfter returns, for each line q reads, the first run of that
// line of q's cell recorded for browser that started after at and may
// grade q (pickLines), or the first q.Repeat of them for a repeat: quiz;
// nil when some line has not that many yet.
func (s *Server) firstRunsAfter(ctx context.Context, l *lesson.Lesson, q *quiz.Quiz, browser string, at time.Time) (*gradingRuns, error) {
	c := l.Cell(q.Cell)
	if c == nil {
		return nil, fmt.Errorf("quiz %s reads cell %s, which lesson %s does not have", q.ID, q.Cell, l.Slug)
	}
	runs, err := s.arch.List(ctx, archive.Query{Lesson: l.Slug, Cell: q.Cell, Browser: browser, Source: "cell",
		StartedAfter: at, Oldest: true, Limit: archive.MaxLimit})
	if err != nil {
		return nil, fmt.Errorf("reading the runs after your prediction: %w", err)
	}
	need := max(q.Repeat, 1)
	g := &gradingRuns{lines: make([][]*archive.Run, q.Lines())}
	missing := len(g.lines) * need
	for i := range runs {
		r := &runs[i]
		if r.Line < 0 || r.Line >= len(g.lines) || len(g.lines[r.Line]) == need || !lineMayGrade(c, q, r) {
			continue
		}
		g.lines[r.Line] = append(g.lines[r.Line], r)
		if missing--; missing == 0 {
			return g, nil
		}
	}
	return nil, nil
}

// sameAnswer reports whether two answers to q say the same: equal
// numbers for a numeric quiz ("0.95" and "0,95"), the same text up to
// case and spaces for a choice quiz.
func sameAnswer(q *quiz.Quiz, a, b string) bool {
	if q.Choices == nil {
		x, errA := quiz.ParseNumber(a, q.Unit)
		y, errB := quiz.ParseNumber(b, q.Unit)
		return errA == nil && errB == nil && x == y
	}
	return strings.EqualFold(strings.TrimSpace(a), strings.TrimSpace(b))
}

// keepVerdict stores reply as the attempt's verdict unless it has one,
// and returns the reply the attempt keeps. A failure to store is logged:
// the reader still gets this grade.
func (s *Server) keepVerdict(ctx context.Context, a *attempt, reply quizReply) quizReply {
	b, err := json.Marshal(reply)
	if err != nil {
		return reply
	}
	kept, err := s.arch.SetVerdict(ctx, a.p.ID, b)
	if err != nil {
		s.log.Printf("archive: keeping the verdict of prediction %d: %v", a.p.ID, err)
		return reply
	}
	// Another request may have graded the attempt first: its verdict stands.
	return a.kept(kept, reply, !bytes.Equal(kept, b))
}

// kept is the reply for an attempt from its kept verdict, with the
// attempt counts of now and "kept" set when the verdict was given
// before; fallback when the verdict does not decode.
func (a *attempt) kept(verdict json.RawMessage, fallback quizReply, before bool) quizReply {
	var r quizReply
	if err := json.Unmarshal(verdict, &r); err != nil {
		return fallback
	}
	r.Attempt, r.Attempts, r.PredictionID, r.Kept = a.n, a.count, a.p.ID, before
	return r
}
