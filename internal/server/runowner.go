package server

import (
	"context"
	"fmt"
	"sync"

	"kvlab/harness"
	"kvlab/internal/server/room"
	"kvlab/internal/server/runq"
)

// A reader's runs: a /ws socket's, or a room follower's (the follower's
// socket is the room hub's, package room). Both check their run messages
// the same way, count them against the same caps, and queue them with
// the server's runner; only their sink differs, and a follower's runs
// queue behind the presenter's and need no token (the presenter allowed
// them).

// runOwner holds the runs one reader has queued or running. It is safe
// for concurrent use. Its ctx is the reader's lifetime (package doc,
// Contexts) and the parent of its runs; cancel ends it.
type runOwner struct {
	s      *Server
	out    room.Sink
	ctx    context.Context
	cancel context.CancelFunc
	token  string // from the socket's URL; a follower's runs need none
	addr   string // the remote address's host: runs are counted per address too
	// follower is set for a room follower's runs (package room): they wait
	// behind the presenter's.
	follower bool

	mu   sync.Mutex // guards jobs
	jobs map[string]*runq.Job
}

// newRunOwner is the owner of the runs of a reader at addr, whose
// messages go to out, for as long as the server runs or stopRuns.
func newRunOwner(s *Server, out room.Sink, addr, token string, follower bool) *runOwner {
	o := &runOwner{s: s, out: out, addr: addr, token: token, follower: follower, jobs: map[string]*runq.Job{}}
	o.ctx, o.cancel = context.WithCancel(s.ctx)
	return o
}

// stopRuns ends the owner's lifetime and cancels its runs; for a /ws
// client that also ends its writer, which sends close 1001 and closes the
// socket.
func (o *runOwner) stopRuns() {
	o.cancel()
	o.mu.Lock()
	jobs := make([]*runq.Job, 0, len(o.jobs))
	for _, j := range o.jobs {
		jobs = append(jobs, j)
	}
	o.mu.Unlock()
	for _, j := range jobs {
		o.s.runs.Cancel(j)
	}
}

// forget drops j from the owner's runs once it has finished.
func (o *runOwner) forget(j *runq.Job) {
	o.mu.Lock()
	if o.jobs[j.ID] == j {
		delete(o.jobs, j.ID)
	}
	o.mu.Unlock()
}

// run handles a run message: check it, admit it as one of the owner's
// jobs, and queue it. Each refusal is an error message, then done, except
// for a bad or busy id, which has no run of its own to end. A run the
// queue refuses hears why and done from the runner, on its own sink: the
// owner's, or the room for a presenter's run.
func (o *runOwner) run(m runq.RunMsg) {
	if m.ID == "" || len(m.ID) > 128 {
		o.out.Send(runq.ErrorMsg{Type: "error", ID: m.ID, Message: "run: id must be 1 to 128 characters"})
		return
	}
	lines, specs, rr, ok := o.checkRun(m)
	if !ok {
		return
	}
	j, ok := o.admit(m, lines, specs)
	if !ok {
		return
	}
	rr.Attach(j)
	// Submit checks the queue's cap and adds the job under one lock.
	if err := o.s.runs.Submit(j); err != nil {
		o.s.guard.Refused(o.addr, "run: "+err.Error())
	}
}

// refuse ends run id before it starts: an error saying msg, naming the
// cell's line when line >= 0, then done.
func (o *runOwner) refuse(id string, line int, msg string) {
	e := runq.ErrorMsg{Type: "error", ID: id, Message: msg}
	if line >= 0 {
		e.Line = runq.LineP(line)
	}
	o.out.Send(e)
	o.out.Send(runq.DoneMsg{Type: "done", ID: id})
}

// checkRun checks a run message's token (the message's, else the URL's;
// a follower's run has none: the presenter allowed it), its archive
// fields, its room (rr is nil without one; room.PresenterRun) and
// its cell: each line against the limits, and the whole cell, every
// round of it, against the budget (runq.CheckCell). It returns the cell's
// run lines and their specs; ok is false when it has refused the run.
func (o *runOwner) checkRun(m runq.RunMsg) (lines []string, specs []*harness.Spec, rr *room.Run, ok bool) {
	if !o.follower && !o.tokenOK(m) {
		return nil, nil, nil, false
	}
	if err := checkRunExtras(m); err != nil {
		o.refuse(m.ID, -1, err.Error())
		return nil, nil, nil, false
	}
	rr, err := o.s.rooms.PresenterRun(m, o.addr, o.follower, o.out)
	if err != nil {
		o.refuse(m.ID, -1, err.Error())
		return nil, nil, nil, false
	}
	lines, specs, bad, err := runq.CheckCell(m.Cell, m.Repeat, o.s.cfg.Limits, o.s.cfg.Budget, o.s.cfg.MaxLinesPerCell)
	if err == nil {
		bad, err = o.s.checkSource(o, m, specs)
	}
	if err != nil {
		o.refuse(m.ID, bad, err.Error())
		return nil, nil, nil, false
	}
	return lines, specs, rr, true
}

// tokenOK checks a run message's token (the message's, else the URL's)
// and refuses the run when it is not the run token; an address that sent
// too many wrong ones is refused before any comparison.
func (o *runOwner) tokenOK(m runq.RunMsg) bool {
	tok := m.Token
	if tok == "" {
		tok = o.token
	}
	ok, throttled := o.s.guard.TokenGuess(o.addr, tok, func() bool { return o.s.guard.TokenOK(tok) })
	switch {
	case ok:
		return true
	case throttled != "":
		o.refuse(m.ID, -1, throttled)
	default:
		o.s.guard.Refused(o.addr, "run: no or a wrong token")
		o.refuse(m.ID, -1, errTokenRequired.Error())
	}
	return false
}

// admit makes a checked run one of this client's jobs, within the caps on
// runs per client and per address. ok is false when it has refused it.
func (o *runOwner) admit(m runq.RunMsg, lines []string, specs []*harness.Spec) (j *runq.Job, ok bool) {
	o.mu.Lock()
	if _, busy := o.jobs[m.ID]; busy {
		o.mu.Unlock()
		o.out.Send(runq.ErrorMsg{Type: "error", ID: m.ID, Message: fmt.Sprintf("run %q is already queued or running: cancel it first", m.ID)})
		return nil, false
	}
	if n := len(o.jobs); n >= o.s.cfg.MaxQueuedPerClient {
		o.mu.Unlock()
		o.s.guard.Refused(o.addr, fmt.Sprintf("run: the socket already has %d runs queued or running (-max-queued)", n))
		o.refuse(m.ID, -1, fmt.Sprintf("you already have %d runs queued or running; the limit is %d", n, o.s.cfg.MaxQueuedPerClient))
		return nil, false
	}
	release, err := o.s.guard.HoldAddr(o.addr)
	if err != nil {
		o.mu.Unlock()
		o.s.guard.Refused(o.addr, err.Error())
		o.refuse(m.ID, -1, err.Error())
		return nil, false
	}
	class := runq.Cell
	if o.follower {
		class = runq.Follower // waits behind the presenter's runs
	}
	j = runq.NewJob(o.ctx)
	j.ID, j.Lines, j.Specs, j.Out, j.Class, j.Repeat, j.Source, j.Script = m.ID, lines, specs, o.out, class, m.Repeat, m.Source, m.Script
	j.From = runq.Origin{Source: "cell", Lesson: m.Lesson, Cell: m.CellID, Browser: m.Browser, Own: o.s.ownLines(m.Lesson, m.CellID, lines)}
	j.Release = func() {
		o.forget(j)
		release()
	}
	o.jobs[m.ID] = j
	o.mu.Unlock()
	return j, true
}

// followerRunner is the room's runner (room.Runner): a follower's runs
// are a runOwner's without a token, waiting behind the presenter's.
type followerRunner struct{ s *Server }

// FollowerRuns implements room.Runner.
func (fr followerRunner) FollowerRuns(out room.Sink, addr string) room.Runs {
	return followerOwner{newRunOwner(fr.s, out, addr, "", true)}
}

// followerOwner is one follower's runs (room.Runs).
type followerOwner struct{ o *runOwner }

func (f followerOwner) Run(m runq.RunMsg) { f.o.run(m) }
func (f followerOwner) Cancel(id string)  { f.o.cancelRun(id) }
func (f followerOwner) Stop()             { f.o.stopRuns() }

func (o *runOwner) cancelRun(id string) {
	o.mu.Lock()
	j := o.jobs[id]
	o.mu.Unlock()
	if j == nil {
		o.out.Send(runq.ErrorMsg{Type: "error", ID: id, Message: fmt.Sprintf("cancel: no run %q is queued or running", id)})
		return
	}
	o.s.runs.Cancel(j)
}
