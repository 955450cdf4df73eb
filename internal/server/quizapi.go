package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"kvlab/harness"
	"kvlab/internal/lesson"
	"kvlab/internal/quiz"
	"kvlab/internal/server/guard"
	"kvlab/internal/server/runq"
	"kvlab/internal/server/web"
)

// POST /api/quiz checks one answer. Request:
//
//	{"lesson":"04-the-fsync-tax","quiz":"flush-vs-write","answer":"120",
//	 "prediction":true, "browser":"...", "run_ids":[17, 18],
//	 "token":"...", "ticket":"..."}
//
// "prediction" (optional) is accepted and decides nothing: whether the
// answer was a prediction is read off the archive's times (quizpredict.go),
// and a prediction is graded once, by the first runs after it.
//
// A cell quiz is graded from the runs the server recorded (quizrecord.go),
// each read as the line of the lesson's cell its record names: the
// request names them by "run_ids" with its "browser"; "results"
// (numbers sent by the client) are refused. A quiz with run: lines
// measures its lines through the run queue instead (so it waits its turn,
// and needs the token when one is set), after storing its answer as a
// prediction. Reply: quiz.Feedback
// as JSON plus "explain_html", or {"error":"..."} with status 400 (bad
// request or answer), 403 (origin or token), 404 (no such quiz), 408 (the
// body came too slowly), 413 (the body is too large), 422 (the results
// cannot answer the quiz), 500 (the measurement failed) or 503
// (the server is shutting down); 429 when maxQuizRuns quiz measurements
// are already waiting, or when the run queue holds its most waiting runs
// (Server.maxWaiting, shared with the websocket's cells).
//
// A reply cannot stream, so a run: quiz's place in the queue is asked for
// beside it: the page picks a random "ticket" (1 to 128 characters) for
// the request and, while it waits, polls
//
//	GET /api/quiz/queue?ticket=...
//
// which answers {"position":2} (runs ahead, the running one included, as
// the websocket's queued message counts them), {"position":0,"running":true}
// once the quiz's run holds the disk, or 404 when no run has the ticket
// (not yet queued, or finished). The ticket is only a name for the
// request: knowing one tells its place in the queue and nothing more.

type quizRequest struct {
	Lesson  string            `json:"lesson"`
	Quiz    string            `json:"quiz"`
	Answer  string            `json:"answer"`
	Results []json.RawMessage `json:"results"`
	Token   string            `json:"token,omitempty"`
	Ticket  string            `json:"ticket,omitempty"` // names the request for GET /api/quiz/queue
	// Prediction is what older pages send for a predict: yes quiz. It is
	// decoded and ignored: the archive's times decide (quizpredict.go).
	Prediction bool `json:"prediction,omitempty"`
	// Browser and RunIDs name the recorded runs a cell quiz is graded
	// from (see quizrecord.go); Results is refused.
	Browser string  `json:"browser,omitempty"`
	RunIDs  []int64 `json:"run_ids,omitempty"`
}

type quizReply struct {
	quiz.Feedback
	ExplainHTML string            `json:"explain_html,omitempty"`
	Measured    []json.RawMessage `json:"measured,omitempty"` // results of run: lines
	RunIDs      []int64           `json:"run_ids,omitempty"`  // the archived runs the answer was graded from, line by line
	Unused      []unusedRun       `json:"unused,omitempty"`   // runs the request named that graded nothing, and why
	// Timing says whether the answer was stored before the graded runs
	// started (timingPredicted) or not (timingAfter); see quizpredict.go.
	Timing string `json:"timing"`
	// A graded prediction: its archive id, its number among the
	// browser's predictions for the quiz and how many there are, and
	// whether this verdict was given before and is kept (not re-graded).
	PredictionID int64 `json:"prediction_id,omitempty"`
	Attempt      int   `json:"attempt,omitempty"`
	Attempts     int   `json:"attempts,omitempty"`
	Kept         bool  `json:"kept,omitempty"`
}

// handleQuiz answers POST /api/quiz: read the request, find the quiz,
// check the answer's form, gather the runs it is graded from (a
// prediction's first runs after it, the request's recorded runs, or a
// run: quiz's own measurement), then grade it, once for a prediction
// (quizpredict.go).
func (s *Server) handleQuiz(w http.ResponseWriter, r *http.Request) {
	if !s.apiAccessOK(w, r) {
		return
	}
	rc := http.NewResponseController(w)
	req, ok := s.readQuizRequest(w, r, rc)
	if !ok {
		return
	}
	l, q := s.quizFor(w, req.Lesson, req.Quiz)
	if q == nil {
		return
	}
	// Check the answer's form before measuring anything.
	if !answerFormOK(w, q, req.Answer) {
		return
	}
	if len(req.Results) > 0 {
		web.JSONError(w, http.StatusBadRequest, errClientNumbers)
		return
	}
	var a *attempt
	var g *gradingRuns
	if q.Predict && q.Cell != "" {
		if a, g, ok = s.predictionAttempt(w, r.Context(), l, q, &req); !ok {
			return
		}
		if a != nil && a.p.Verdict != nil {
			// Graded before: the kept verdict, not a new grade.
			writeReply(w, q, a.kept(a.p.Verdict, quizReply{}, true))
			return
		}
	}
	if g == nil && q.Cell != "" {
		if g, ok = s.gradedFrom(w, r, l, q, &req); !ok {
			return
		}
	}
	reply := quizReply{}
	var rounds [][]json.RawMessage
	var started time.Time
	if g != nil {
		rounds, reply.RunIDs, reply.Unused, started = g.rounds(), g.ids(), g.unused, g.started()
	}
	if q.Run != nil {
		var specs []*harness.Spec // q.Run parsed once, by predictFirst's check
		if a, specs, ok = s.predictFirst(w, r, l.Slug, q, &req); !ok {
			return
		}
		if reply.Measured, reply.RunIDs, started, ok = s.measureQuiz(w, r, rc, l.Slug, q, specs, &req); !ok {
			return
		}
		rounds = [][]json.RawMessage{reply.Measured}
	}
	// The answer is a prediction only when it was stored before the
	// graded runs started.
	if a != nil && !a.p.At.Before(started) {
		a = nil
	}
	reply.Timing = timingAfter
	if a != nil {
		reply.Timing, reply.PredictionID, reply.Attempt, reply.Attempts = timingPredicted, a.p.ID, a.n, a.count
	}
	// Building the results and checking them is the costly part: only
	// quizCheckSlots requests do it at once.
	release, ok := s.takeCheckSlot(w, r)
	if !ok {
		return
	}
	defer release()
	if reply, ok = s.grade(w, q, req.Answer, rounds, reply); !ok {
		return
	}
	if a != nil {
		reply = s.keepVerdict(r.Context(), a, reply)
	}
	writeReply(w, q, reply)
}

// readQuizRequest reads and decodes the request body under its size cap
// and a deadline (s.bodyWait), which it lifts once the body is read,
// since measuring may wait long. ok is false when it has replied with an
// error: 413, 408 or 400.
func (s *Server) readQuizRequest(w http.ResponseWriter, r *http.Request, rc *http.ResponseController) (req quizRequest, ok bool) {
	limit := quizBodyLimit(s.cfg.MaxMessageBytes)
	body := http.MaxBytesReader(w, r.Body, limit)
	// A body that trickles in must not hold a goroutine forever.
	rc.SetReadDeadline(time.Now().Add(s.bodyWait))
	req, unread, err := decodeQuizRequest(body, s.cfg.MaxLinesPerCell, s.quizResultsWanted)
	if unread {
		w.Header().Set("Connection", "close") // the rest of the body is not wanted
	}
	if err != nil {
		w.Header().Set("Connection", "close") // do not wait for the rest of the body
		var tooBig *http.MaxBytesError
		var ne net.Error
		switch {
		case errors.As(err, &tooBig):
			web.JSONError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request larger than %d bytes", limit))
		case errors.As(err, &ne) && ne.Timeout():
			web.JSONError(w, http.StatusRequestTimeout, fmt.Sprintf("the request body took longer than %v to arrive", s.bodyWait))
		default:
			web.JSONError(w, http.StatusBadRequest, "malformed request: "+err.Error()+` (want {"lesson":"...","quiz":"...","answer":"...","browser":"...","run_ids":[...]})`)
		}
		return req, false
	}
	rc.SetReadDeadline(time.Time{})
	return req, true
}

// answerFormOK checks that the answer is a number in the quiz's unit, or
// that a choice was picked, and replies 400 when it is not.
func answerFormOK(w http.ResponseWriter, q *quiz.Quiz, answer string) bool {
	if q.Choices == nil {
		if _, err := quiz.ParseNumber(answer, q.Unit); err != nil {
			web.JSONError(w, http.StatusBadRequest, answerError(err))
			return false
		}
	} else if answer == "" {
		web.JSONError(w, http.StatusBadRequest, "pick one of the choices")
		return false
	}
	return true
}

// measureQuiz runs a run: quiz's lines, parsed as specs, through the run
// queue (its token, ticket and lines checked by predictFirst). It returns the results, their
// archive ids and when the first line started; ok is false when it has
// replied with an error (see measureStatus).
func (s *Server) measureQuiz(w http.ResponseWriter, r *http.Request, rc *http.ResponseController, lessonSlug string, q *quiz.Quiz, specs []*harness.Spec, req *quizRequest) (raw []json.RawMessage, ids []int64, started time.Time, ok bool) {
	// The measurement waits its turn, maybe for minutes: no write
	// deadline until it is done.
	rc.SetWriteDeadline(time.Time{})
	from := runq.Origin{Source: "quiz", Lesson: lessonSlug, Quiz: q.ID, Browser: req.Browser}
	raw, ids, started, err := s.measure(r.Context(), guard.RemoteHost(r), q.ID, req.Ticket, q.Run, specs, from)
	rc.SetWriteDeadline(time.Now().Add(s.writeTimeout))
	if err != nil {
		web.JSONError(w, measureStatus(err), measuringError(q.ID, err))
		return nil, nil, time.Time{}, false
	}
	return raw, ids, started, true
}

// measureStatus is the reply's status for a failed measurement: 503 when
// the server is shutting down, 429 when a cap on waiting runs was reached,
// else 500.
func measureStatus(err error) int {
	switch {
	case errors.Is(err, runq.ErrShuttingDown):
		return http.StatusServiceUnavailable
	case errors.Is(err, errQuizBusy), errors.As(err, new(*runq.QueueFullError)), errors.As(err, new(*guard.AddrFullError)):
		return http.StatusTooManyRequests
	}
	return http.StatusInternalServerError
}

// takeCheckSlot waits up to quizSlotWait for one of the quizCheckSlots and
// returns the function that gives it back. ok is false when the request
// ended first, or when it has replied 429.
func (s *Server) takeCheckSlot(w http.ResponseWriter, r *http.Request) (release func(), ok bool) {
	select {
	case s.quizSlots <- struct{}{}:
		return func() { <-s.quizSlots }, true
	case <-time.After(quizSlotWait):
		s.guard.Refused(guard.RemoteHost(r), "POST /api/quiz: every quiz check slot is taken")
		web.JSONError(w, http.StatusTooManyRequests, fmt.Sprintf("%d quiz answers are being checked already, the most at once: try again in a moment", cap(s.quizSlots)))
		return nil, false
	case <-r.Context().Done():
		return nil, false
	}
}

// grade decodes the results of each round (one, or a repeat: quiz's runs)
// and checks the answer against them, filling reply (which carries the
// measured results, run ids and timing) with the feedback. ok is false
// when it has replied with an error: 400 for a bad result or answer, 422
// when the results cannot answer the quiz.
func (s *Server) grade(w http.ResponseWriter, q *quiz.Quiz, answer string, rounds [][]json.RawMessage, reply quizReply) (quizReply, bool) {
	results := make([][]any, len(rounds))
	for r, raw := range rounds {
		results[r] = make([]any, len(raw))
		for i, m := range raw {
			if len(m) == 0 || bytes.Equal(m, []byte("null")) {
				continue
			}
			if err := json.Unmarshal(m, &results[r][i]); err != nil {
				web.JSONError(w, http.StatusBadRequest, fmt.Sprintf("results[%d]: %v", i, err))
				return reply, false
			}
		}
	}
	fb, err := quiz.CheckRepeated(q, results, answer)
	if err != nil {
		code, msg := http.StatusUnprocessableEntity, err.Error()
		if errors.Is(err, quiz.ErrBadAnswer) {
			code, msg = http.StatusBadRequest, answerError(err)
		}
		web.JSONError(w, code, msg)
		return reply, false
	}
	fb.Predicted = reply.Timing == timingPredicted
	reply.Feedback, reply.ExplainHTML = fb, web.InlineMarkdown(q.Explain)
	return reply, true
}

// writeReply sends a quiz's reply as JSON.
func writeReply(w http.ResponseWriter, q *quiz.Quiz, reply quizReply) {
	b, err := json.Marshal(reply)
	if err != nil {
		web.JSONError(w, http.StatusInternalServerError, "quiz "+q.ID+": the feedback does not encode as JSON: "+err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(append(b, '\n'))
}

// quizBodyLimit is the largest POST /api/quiz body: 4 websocket messages
// (256 KiB by default). A real request carries the results of one cell;
// the largest single result the server can produce measured 15,030 bytes
// (bench -workload mixed -duration 30s -rate 1000, the longest run with
// the most fields: both latency tables and 30 timeline points), so the
// default fits 16 such lines, the most a cell may have, and the lessons'
// quiz cells need under 30 KiB.
func quizBodyLimit(maxMessage int64) int64 { return 4 * maxMessage }

// quizCheckSlots is how many quiz answers are decoded into values and
// checked at once; a request that finds them all taken waits up to
// quizSlotWait, then gets 429.
const (
	quizCheckSlots = 4
	quizSlotWait   = 5 * time.Second
)

// quizResultsWanted is how many results a quiz reads: the lines of its
// cell (at least as many as its answer names), none for a run: quiz,
// which measures its own. An unknown lesson or quiz wants none: the
// request is refused once decoded.
func (s *Server) quizResultsWanted(lessonSlug, quizID string) int {
	l, _, _, err := s.findLesson(lessonSlug)
	if err != nil || l == nil {
		return 0
	}
	q := l.Quiz(quizID)
	if q == nil || q.Run != nil {
		return 0
	}
	n := q.Lines()
	if c := l.Cell(q.Cell); c != nil {
		n = max(n, len(c.Lines))
	}
	return n
}

// A ticket is 1 to maxTicket bytes; badTicket is the reply to any other.
const (
	maxTicket = 128
	badTicket = "ticket: must be 1 to 128 characters"
)

type placeReply struct {
	Position int  `json:"position"`
	Running  bool `json:"running,omitempty"`
}

// handleQuizQueue answers GET /api/quiz/queue?ticket=...: the place of the
// run: quiz measurement holding that ticket.
func (s *Server) handleQuizQueue(w http.ResponseWriter, r *http.Request) {
	ticket := r.URL.Query().Get("ticket")
	if ticket == "" || len(ticket) > maxTicket {
		web.JSONError(w, http.StatusBadRequest, badTicket)
		return
	}
	pos, running, ok := s.runs.PlaceOf(ticket)
	if !ok {
		web.JSONError(w, http.StatusNotFound, "no quiz measurement with this ticket is queued or running")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	json.NewEncoder(w).Encode(placeReply{Position: pos, Running: running})
}

// measure runs lines (their specs as checkRunLines returned them)
// through the queue and waits for the results. ticket, when not "", lets
// GET /api/quiz/queue find the job. It returns the results, their archive
// ids (0 where not recorded) and when the first line started.
func (s *Server) measure(ctx context.Context, addr, id, ticket string, lines []string, specs []*harness.Spec, from runq.Origin) ([]json.RawMessage, []int64, time.Time, error) {
	if s.quizRuns.Add(1) > maxQuizRuns {
		s.quizRuns.Add(-1)
		return nil, nil, time.Time{}, errQuizBusy
	}
	defer s.quizRuns.Add(-1)
	release, err := s.guard.HoldAddr(addr)
	if err != nil {
		s.guard.Refused(addr, err.Error())
		return nil, nil, time.Time{}, err
	}
	j := runq.NewJob(s.ctx)
	defer s.runs.Cancel(j) // a finished job's cancel only frees its context
	j.ID, j.Ticket, j.Lines, j.Specs, j.Out, j.Class, j.Release, j.From = "quiz:"+id, ticket, lines, specs, runq.Discard{}, runq.Cell, release, from
	if err := s.runs.Submit(j); err != nil {
		return nil, nil, time.Time{}, err
	}
	select {
	case <-j.Done():
	case <-ctx.Done():
		s.runs.Cancel(j)
		<-j.Done()
		return nil, nil, time.Time{}, ctx.Err()
	}
	if j.Err() != nil {
		return nil, nil, time.Time{}, j.Err()
	}
	if len(j.Results()) != len(lines) {
		return nil, nil, time.Time{}, errRunCancelled
	}
	return j.Results(), j.RunIDs(), j.Started(), nil
}

// maxQuizRuns caps the run: quizzes queued or running at once, over all
// askers: websocket clients have a per-client cap, and this is the one
// for requests, which have no identity to count by.
const maxQuizRuns = 8

// answerError is the message for an answer that is not a number or not a
// choice. The student reads it under the quiz, so it says what to fix
// without the package's prefix.
func answerError(err error) string {
	return "Your answer " + strings.TrimPrefix(err.Error(), quiz.ErrBadAnswer.Error()+": ")
}

// quizFor finds a lesson's quiz for a JSON endpoint, or writes the error
// reply (404 for an unknown lesson or quiz) and returns a nil quiz.
func (s *Server) quizFor(w http.ResponseWriter, slug, id string) (*lesson.Lesson, *quiz.Quiz) {
	l, _, _, err := s.findLesson(slug)
	if err != nil {
		web.JSONError(w, http.StatusInternalServerError, err.Error())
		return nil, nil
	}
	if l == nil {
		web.JSONError(w, http.StatusNotFound, fmt.Sprintf("no lesson %q", slug))
		return nil, nil
	}
	q := l.Quiz(id)
	if q == nil {
		web.JSONError(w, http.StatusNotFound, fmt.Sprintf("lesson %s has no quiz %q", l.Slug, id))
		return nil, nil
	}
	return l, q
}
