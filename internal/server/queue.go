package server

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"
)

// A sink receives a job's messages. Implementations must not block: the
// runner calls them while it measures.
type sink interface {
	send(v any)
}

// job is one cell (or one quiz's run: lines) waiting for or holding the disk.
// Its ctx is the job's lifetime, a child of its client's or the server's
// (package doc, Contexts); cancel ends it.
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
	source string  // the store's code that -engine mine lines run (mine.go)

	// release gives back the job's place in its address's count; may be nil.
	release func()

	// results is written by the runner only; read after done is closed.
	results []json.RawMessage
	runIDs  []int64   // the archive id of each result (0: not recorded); as results
	started time.Time // when the first recorded line started, as recorded
	err     error     // the first failure, if any; read after done is closed
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
