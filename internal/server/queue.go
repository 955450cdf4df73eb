package server

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"kvlab/harness"
)

// A sink receives a job's messages. Implementations must not block: the
// runner calls them while it measures.
type sink interface {
	send(v any)
}

// job is one cell (or one quiz's run: lines) waiting for or holding the disk.
type job struct {
	id     string   // the client's id for the run
	lines  []string // checked run-spec lines
	out    sink
	ctx    context.Context
	cancel context.CancelFunc
	owner  *client // nil for quiz runs
	ticket string  // a quiz request's ticket, for GET /api/quiz/queue; "" for cells
	from   origin  // where the job came from, for the archive
	repeat int     // times to run the lines, in rounds (0 or 1: once)

	// release gives back the job's place in its address's count; may be nil.
	release func()

	// results is written by the runner only; read after done is closed.
	results []json.RawMessage
	runIDs  []int64 // the archive id of each result (0: not recorded); as results
	err     error   // the first failure, if any; read after done is closed
	done    chan struct{}
}

// queue is the FIFO of jobs for one data directory. It is safe for
// concurrent use.
type queue struct {
	mu      sync.Mutex // guards waiting and running
	waiting []*job
	running *job
	closed  bool          // set by drain: the runner has stopped
	wake    chan struct{} // has room for one pending wake-up
}

func newQueue() *queue { return &queue{wake: make(chan struct{}, 1)} }

// Messages, as DESIGN.md's table, with additions only (docs/api.md lists
// them all): done carries "cancelled" when the run was stopped; progress
// carries the harness's progress fields, engine and run among them; error
// has "line" only when a line of the cell is at fault (a full queue or a
// bad message has none).
type queuedMsg struct {
	Type     string `json:"type"`
	ID       string `json:"id"`
	Position int    `json:"position"`
}

type startedMsg struct {
	Type string `json:"type"`
	ID   string `json:"id"`
	Line int    `json:"line"`
	Spec string `json:"spec"`
}

type progressMsg struct {
	Type string `json:"type"`
	ID   string `json:"id"`
	Line int    `json:"line"`
	harness.Progress
}

type resultMsg struct {
	Type   string          `json:"type"`
	ID     string          `json:"id"`
	Line   int             `json:"line"`
	Result json.RawMessage `json:"result"`
	RunID  int64           `json:"run_id,omitempty"` // the run's id in the archive, once it is recorded
	Round  int             `json:"round,omitempty"`  // 1-based round of a repeated run
}

type doneMsg struct {
	Type      string `json:"type"`
	ID        string `json:"id"`
	Cancelled bool   `json:"cancelled,omitempty"`
}

type errorMsg struct {
	Type    string `json:"type"`
	ID      string `json:"id"`
	Line    *int   `json:"line,omitempty"` // the cell line at fault, when there is one
	Message string `json:"message"`
}

func lineP(i int) *int { return &i }

// enqueue adds j and tells it its position: the number of runs ahead of
// it, the running one included (0 = it starts now). It adds nothing and
// returns errShuttingDown once the runner has stopped (Close), or a
// *queueFullError when maxWaiting jobs are already waiting. The check and
// the append happen under one lock, so however many clients submit at
// once, no more than maxWaiting ever wait.
func (q *queue) enqueue(j *job, maxWaiting int) error {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return errShuttingDown
	}
	if n := len(q.waiting); n >= maxWaiting {
		q.mu.Unlock()
		return &queueFullError{waiting: n}
	}
	i := len(q.waiting)
	if !isFollowerJob(j) { // a room's presenter goes ahead of its followers (room_ws.go)
		i = slices.IndexFunc(q.waiting, isFollowerJob)
		if i < 0 {
			i = len(q.waiting)
		}
	}
	q.waiting = slices.Insert(q.waiting, i, j)
	q.notifyPositionsLocked(i)
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
	return nil
}

// queueFullError is enqueue's refusal when the waiting line is at its cap.
type queueFullError struct {
	waiting int // jobs waiting when the new one was refused
}

func (e *queueFullError) Error() string {
	return fmt.Sprintf("the run queue is full (%d runs waiting, the most the server keeps): try again when some have finished", e.waiting)
}

// remove takes a job out of the waiting line. It reports whether the job
// was waiting (false: it is running or finished).
func (q *queue) remove(j *job) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	i := slices.Index(q.waiting, j)
	if i < 0 {
		return false
	}
	q.waiting = slices.Delete(q.waiting, i, i+1)
	q.notifyPositionsLocked(i)
	return true
}

// notifyPositionsLocked tells the jobs from index `from` on their new place.
// REQUIRES: q.mu held.
func (q *queue) notifyPositionsLocked(from int) {
	ahead := 0
	if q.running != nil {
		ahead = 1
	}
	for i := from; i < len(q.waiting); i++ {
		j := q.waiting[i]
		j.out.send(queuedMsg{Type: "queued", ID: j.id, Position: i + ahead})
	}
}

// next pops the first job and marks it running; nil when the queue is empty.
func (q *queue) next() *job {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.running = nil
	if len(q.waiting) == 0 {
		return nil
	}
	j := q.waiting[0]
	q.waiting = q.waiting[1:]
	q.running = j
	return j
}

func (q *queue) finish() {
	q.mu.Lock()
	q.running = nil
	q.notifyPositionsLocked(0)
	q.mu.Unlock()
}

// drain closes the queue to new jobs and returns the waiting ones (Close).
func (q *queue) drain() []*job {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	w := q.waiting
	q.waiting = nil
	return w
}

var runSeq atomic.Int64

// runLoop is the single runner: it owns the disk. Close stops it.
func (s *Server) runLoop() {
	defer s.wg.Done()
	for {
		j := s.q.next()
		if j == nil {
			select {
			case <-s.ctx.Done():
				for _, j := range s.q.drain() {
					j.cancel()
					finishJob(j, true)
				}
				return
			case <-s.q.wake:
				continue
			}
		}
		cancelled := s.runJob(j)
		// The disk is free before anyone hears the job is done, so a
		// client that reacts to done by queueing again is told position 0.
		s.q.finish()
		finishJob(j, cancelled)
	}
}

// finishJob sends done and releases whoever waits on the job.
func finishJob(j *job, cancelled bool) {
	j.out.send(doneMsg{Type: "done", ID: j.id, Cancelled: cancelled})
	if j.owner != nil {
		j.owner.forget(j)
	}
	if j.release != nil {
		j.release()
	}
	close(j.done)
}

// runJob runs a job's lines in order, each in a fresh directory that is
// removed afterwards, and records each finished line in the archive. A
// repeated job runs all its lines once per round. The first failing line
// ends the job. It reports whether the job was cancelled; the caller sends
// done.
func (s *Server) runJob(j *job) (cancelled bool) {
	if j.ctx.Err() != nil {
		return true
	}
	dir := filepath.Join(s.cfg.DataDir, "runs", fmt.Sprintf("run-%s-%d", s.owner.name, runSeq.Add(1)))
	defer os.RemoveAll(dir)
	// One time budget for the whole job, preload and every run of every
	// round included.
	ctx, stop := s.cfg.Budget.withBudget(j.ctx)
	defer stop()
	rounds := max(j.repeat, 1)
	for round := 1; round <= rounds; round++ {
		for i := range j.lines {
			var ok bool
			if ok, cancelled = s.runLine(ctx, j, dir, i, round, rounds); cancelled {
				return true
			} else if !ok {
				return false
			}
		}
	}
	return false
}

// runLine runs line i of j under ctx (the job's budget) and sends its
// result (or error). ok is false when the line failed or the budget ran
// out, which ends the job.
func (s *Server) runLine(ctx context.Context, j *job, dir string, i, round, rounds int) (ok, cancelled bool) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		j.err = err
		j.out.send(errorMsg{Type: "error", ID: j.id, Line: lineP(i), Message: "creating the run directory: " + err.Error()})
		return false, false
	}
	j.out.send(startedMsg{Type: "started", ID: j.id, Line: i, Spec: j.lines[i]})
	tl := &timeline{}
	env := harness.Env{
		Dir:    dir,
		Limits: s.cfg.Limits,
		Exe:    s.cfg.Exe,
		Progress: func(p harness.Progress) {
			tl.add(p)
			j.out.send(progressMsg{Type: "progress", ID: j.id, Line: i, Progress: p})
		},
	}
	started := time.Now()
	res, err := s.exec(ctx, j.lines[i], env)
	ended := time.Now()
	os.RemoveAll(dir)
	if s.roomMode() {
		// What the room sees is what the archive keeps: its pages are public.
		res = redactForRoom(res)
	}
	if j.ctx.Err() != nil {
		return false, true
	}
	if spent := context.Cause(ctx); spent != nil {
		// The budget ran out: what the line measured before it was
		// stopped is still recorded and shown, marked cancelled, then why.
		if err == nil && json.Valid(res) {
			s.sendResult(j, i, round, rounds, res, tl, started, ended)
		}
		j.err = fmt.Errorf("line %d: %v", i, spent)
		j.out.send(errorMsg{Type: "error", ID: j.id, Line: lineP(i), Message: spent.Error()})
		return false, false
	}
	if err != nil {
		j.err = fmt.Errorf("line %d: %v", i, err)
		j.out.send(errorMsg{Type: "error", ID: j.id, Line: lineP(i), Message: err.Error()})
		return false, false
	}
	if !json.Valid(res) {
		j.err = fmt.Errorf("line %d: the harness returned invalid JSON", i)
		j.out.send(errorMsg{Type: "error", ID: j.id, Line: lineP(i), Message: j.err.Error()})
		return false, false
	}
	s.sendResult(j, i, round, rounds, res, tl, started, ended)
	return true, false
}

// sendResult records line i's result and then sends it with its run_id.
// The measurement is over: recording it cannot perturb it.
func (s *Server) sendResult(j *job, i, round, rounds int, res json.RawMessage, tl *timeline, started, ended time.Time) {
	id, _ := s.record(j, j.lines[i], res, tl, started, ended)
	if round == rounds {
		j.results = append(j.results, res)
		j.runIDs = append(j.runIDs, id)
	}
	m := resultMsg{Type: "result", ID: j.id, Line: i, Result: res, RunID: id}
	if rounds > 1 {
		m.Round = round
	}
	j.out.send(m)
}

// placeOf finds the job holding ticket and tells its place as the queued
// message would: the runs ahead of it, the running one included; 0 and
// running when it holds the disk. ok is false when no job has the ticket.
func (q *queue) placeOf(ticket string) (pos int, running, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.running != nil && q.running.ticket == ticket {
		return 0, true, true
	}
	ahead := 0
	if q.running != nil {
		ahead = 1
	}
	for i, j := range q.waiting {
		if j.ticket == ticket {
			return i + ahead, false, true
		}
	}
	return 0, false, false
}
