package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"kvlab/harness"
	"kvlab/internal/grade"
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
// A cell quiz is graded from the runs the server recorded (package
// grade: Load, Pick), each read as the line of the lesson's cell its
// record names: the request names them by "run_ids" with its "browser";
// a request with "results" (numbers sent by the client) is refused. A quiz with run: lines
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
	Lesson string `json:"lesson"`
	Quiz   string `json:"quiz"`
	Answer string `json:"answer"`
	// Results is refused: decoding it fails with errClientNumbers.
	Results clientResults `json:"results"`
	Token   string        `json:"token,omitempty"`
	Ticket  string        `json:"ticket,omitempty"` // names the request for GET /api/quiz/queue
	// Prediction is what older pages send for a predict: yes quiz. It is
	// decoded and ignored: the archive's times decide (quizpredict.go).
	Prediction bool `json:"prediction,omitempty"`
	// Browser and RunIDs name the recorded runs a cell quiz is graded
	// from (grade.Load).
	Browser string  `json:"browser,omitempty"`
	RunIDs  []int64 `json:"run_ids,omitempty"`
}

type quizReply struct {
	quiz.Feedback
	ExplainHTML string            `json:"explain_html,omitempty"`
	Measured    []json.RawMessage `json:"measured,omitempty"` // results of run: lines
	RunIDs      []int64           `json:"run_ids,omitempty"`  // the archived runs the answer was graded from, line by line
	Unused      []grade.Unused    `json:"unused,omitempty"`   // runs the request named that graded nothing, and why
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

// quizAPI answers POST /api/quiz, GET /api/quiz/queue and POST
// /api/predict: it finds the quiz, gathers the runs an answer is graded
// from (recorded ones, a prediction's first runs after it, or a run:
// quiz's own measurement) and hands them to grade.Grade; the replies and
// their statuses are its own. It is safe for concurrent use.
type quizAPI struct {
	s *Server // the lessons, guard, archive, runner and write gate it answers with

	slots   chan struct{} // one token per quiz answer being checked (quizCheckSlots)
	running atomic.Int32  // run: quizzes queued or running (maxQuizRuns)
	// bodyWait bounds the time to read a request's body.
	bodyWait time.Duration
}

func newQuizAPI(s *Server) *quizAPI {
	return &quizAPI{s: s, slots: make(chan struct{}, quizCheckSlots), bodyWait: 30 * time.Second}
}

// route adds the quiz API's routes to mux.
func (a *quizAPI) route(mux *http.ServeMux) {
	mux.HandleFunc("POST /api/quiz", a.handleQuiz)
	mux.HandleFunc("GET /api/quiz/queue", a.handleQueue)
	mux.HandleFunc("POST /api/predict", a.handlePredict)
}

// clientResults is the request's "results": numbers sent by the client,
// which this server does not grade from. Decoding any refuses the request
// (null and [], which send none, pass).
type clientResults struct{}

func (*clientResults) UnmarshalJSON(b []byte) error {
	if t := strings.Join(strings.Fields(string(b)), ""); t == "null" || t == "[]" {
		return nil
	}
	return errors.New(errClientNumbers)
}

// errClientNumbers is the reply to a request that carries results.
const errClientNumbers = `results: this server grades quizzes from the runs it recorded itself, not from numbers sent with the answer; send "run_ids" (the run_id of each line's result message) and "browser" instead`

// gradeStatus is the reply's status for an error of package grade.
func gradeStatus(err error) int {
	switch grade.KindOf(err) {
	case grade.BadAnswer, grade.BadRequest:
		return http.StatusBadRequest
	case grade.Ungradable:
		return http.StatusUnprocessableEntity
	}
	return http.StatusInternalServerError
}

// gradeError replies with an error of package grade.
func gradeError(w http.ResponseWriter, err error) {
	web.JSONError(w, gradeStatus(err), err.Error())
}

// handleQuiz answers POST /api/quiz: read the request, find the quiz,
// check the answer's form, gather the runs it is graded from (a
// prediction's first runs after it, the request's recorded runs, or a
// run: quiz's own measurement), then grade it, once for a prediction
// (quizpredict.go).
func (a *quizAPI) handleQuiz(w http.ResponseWriter, r *http.Request) {
	if !apiAccessOK(a.s.guard, w, r) {
		return
	}
	rc := http.NewResponseController(w)
	req, ok := a.readRequest(w, r, rc)
	if !ok {
		return
	}
	l, q := a.quizFor(w, req.Lesson, req.Quiz)
	if q == nil {
		return
	}
	// Check the answer's form before measuring anything.
	if err := grade.CheckAnswer(q, req.Answer); err != nil {
		gradeError(w, err)
		return
	}
	var at *attempt
	var g *grade.Runs
	if q.Predict && q.Cell != "" {
		if at, g, ok = a.predictionAttempt(w, r.Context(), l, q, &req); !ok {
			return
		}
		if at != nil && at.p.Verdict != nil {
			// Graded before: the kept verdict, not a new grade.
			writeReply(w, q, at.kept(at.p.Verdict, quizReply{}, true))
			return
		}
	}
	if g == nil && q.Cell != "" {
		runs, err := grade.Load(r.Context(), a.s.arch, l.Slug, q, req.Browser, req.RunIDs, a.s.cfg.MaxLinesPerCell)
		if err == nil {
			g, err = grade.Pick(l, q, runs)
		}
		if err != nil {
			gradeError(w, err)
			return
		}
	}
	reply := quizReply{}
	var rounds [][]json.RawMessage
	var started time.Time
	if g != nil {
		rounds, reply.RunIDs, reply.Unused, started = g.Rounds(), g.IDs(), g.Unused, g.Started()
	}
	if q.Run != nil {
		var specs []*harness.Spec // q.Run parsed once, by predictFirst's check
		if at, specs, ok = a.predictFirst(w, r, l.Slug, q, &req); !ok {
			return
		}
		if reply.Measured, reply.RunIDs, started, ok = a.measureQuiz(w, r, rc, l.Slug, q, specs, &req); !ok {
			return
		}
		rounds = [][]json.RawMessage{reply.Measured}
	}
	// The answer is a prediction only when it was stored before the
	// graded runs started.
	if at != nil && !at.p.At.Before(started) {
		at = nil
	}
	reply.Timing = timingAfter
	if at != nil {
		reply.Timing, reply.PredictionID, reply.Attempt, reply.Attempts = timingPredicted, at.p.ID, at.n, at.count
	}
	// Building the results and checking them is the costly part: only
	// quizCheckSlots requests do it at once.
	release, ok := a.takeSlot(w, r)
	if !ok {
		return
	}
	defer release()
	// A prediction is not graded on a busy machine's runs (package
	// grade); an answer after the result is.
	fb, err := grade.Grade(q, req.Answer, rounds, reply.Timing == timingPredicted)
	if err != nil {
		gradeError(w, err)
		return
	}
	fb.Predicted = reply.Timing == timingPredicted
	reply.Feedback, reply.ExplainHTML = fb, web.InlineMarkdown(q.Explain)
	if at != nil {
		reply = a.keepVerdict(r.Context(), at, reply)
	}
	writeReply(w, q, reply)
}

// readRequest reads and decodes the request body under its size cap and
// a deadline (bodyWait), which it lifts once the body is read, since
// measuring may wait long. Unknown fields, "results" and a second JSON
// value are refused. ok is false when it has replied with an error: 413,
// 408 or 400.
func (a *quizAPI) readRequest(w http.ResponseWriter, r *http.Request, rc *http.ResponseController) (req quizRequest, ok bool) {
	limit := quizBodyLimit(a.s.cfg.MaxMessageBytes)
	body := http.MaxBytesReader(w, r.Body, limit)
	// A body that trickles in must not hold a goroutine forever.
	rc.SetReadDeadline(time.Now().Add(a.bodyWait))
	err := decodeQuizRequest(body, a.s.cfg.MaxLinesPerCell*quiz.MaxRepeat, &req)
	if err != nil {
		w.Header().Set("Connection", "close") // do not wait for the rest of the body
		var tooBig *http.MaxBytesError
		var ne net.Error
		switch {
		case errors.As(err, &tooBig):
			web.JSONError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request larger than %d bytes", limit))
		case errors.As(err, &ne) && ne.Timeout():
			web.JSONError(w, http.StatusRequestTimeout, fmt.Sprintf("the request body took longer than %v to arrive", a.bodyWait))
		case strings.Contains(err.Error(), errClientNumbers):
			web.JSONError(w, http.StatusBadRequest, errClientNumbers)
		default:
			web.JSONError(w, http.StatusBadRequest, "malformed request: "+err.Error()+` (want {"lesson":"...","quiz":"...","answer":"...","browser":"...","run_ids":[...]})`)
		}
		return req, false
	}
	rc.SetReadDeadline(time.Time{})
	return req, true
}

// decodeQuizRequest decodes one POST /api/quiz body into req: one JSON
// object of quizRequest's fields, with at most mostIDs run ids. A field of
// the wrong type is named first ("run_ids: ...").
func decodeQuizRequest(body io.Reader, mostIDs int, req *quizRequest) error {
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(req); err != nil {
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &te) && te.Field == "run_ids":
			return fmt.Errorf("run_ids: want an array of run ids (whole numbers), one per line of the cell: %w", err)
		case errors.As(err, &te) && te.Field != "":
			return fmt.Errorf("%s: %w", te.Field, err)
		}
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("more than one JSON value in the body")
	}
	if len(req.RunIDs) > mostIDs {
		return fmt.Errorf("run_ids: %d ids; at most %d (a cell's lines, %d runs each)", len(req.RunIDs), mostIDs, quiz.MaxRepeat)
	}
	return nil
}

// measureQuiz runs a run: quiz's lines, parsed as specs, through the run
// queue (its token, ticket and lines checked by predictFirst). It returns the results, their
// archive ids and when the first line started; ok is false when it has
// replied with an error (see measureStatus).
func (a *quizAPI) measureQuiz(w http.ResponseWriter, r *http.Request, rc *http.ResponseController, lessonSlug string, q *quiz.Quiz, specs []*harness.Spec, req *quizRequest) (raw []json.RawMessage, ids []int64, started time.Time, ok bool) {
	// The measurement waits its turn, maybe for minutes: no write
	// deadline until it is done.
	rc.SetWriteDeadline(time.Time{})
	from := runq.Origin{Source: "quiz", Lesson: lessonSlug, Quiz: q.ID, Browser: req.Browser}
	raw, ids, started, err := a.measure(r.Context(), guard.RemoteHost(r), q.ID, req.Ticket, q.Run, specs, from)
	rc.SetWriteDeadline(time.Now().Add(a.s.writeTimeout))
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

// takeSlot waits up to quizSlotWait for one of the quizCheckSlots and
// returns the function that gives it back. ok is false when the request
// ended first, or when it has replied 429.
func (a *quizAPI) takeSlot(w http.ResponseWriter, r *http.Request) (release func(), ok bool) {
	select {
	case a.slots <- struct{}{}:
		return func() { <-a.slots }, true
	case <-time.After(quizSlotWait):
		a.s.guard.Refused(guard.RemoteHost(r), "POST /api/quiz: every quiz check slot is taken")
		web.JSONError(w, http.StatusTooManyRequests, fmt.Sprintf("%d quiz answers are being checked already, the most at once: try again in a moment", cap(a.slots)))
		return nil, false
	case <-r.Context().Done():
		return nil, false
	}
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
// (256 KiB by default); a request names its runs by id, so a real one is
// well under a kilobyte.
func quizBodyLimit(maxMessage int64) int64 { return 4 * maxMessage }

// quizCheckSlots is how many quiz answers are decoded into values and
// checked at once; a request that finds them all taken waits up to
// quizSlotWait, then gets 429.
const (
	quizCheckSlots = 4
	quizSlotWait   = 5 * time.Second
)

// A ticket is 1 to maxTicket bytes; badTicket is the reply to any other.
const (
	maxTicket = 128
	badTicket = "ticket: must be 1 to 128 characters"
)

type placeReply struct {
	Position int  `json:"position"`
	Running  bool `json:"running,omitempty"`
}

// handleQueue answers GET /api/quiz/queue?ticket=...: the place of the
// run: quiz measurement holding that ticket.
func (a *quizAPI) handleQueue(w http.ResponseWriter, r *http.Request) {
	ticket := r.URL.Query().Get("ticket")
	if ticket == "" || len(ticket) > maxTicket {
		web.JSONError(w, http.StatusBadRequest, badTicket)
		return
	}
	pos, running, ok := a.s.runs.PlaceOf(ticket)
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
func (a *quizAPI) measure(ctx context.Context, addr, id, ticket string, lines []string, specs []*harness.Spec, from runq.Origin) ([]json.RawMessage, []int64, time.Time, error) {
	if a.running.Add(1) > maxQuizRuns {
		a.running.Add(-1)
		return nil, nil, time.Time{}, errQuizBusy
	}
	defer a.running.Add(-1)
	s := a.s
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

// quizFor finds a lesson's quiz for a JSON endpoint, or writes the error
// reply (404 for an unknown lesson or quiz) and returns a nil quiz.
func (a *quizAPI) quizFor(w http.ResponseWriter, slug, id string) (*lesson.Lesson, *quiz.Quiz) {
	l, _, _, err := a.s.course.find(slug)
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
