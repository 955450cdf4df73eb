package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"kvlab/harness"
	"kvlab/internal/archive"
	"kvlab/internal/grade"
	"kvlab/internal/lesson"
	"kvlab/internal/quiz"
	"kvlab/internal/server/guard"
	"kvlab/internal/server/run"
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
// prediction that may grade it (grade.FirstAfter), not against the runs
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
func (qa *quizAPI) predictionAttempt(w http.ResponseWriter, ctx context.Context, l *lesson.Lesson, q *quiz.Quiz, req *quizRequest) (a *attempt, g *grade.Runs, ok bool) {
	if req.Browser == "" || run.CheckOrigin("", "", req.Browser) != nil {
		return nil, nil, true // grade.Load says what is wrong with it
	}
	all, err := qa.s.arch.Predictions(ctx, req.Browser, q.ID)
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
		if grade.SameAnswer(q, mine[i].Value, req.Answer) {
			a = &attempt{p: &mine[i], n: i + 1, count: len(mine)}
			break
		}
	}
	if a == nil || a.p.Verdict != nil {
		return a, nil, true
	}
	g, err = grade.FirstAfter(ctx, qa.s.arch, l, q, req.Browser, a.p.At)
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

// predictFirst checks a run: quiz request's token, ticket, browser id
// and lines (returning the lines' specs, which the measurement runs),
// then stores its answer as a prediction before the measurement is
// queued. The attempt is nil when there was nothing to store it for (no
// browser) or storing failed. ok is false when it has replied with an
// error.
func (qa *quizAPI) predictFirst(w http.ResponseWriter, r *http.Request, lessonSlug string, q *quiz.Quiz, req *quizRequest) (a *attempt, specs []*harness.Spec, ok bool) {
	s := qa.s
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
	if err := run.CheckOrigin("", "", req.Browser); err != nil {
		web.JSONError(w, http.StatusBadRequest, err.Error())
		return nil, nil, false
	}
	specs, err := s.checkRunLines(q.Run)
	if err != nil {
		web.JSONError(w, http.StatusInternalServerError, measuringError(q.ID, err))
		return nil, nil, false
	}
	if p := qa.notePrediction(r.Context(), lessonSlug, q.ID, req.Browser, req.Answer); p != nil {
		a = &attempt{p: p}
	}
	return a, specs, true
}

// notePrediction stores the answer to a run: quiz as a prediction before
// its measurement starts, so the record shows the prediction came first,
// and returns it. A failure is logged, not fatal: the quiz is still
// graded, as an answer. Without a browser id there is nobody to
// attribute it to: nothing is stored.
func (qa *quizAPI) notePrediction(ctx context.Context, lessonSlug, quizID, browser, value string) *archive.Prediction {
	if browser == "" {
		return nil
	}
	p := &archive.Prediction{Browser: browser, Lesson: lessonSlug, Quiz: quizID, Value: value, At: time.Now().UTC()}
	if _, err := qa.s.arch.AddPrediction(ctx, p); err != nil {
		qa.s.log.Printf("archive: storing the prediction for quiz %s: %v", quizID, err)
		return nil
	}
	return p
}

// keepVerdict stores reply as the attempt's verdict unless it has one,
// and returns the reply the attempt keeps. A failure to store is logged:
// the reader still gets this grade.
func (qa *quizAPI) keepVerdict(ctx context.Context, a *attempt, reply quizReply) quizReply {
	b, err := json.Marshal(reply)
	if err != nil {
		return reply
	}
	kept, err := qa.s.arch.SetVerdict(ctx, a.p.ID, b)
	if err != nil {
		qa.s.log.Printf("archive: keeping the verdict of prediction %d: %v", a.p.ID, err)
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
