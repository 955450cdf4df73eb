package runq

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"kvlab/harness"
)

// Class places a job in the queue: a Follower's job waits behind every
// job of the other classes; within a class, jobs keep their order.
type Class int

const (
	// Cell is a reader's run: a cell on a lesson page, or a run: quiz's
	// measurement.
	Cell Class = iota
	// Presenter is a room presenter's run, shown to the whole room.
	Presenter
	// Follower is a room follower's run, when the presenter allows them.
	Follower
)

func (c Class) String() string {
	switch c {
	case Cell:
		return "cell"
	case Presenter:
		return "presenter"
	case Follower:
		return "follower"
	}
	return fmt.Sprintf("Class(%d)", int(c))
}

// A Sink receives a job's messages (messages.go). Send must not block:
// the runner calls it while it measures.
type Sink interface {
	Send(v any)
}

// Discard is the Sink of a job whose caller waits for its results
// instead of hearing its messages (a run: quiz).
type Discard struct{}

// Send drops v.
func (Discard) Send(any) {}

// Job is one cell (or one quiz's run: lines) waiting for or holding the
// disk. Its fields are set by whoever submits it and not changed after;
// what the run produced is read through Results and the other accessors
// once Done is closed.
type Job struct {
	ID     string          // the client's id for the run
	Lines  []string        // the checked run lines
	Specs  []*harness.Spec // Lines parsed, by CheckLines: the harness runs these
	Out    Sink            // hears queued, started, progress, result, error, done
	Class  Class           // where the job queues
	Ticket string          // a quiz request's ticket, for PlaceOf; "" for cells
	From   Origin          // where the job came from, for the archive
	Repeat int             // times to run the lines, in rounds (0 or 1: once)
	Source string          // the store's code that -engine mine lines run (harness.Env.Source)
	Script string          // the reader's script that -script mine lines run (harness.Env.Script)
	// Refused, when set, tells Out why Submit refused the job, in place of
	// the plain error message; done follows it either way.
	Refused func(err error)
	// Release gives back what the job held (its client's slot, its
	// address's count); called once when the job finishes. May be nil.
	Release func()

	// ctx is the job's lifetime, a child of the context given to NewJob;
	// cancel ends it. A value that the runner reaches long after Submit
	// returned, it holds the context as its lifetime (as grpc's
	// ClientConn does).
	ctx    context.Context
	cancel context.CancelFunc

	// Written by the runner only; read after done is closed.
	results []json.RawMessage
	runIDs  []int64 // the archive id of each result (0: not recorded); as results
	// resultLines is the cell line of each result, as results, until
	// sortResults puts results and runIDs in line order.
	resultLines []int
	started     time.Time // when the first recorded line started, as recorded
	err         error     // the first failure, if any
	done        chan struct{}
}

// NewJob is a job whose lifetime is a child of parent: it is cancelled
// when parent is, or by Runner.Cancel. The caller fills in its exported
// fields before Submit.
func NewJob(parent context.Context) *Job {
	j := &Job{done: make(chan struct{})}
	j.ctx, j.cancel = context.WithCancel(parent)
	return j
}

// Done is closed once the job has finished: run, failed, cancelled or
// refused, and its done message sent.
func (j *Job) Done() <-chan struct{} { return j.done }

// Results are the last round's result of each line that gave one, in
// order. Read after Done.
func (j *Job) Results() []json.RawMessage { return j.results }

// RunIDs are the archive ids of Results (0 where not recorded).
func (j *Job) RunIDs() []int64 { return j.runIDs }

// Started is when the first recorded line started.
func (j *Job) Started() time.Time { return j.started }

// Err is the job's first failure, nil when every line gave its result
// or the job was cancelled.
func (j *Job) Err() error { return j.err }

// Origin says where a job came from, for the archive.
type Origin struct {
	Source  string // "cell" or "quiz"
	Lesson  string // lesson slug, "" when the page did not say
	Cell    string // the cell's id in the lesson, "" when unknown
	Quiz    string // the quiz's id, for run: quizzes
	Browser string // the id the page keeps in localStorage, "" when none
	// Own[i] says line i of a cell's job is the lesson's own line i of
	// the cell; a run: quiz's lines are always its own.
	Own []bool
}

// sortResults puts the last round's results and their run ids in the
// order of the cell's lines (a mirrored round ran them in reverse).
func (j *Job) sortResults() {
	idx := make([]int, len(j.results))
	for k := range idx {
		idx[k] = k
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(j.resultLines[a], j.resultLines[b]) })
	res, ids := make([]json.RawMessage, len(idx)), make([]int64, len(idx))
	for k, from := range idx {
		res[k], ids[k] = j.results[from], j.runIDs[from]
	}
	j.results, j.runIDs = res, ids
	slices.Sort(j.resultLines)
}
