package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"kvlab/internal/archive"
	"kvlab/internal/quiz"
)

// Quizzes graded from the server's record: a quiz that reads a cell is
// graded from runs this server recorded for that lesson, cell and browser.
// The page sends the archive ids of its latest run of the cell, one per
// line (run_ids, from the result messages), never numbers; numbers in
// "results" are refused. Each id must name a run the server recorded from
// that cell of that lesson for that browser.

// errClientNumbers is the reply to a request that carries results.
const errClientNumbers = `results: this server grades quizzes from the runs it recorded itself, not from numbers sent with the answer; send "run_ids" (the run_id of each line's result message) and "browser" instead`

// quizError is an HTTP status with the message the student reads.
type quizError struct {
	code int
	msg  string
}

func (e *quizError) Error() string { return e.msg }

// recordedResults loads the runs a cell quiz is graded from and returns
// their results in the order of ids.
func (s *Server) recordedResults(ctx context.Context, lessonSlug string, q *quiz.Quiz, browser string, ids []int64) ([]json.RawMessage, error) {
	first := fmt.Sprintf("run the cell first: this quiz is graded from the runs this server recorded of cell %s for your browser", q.Cell)
	if len(ids) == 0 {
		return nil, &quizError{http.StatusUnprocessableEntity, first}
	}
	if browser == "" {
		return nil, &quizError{http.StatusBadRequest, "browser: missing; the quiz is graded from the runs recorded for the browser that sends it"}
	}
	if err := checkOrigin("", "", browser); err != nil {
		return nil, &quizError{http.StatusBadRequest, err.Error()}
	}
	if len(ids) > s.cfg.MaxLinesPerCell {
		return nil, &quizError{http.StatusBadRequest, fmt.Sprintf("run_ids: %d ids; a cell has at most %d lines", len(ids), s.cfg.MaxLinesPerCell)}
	}
	out := make([]json.RawMessage, len(ids))
	for i, id := range ids {
		for _, prev := range ids[:i] {
			if prev == id {
				return nil, &quizError{http.StatusBadRequest, fmt.Sprintf("run_ids: run %d is given twice; give one run per line of the cell", id)}
			}
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
		out[i] = r.Result
	}
	return out, nil
}

// gradedFrom returns the results a quiz is graded from and their run ids:
// for a cell quiz, the recorded runs the request names. It refuses numbers
// sent by the client. ok is false when it has replied with an error.
func (s *Server) gradedFrom(w http.ResponseWriter, r *http.Request, lessonSlug string, q *quiz.Quiz, req *quizRequest) (raw []json.RawMessage, ids []int64, ok bool) {
	if len(req.Results) > 0 {
		jsonError(w, http.StatusBadRequest, errClientNumbers)
		return nil, nil, false
	}
	if q.Cell == "" {
		return nil, nil, true
	}
	raw, err := s.recordedResults(r.Context(), lessonSlug, q, req.Browser, req.RunIDs)
	if err != nil {
		qe := err.(*quizError)
		jsonError(w, qe.code, qe.msg)
		return nil, nil, false
	}
	return raw, req.RunIDs, true
}

// predictFirst checks a run: quiz request's browser id and lines, then
// stores its answer as a prediction before the measurement is queued.
// It returns false when it has replied with an error.
func (s *Server) predictFirst(w http.ResponseWriter, r *http.Request, lessonSlug string, q *quiz.Quiz, req *quizRequest) bool {
	if err := checkOrigin("", "", req.Browser); err != nil {
		jsonError(w, http.StatusBadRequest, err.Error())
		return false
	}
	if err := s.checkRunLines(q.Run); err != nil {
		jsonError(w, http.StatusInternalServerError, measuringError(q.ID, err))
		return false
	}
	s.notePrediction(r.Context(), lessonSlug, q.ID, req.Browser, req.Answer)
	return true
}

// notePrediction stores the answer to a run: quiz as a prediction before
// its measurement starts, so the record shows the prediction came first.
// A failure is logged, not fatal: the quiz is still graded.
// Without a browser id there is nobody to attribute it to: nothing is stored.
func (s *Server) notePrediction(ctx context.Context, lessonSlug, quizID, browser, value string) {
	if browser == "" {
		return
	}
	p := &archive.Prediction{Browser: browser, Lesson: lessonSlug, Quiz: quizID, Value: value}
	if _, err := s.arch.AddPrediction(ctx, p); err != nil {
		s.log.Printf("archive: storing the prediction for quiz %s: %v", quizID, err)
	}
}
