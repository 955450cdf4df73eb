package runq

import (
	"slices"
	"sync"
)

// queue is the FIFO of jobs for one data directory, ordered by class. It
// is safe for concurrent use.
type queue struct {
	mu      sync.Mutex // guards waiting, running and closed
	waiting []*Job
	running *Job
	closed  bool          // set by drain: the runner has stopped
	wake    chan struct{} // has room for one pending wake-up
}

func newQueue() *queue { return &queue{wake: make(chan struct{}, 1)} }

func isFollower(j *Job) bool { return j.Class == Follower }

// enqueue adds j and tells it its position: the number of runs ahead of
// it, the running one included (0 = it starts now). It adds nothing and
// returns ErrShuttingDown once the runner has stopped (Close), or a
// *QueueFullError when maxWaiting jobs are already waiting. The check and
// the append happen under one lock, so however many clients submit at
// once, no more than maxWaiting ever wait. A job that is not a follower's
// goes ahead of every waiting follower's job.
func (q *queue) enqueue(j *Job, maxWaiting int) error {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return ErrShuttingDown
	}
	if n := len(q.waiting); n >= maxWaiting {
		q.mu.Unlock()
		return &QueueFullError{Waiting: n}
	}
	i := len(q.waiting)
	if !isFollower(j) {
		i = slices.IndexFunc(q.waiting, isFollower)
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

// remove takes a job out of the waiting line. It reports whether the job
// was waiting (false: it is running or finished).
func (q *queue) remove(j *Job) bool {
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
		j.Out.Send(QueuedMsg{Type: "queued", ID: j.ID, Position: i + ahead})
	}
}

// next pops the first job and marks it running; nil when the queue is empty.
func (q *queue) next() *Job {
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

// finish marks the running job finished and tells the waiting ones
// their new place.
func (q *queue) finish() {
	q.mu.Lock()
	q.running = nil
	q.notifyPositionsLocked(0)
	q.mu.Unlock()
}

// drain closes the queue to new jobs and returns the waiting ones (Close).
func (q *queue) drain() []*Job {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	w := q.waiting
	q.waiting = nil
	return w
}

// cancelRunning cancels the running job, if any (Close).
func (q *queue) cancelRunning() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.running != nil {
		q.running.cancel()
	}
}

// placeOf finds the job holding ticket and tells its place as the queued
// message would: the runs ahead of it, the running one included; 0 and
// running when it holds the disk. ok is false when no job has the ticket.
func (q *queue) placeOf(ticket string) (pos int, running, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.running != nil && q.running.Ticket == ticket {
		return 0, true, true
	}
	ahead := 0
	if q.running != nil {
		ahead = 1
	}
	for i, j := range q.waiting {
		if j.Ticket == ticket {
			return i + ahead, false, true
		}
	}
	return 0, false, false
}

// counts is the number of waiting jobs, and whether one is running.
func (q *queue) counts() (waiting int, running bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.waiting), q.running != nil
}
