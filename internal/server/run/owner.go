package run

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sync"

	"kvlab/harness"
	"kvlab/internal/lesson"
	"kvlab/internal/server/guard"
	"kvlab/internal/server/runq"
)

// Msg is every message a reader sends a run socket: run and cancel, on
// the server's /ws and on a room follower's socket (the package doc has
// the protocol). The messages a run sends back are package runq's
// (runq.QueuedMsg, StartedMsg, ...).
type Msg struct {
	Type  string `json:"type"`
	ID    string `json:"id"`
	Cell  string `json:"cell"`
	Token string `json:"token,omitempty"`
	// Additions for the run archive (runq.Origin), all optional: where
	// the cell is, the browser's id, and how many rounds to run it.
	Lesson  string `json:"lesson,omitempty"`
	CellID  string `json:"cell_id,omitempty"`
	Browser string `json:"browser,omitempty"`
	Repeat  int    `json:"repeat,omitempty"`
	// Room fans the run out to a room's followers (presenter only), and
	// Poll names the room's poll the run measures (package liveclass).
	Room string `json:"room,omitempty"`
	Poll string `json:"poll,omitempty"`
	// Presenter is the room's presenter secret (or the presenter token)
	// on a run with Room (guard.PresenterError).
	Presenter string `json:"presenter,omitempty"`
	// Source is the Go code of a reader's store that the run's -engine
	// mine lines run (checkSource).
	Source string `json:"source,omitempty"`
	// Script is the text of a reader's own workload script (Lua) that
	// the run's -script mine lines run (checkSource).
	Script string `json:"script,omitempty"`
}

// Sink is where a reader's run messages go: the server's /ws client, or a
// room follower. SendBytes sends a message already encoded (a room run's
// messages are encoded once for the presenter and every follower);
// progress messages may be dropped when the reader falls behind.
type Sink interface {
	runq.Sink
	SendBytes(b []byte, progress bool)
}

// Decode reads one message: a JSON object of Msg's fields and nothing
// after it. The error says what a message should look like.
func Decode(data []byte) (Msg, error) {
	var m Msg
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	err := dec.Decode(&m)
	if err == nil && dec.More() {
		err = errors.New("more than one JSON value in one message")
	}
	if err != nil {
		return m, fmt.Errorf("malformed message: %v%s", err, ` (want {"type":"run","id":"c1","cell":"..."} or {"type":"cancel","id":"c1"})`)
	}
	return m, nil
}

// browserRE is what a browser id may look like: the page sends a UUID; any
// short token of letters, digits and '-' is accepted.
var browserRE = regexp.MustCompile(`^[A-Za-z0-9-]{1,64}$`)

// nameRE is a lesson slug, a cell id or a quiz id as the page sends them.
var nameRE = regexp.MustCompile(`^[A-Za-z0-9-]{1,128}$`)

// CheckOrigin checks the optional where-from fields of a run message or
// a quiz request; each may be empty.
func CheckOrigin(lessonSlug, cell, browser string) error {
	if lessonSlug != "" && !nameRE.MatchString(lessonSlug) {
		return fmt.Errorf("lesson %q: a lesson slug is 1 to 128 letters, digits and '-'", lessonSlug)
	}
	if cell != "" && !nameRE.MatchString(cell) {
		return fmt.Errorf("cell_id %q: a cell id is 1 to 128 letters, digits and '-'", cell)
	}
	if browser != "" && !browserRE.MatchString(browser) {
		return fmt.Errorf("browser %q: a browser id is 1 to 64 letters, digits and '-'", browser)
	}
	return nil
}

// checkExtras checks a run message's archive fields.
func checkExtras(m Msg) error {
	if m.Repeat < 0 || m.Repeat > runq.MaxRounds {
		return fmt.Errorf("repeat %d: must be between 1 and %d (0 or absent: once)", m.Repeat, runq.MaxRounds)
	}
	return CheckOrigin(m.Lesson, m.CellID, m.Browser)
}

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
	// (-engine mine, -script mine: checkSource), "" when it does.
	NoReaderCode string
	// Lesson finds a lesson by its slug (nil and no error when the server
	// has none), as package liveclass finds it: a run from a lesson's
	// cell is recorded with which of its lines are the lesson's own
	// (runq.Origin.Own), and the lesson's own script before the cell
	// runs in any server (checkSource).
	Lesson func(slug string) (*lesson.Lesson, error)
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

// Receive acts on one message as a socket read it (Decode, Handle); a
// malformed one is an error message.
func (o *Owner) Receive(data []byte) {
	m, err := Decode(data)
	if err != nil {
		o.out.Send(runq.ErrorMsg{Type: "error", ID: m.ID, Message: err.Error()})
		return
	}
	o.Handle(m)
}

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
	c, ok := o.check(m)
	if !ok {
		return
	}
	j, ok := o.admit(m, c)
	if !ok {
		return
	}
	if c.fan != nil {
		c.fan.Attach(j)
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

// checked is a run message that check passed: its cell's run lines and
// their specs, its room's fan-out (nil without one) and the lesson's
// cell it came from (nil when the page named none or the server has no
// such cell).
type checked struct {
	lines []string
	specs []*harness.Spec
	fan   Fanout
	cell  *lesson.Cell
}

// check checks a run message's token (the message's, else the URL's;
// a follower's run has none: the presenter allowed it), its archive
// fields, its room (Config.Room), its cell: each line against the
// limits, and the whole cell, every round of it, against the budget
// (runq.CheckCell), and the reader's code it would run (checkSource).
// ok is false when it has refused the run.
func (o *Owner) check(m Msg) (c checked, ok bool) {
	cfg := &o.svc.cfg
	if !o.follower && !o.tokenOK(m) {
		return c, false
	}
	if err := checkExtras(m); err != nil {
		o.refuse(m.ID, -1, err.Error())
		return c, false
	}
	if cfg.Room != nil && (m.Room != "" || m.Poll != "") {
		var err error
		if c.fan, err = cfg.Room(m, o.addr, o.follower, o.out); err != nil {
			o.refuse(m.ID, -1, err.Error())
			return c, false
		}
	}
	var bad int
	var err error
	c.lines, c.specs, bad, err = runq.CheckCell(m.Cell, m.Repeat, cfg.Limits, cfg.Budget, cfg.MaxLines)
	if err == nil {
		c.cell = o.lessonCell(m)
		bad, err = o.checkSource(m, c.specs, c.cell)
	}
	if err != nil {
		o.refuse(m.ID, bad, err.Error())
		return c, false
	}
	return c, true
}

// lessonCell is the lesson's cell a run message names (Config.Lesson),
// nil when it names none or the server has no such cell.
func (o *Owner) lessonCell(m Msg) *lesson.Cell {
	if o.svc.cfg.Lesson == nil || m.Lesson == "" || m.CellID == "" {
		return nil
	}
	l, err := o.svc.cfg.Lesson(m.Lesson)
	if err != nil || l == nil {
		return nil
	}
	return l.Cell(m.CellID)
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
func (o *Owner) admit(m Msg, c checked) (j *runq.Job, ok bool) {
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
	// Line i is the lesson's own when the cell's line i is the same text
	// after lesson.CellLines' normalisation, which the page's splitter
	// shares; a run from no lesson's cell owns no line.
	var own []bool
	if c.cell != nil {
		own = make([]bool, len(c.lines))
		for i, line := range c.lines {
			own[i] = i < len(c.cell.Lines) && c.cell.Lines[i] == line
		}
	}
	j = runq.NewJob(o.ctx)
	j.ID, j.Lines, j.Specs, j.Out, j.Class, j.Repeat, j.Source, j.Script = m.ID, c.lines, c.specs, o.out, class, m.Repeat, m.Source, m.Script
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

// A reader's own store on this disk, and a reader's own workload script.
//
// A run message may carry "source": the Go code of a store of the crash
// exercises, which its lines' -engine mine and -engine mine-null run
// (kvlab/harness/mine). The page's "Measure on this disk" button under an
// exercise's editor sends it. It may carry "script": the Lua text of a
// workload script the reader edited on the page, which its lines'
// -script mine run (kvlab/harness/script). Both are code of the reader's
// running on the server's machine, so a server runs them only when it is
// the reader's own: bound to loopback, with no token (a server with a
// token serves others), and not for a room. Anywhere else the run is
// refused before it is queued, with why (Config.NoReaderCode says it for
// the server). A lesson's own scripts (-script cart, ...) are the
// server's, and run in any server.

// checkSource refuses a run whose lines (their specs, as runq.CheckCell
// parsed them), "source" or "script" would run a reader's code where the
// server does not run it. cell is the lesson's cell the run came from
// (nil when none): its own script runs anywhere. bad is the 0-based line
// at fault, or -1 for the run as a whole.
func (o *Owner) checkSource(m Msg, specs []*harness.Spec, cell *lesson.Cell) (bad int, err error) {
	badSource := slices.IndexFunc(specs, func(spec *harness.Spec) bool {
		return slices.ContainsFunc(spec.Engines, harness.TakesSource)
	})
	badScript := slices.IndexFunc(specs, harness.TakesScript)
	// The lesson's own script, as its page shows it before an edit, is
	// the server's: it runs anywhere.
	lessons := m.Script != "" && cell != nil && m.Script == cell.Script
	if lessons {
		badScript = -1
	}
	if badSource < 0 && badScript < 0 && m.Source == "" && (m.Script == "" || lessons) {
		return -1, nil
	}
	why := o.svc.cfg.NoReaderCode
	if why == "" && (m.Room != "" || o.follower) {
		why = "a room's runs run on the presenter's machine for everyone, and run no one's code"
	}
	if why != "" {
		if badSource >= 0 || m.Source != "" {
			return badSource, fmt.Errorf("-engine mine runs your store's own code on the machine that serves the page; %s. Run labserver on your own machine (it listens on 127.0.0.1 by default) to measure your store on your disk", why)
		}
		return badScript, fmt.Errorf("-script mine runs your own workload script on the machine that serves the page; %s. Run labserver on your own machine (it listens on 127.0.0.1 by default) to run your script, or run a lesson's own script here (-script cart, mixed, ...)", why)
	}
	if m.Source != "" && badSource < 0 {
		return -1, fmt.Errorf("source: only a line with -engine mine or mine-null runs the code it carries")
	}
	if len(m.Source) > harness.MaxSourceBytes {
		return -1, fmt.Errorf("source: %d bytes; must be at most %d", len(m.Source), harness.MaxSourceBytes)
	}
	if m.Script != "" && badScript < 0 {
		return -1, fmt.Errorf("script: only a line with -script mine runs the script it carries")
	}
	if len(m.Script) > harness.MaxScriptBytes {
		return -1, fmt.Errorf("script: %d bytes; must be at most %d", len(m.Script), harness.MaxScriptBytes)
	}
	return -1, nil
}
