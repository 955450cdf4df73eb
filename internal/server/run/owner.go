package run

import (
	"context"
	"fmt"
	"sync"

	"kvlab/harness"
	"kvlab/internal/server/guard"
	"kvlab/internal/server/runq"
)

// A reader's runs: a /ws socket's, or a room follower's. Both check their
// run messages the same way, count them against the same caps, and queue
// them with the server's runner; only their sink differs, and a
// follower's runs queue behind the presenter's and need no token (the
// presenter allowed them).

// Config is what a Service needs from the server.
type Config struct {
	Runner *runq.Runner
	Guard  *guard.Guard
	// Limits and Budget bound each line and each cell as a whole
	// (runq.CheckCell); MaxLines caps a cell's lines and MaxPerOwner the
	// runs one reader may have queued or running.
	Limits      harness.Limits
	Budget      runq.Budget
	MaxLines    int
	MaxPerOwner int
	// NoReaderCode says why this server runs no reader's own code
	// (-engine mine; source.go), "" when it does.
	NoReaderCode string
	// Own says which lines of a cell run are the lesson's own, for the
	// archive (runq.Origin.Own); LessonScript is the lesson's own script
	// before a cell ("" when none), which runs in any server (source.go).
	Own          func(lessonSlug, cellID string, lines []string) []bool
	LessonScript func(lessonSlug, cellID string) string
	// Room checks a run message's "room" and "poll" for the reader at addr
	// (package liveclass); a message with neither never reaches it.
	Room func(m Msg, addr string, follower bool, out Sink) (Fanout, error)
}

// Fanout is a presenter's run in a room (package liveclass): Attach makes it
// the job's sink and queues the job as the presenter's.
type Fanout interface {
	Attach(j *runq.Job)
}

// Service makes the Owners of the server's readers. It is safe for
// concurrent use.
type Service struct {
	cfg Config
	ctx context.Context // the server's lifetime: the parent of every Owner's
}

// NewService is the owner of runs for a server whose lifetime is ctx.
func NewService(ctx context.Context, cfg Config) *Service {
	return &Service{cfg: cfg, ctx: ctx}
}

// Owner holds the runs one reader has queued or running. It is safe for
// concurrent use. Its ctx is the reader's lifetime (the server's package
// doc, Contexts) and the parent of its runs; Stop ends it.
type Owner struct {
	svc    *Service
	out    Sink
	ctx    context.Context
	cancel context.CancelFunc
	token  string // from the socket's URL; a follower's runs need none
	addr   string // the remote address's host: runs are counted per address too
	// follower is set for a room follower's runs (package liveclass): they wait
	// behind the presenter's.
	follower bool

	mu   sync.Mutex // guards jobs
	jobs map[string]*runq.Job
}

// Owner is the owner of the runs of a reader at addr, whose messages go
// to out, for as long as the server runs or Stop. token is the socket's
// own (its URL's); a follower's runs need none.
func (s *Service) Owner(out Sink, addr, token string, follower bool) *Owner {
	o := &Owner{svc: s, out: out, addr: addr, token: token, follower: follower, jobs: map[string]*runq.Job{}}
	o.ctx, o.cancel = context.WithCancel(s.ctx)
	return o
}

// Done is closed when the owner's lifetime ends (Stop, or the server's).
func (o *Owner) Done() <-chan struct{} { return o.ctx.Done() }

// Alive reports whether the owner's lifetime goes on.
func (o *Owner) Alive() bool { return o.ctx.Err() == nil }

// Handle acts on one message: a run or a cancel; any other type is an
// error message.
func (o *Owner) Handle(m Msg) {
	switch m.Type {
	case "run":
		o.Run(m)
	case "cancel":
		o.Cancel(m.ID)
	default:
		o.out.Send(runq.ErrorMsg{Type: "error", ID: m.ID, Message: fmt.Sprintf("unknown message type %q (want run or cancel)", m.Type)})
	}
}

// Abandon ends the owner's lifetime only: its runs end as their contexts
// do. A sink calls it (a reader that stopped reading), from wherever the
// runner sends, so it takes no lock.
func (o *Owner) Abandon() { o.cancel() }

// Stop ends the owner's lifetime and cancels its runs; for a /ws client
// that also ends its writer, which sends close 1001 and closes the
// socket.
func (o *Owner) Stop() {
	o.cancel()
	o.mu.Lock()
	jobs := make([]*runq.Job, 0, len(o.jobs))
	for _, j := range o.jobs {
		jobs = append(jobs, j)
	}
	o.mu.Unlock()
	for _, j := range jobs {
		o.svc.cfg.Runner.Cancel(j)
	}
}

// forget drops j from the owner's runs once it has finished.
func (o *Owner) forget(j *runq.Job) {
	o.mu.Lock()
	if o.jobs[j.ID] == j {
		delete(o.jobs, j.ID)
	}
	o.mu.Unlock()
}

// Run handles a run message: check it, admit it as one of the owner's
// jobs, and queue it. Each refusal is an error message, then done, except
// for a bad or busy id, which has no run of its own to end. A run the
// queue refuses hears why and done from the runner, on its own sink: the
// owner's, or the room for a presenter's run.
func (o *Owner) Run(m Msg) {
	if m.ID == "" || len(m.ID) > 128 {
		o.out.Send(runq.ErrorMsg{Type: "error", ID: m.ID, Message: "run: id must be 1 to 128 characters"})
		return
	}
	lines, specs, fan, ok := o.check(m)
	if !ok {
		return
	}
	j, ok := o.admit(m, lines, specs)
	if !ok {
		return
	}
	if fan != nil {
		fan.Attach(j)
	}
	// Submit checks the queue's cap and adds the job under one lock.
	if err := o.svc.cfg.Runner.Submit(j); err != nil {
		o.svc.cfg.Guard.Refused(o.addr, "run: "+err.Error())
	}
}

// refuse ends run id before it starts: an error saying msg, naming the
// cell's line when line >= 0, then done.
func (o *Owner) refuse(id string, line int, msg string) {
	e := runq.ErrorMsg{Type: "error", ID: id, Message: msg}
	if line >= 0 {
		e.Line = runq.LineP(line)
	}
	o.out.Send(e)
	o.out.Send(runq.DoneMsg{Type: "done", ID: id})
}

// check checks a run message's token (the message's, else the URL's;
// a follower's run has none: the presenter allowed it), its archive
// fields, its room (fan is nil without one; Config.Room) and its cell:
// each line against the limits, and the whole cell, every round of it,
// against the budget (runq.CheckCell). It returns the cell's run lines
// and their specs; ok is false when it has refused the run.
func (o *Owner) check(m Msg) (lines []string, specs []*harness.Spec, fan Fanout, ok bool) {
	cfg := &o.svc.cfg
	if !o.follower && !o.tokenOK(m) {
		return nil, nil, nil, false
	}
	if err := checkExtras(m); err != nil {
		o.refuse(m.ID, -1, err.Error())
		return nil, nil, nil, false
	}
	if cfg.Room != nil && (m.Room != "" || m.Poll != "") {
		var err error
		if fan, err = cfg.Room(m, o.addr, o.follower, o.out); err != nil {
			o.refuse(m.ID, -1, err.Error())
			return nil, nil, nil, false
		}
	}
	lines, specs, bad, err := runq.CheckCell(m.Cell, m.Repeat, cfg.Limits, cfg.Budget, cfg.MaxLines)
	if err == nil {
		bad, err = o.checkSource(m, specs)
	}
	if err != nil {
		o.refuse(m.ID, bad, err.Error())
		return nil, nil, nil, false
	}
	return lines, specs, fan, true
}

// tokenOK checks a run message's token (the message's, else the URL's)
// and refuses the run when it is not the run token; an address that sent
// too many wrong ones is refused before any comparison.
func (o *Owner) tokenOK(m Msg) bool {
	g := o.svc.cfg.Guard
	tok := m.Token
	if tok == "" {
		tok = o.token
	}
	ok, throttled := g.TokenGuess(o.addr, tok, func() bool { return g.TokenOK(tok) })
	switch {
	case ok:
		return true
	case throttled != "":
		o.refuse(m.ID, -1, throttled)
	default:
		g.Refused(o.addr, "run: no or a wrong token")
		o.refuse(m.ID, -1, ErrTokenRequired.Error())
	}
	return false
}

// admit makes a checked run one of this reader's jobs, within the caps on
// runs per reader and per address. ok is false when it has refused it.
func (o *Owner) admit(m Msg, lines []string, specs []*harness.Spec) (j *runq.Job, ok bool) {
	cfg := &o.svc.cfg
	o.mu.Lock()
	if _, busy := o.jobs[m.ID]; busy {
		o.mu.Unlock()
		o.out.Send(runq.ErrorMsg{Type: "error", ID: m.ID, Message: fmt.Sprintf("run %q is already queued or running: cancel it first", m.ID)})
		return nil, false
	}
	if n := len(o.jobs); n >= cfg.MaxPerOwner {
		o.mu.Unlock()
		cfg.Guard.Refused(o.addr, fmt.Sprintf("run: the socket already has %d runs queued or running (-max-queued)", n))
		o.refuse(m.ID, -1, fmt.Sprintf("you already have %d runs queued or running; the limit is %d", n, cfg.MaxPerOwner))
		return nil, false
	}
	release, err := cfg.Guard.HoldAddr(o.addr)
	if err != nil {
		o.mu.Unlock()
		cfg.Guard.Refused(o.addr, err.Error())
		o.refuse(m.ID, -1, err.Error())
		return nil, false
	}
	class := runq.Cell
	if o.follower {
		class = runq.Follower // waits behind the presenter's runs
	}
	var own []bool
	if cfg.Own != nil {
		own = cfg.Own(m.Lesson, m.CellID, lines)
	}
	j = runq.NewJob(o.ctx)
	j.ID, j.Lines, j.Specs, j.Out, j.Class, j.Repeat, j.Source, j.Script = m.ID, lines, specs, o.out, class, m.Repeat, m.Source, m.Script
	j.From = runq.Origin{Source: "cell", Lesson: m.Lesson, Cell: m.CellID, Browser: m.Browser, Own: own}
	j.Release = func() {
		o.forget(j)
		release()
	}
	o.jobs[m.ID] = j
	o.mu.Unlock()
	return j, true
}

// Cancel cancels the owner's run id, or says there is no such run.
func (o *Owner) Cancel(id string) {
	o.mu.Lock()
	j := o.jobs[id]
	o.mu.Unlock()
	if j == nil {
		o.out.Send(runq.ErrorMsg{Type: "error", ID: id, Message: fmt.Sprintf("cancel: no run %q is queued or running", id)})
		return
	}
	o.svc.cfg.Runner.Cancel(j)
}
