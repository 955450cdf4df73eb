package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"kvlab/harness"
	"kvlab/internal/server/guard"
	"kvlab/internal/server/runq"
	"kvlab/internal/server/web"
)

// The run websocket's connections; its messages are in messages.go.
// Per connection there is one reader (the handler goroutine), one writer,
// and the server's single runner; a disconnect cancels the client's runs.
// Robustness: a connection silent for pongWait (no message, no pong to the
// pings sent every half of it) is dropped; the writer has a bounded
// buffer, and a client that stops reading loses progress messages first
// and is disconnected when even a result does not fit, so it never holds
// up the runner or other clients; a client may have MaxQueuedPerClient
// runs, one remote address MaxQueuedPerAddress over all its sockets, and
// all clients together 64 waiting runs; a cell as a whole must fit the
// Budget (runq.Budget). On shutdown the writer sends close 1001.

// client is one websocket connection. It is safe for concurrent use.
// Its ctx is the connection's lifetime (package doc, Contexts); cancel
// ends it: a disconnect, a client that stops reading, Close.
type client struct {
	s      *Server
	ws     *websocket.Conn
	out    chan []byte // to the writer; never closed
	ctx    context.Context
	cancel context.CancelFunc
	token  string // from the URL
	addr   string // the remote address's host: runs are counted per address too
	// follower is set for a room follower's runs (room_ws.go): they wait
	// behind the presenter's.
	follower bool

	mu   sync.Mutex // guards jobs
	jobs map[string]*runq.Job
}

const (
	writeWait = 10 * time.Second
	outBuffer = 512
	// pongWait is the default Server.pongWait: a connection that sends
	// nothing, not even a pong, for this long is dropped (a laptop that
	// slept, a peer that vanished without closing). Pings go out every
	// half of it; browsers answer them without any script.
	pongWait = 60 * time.Second
)

func (s *Server) upgrader() *websocket.Upgrader {
	return &websocket.Upgrader{
		ReadBufferSize:  4096,
		WriteBufferSize: 4096,
		CheckOrigin:     guard.SameOrigin,
	}
}

func (s *Server) handleWS(w http.ResponseWriter, r *http.Request) {
	if !guard.SameOrigin(r) {
		http.Error(w, "websocket: origin "+r.Header.Get("Origin")+" is not this server ("+r.Host+")", http.StatusForbidden)
		return
	}
	if !s.guard.HostOK(r) {
		http.Error(w, "websocket: "+s.guard.HostError(r), http.StatusForbidden)
		return
	}
	ws, err := s.upgrader().Upgrade(w, r, nil)
	if err != nil {
		return // Upgrade has replied
	}
	// Messages a little over the cap get an error and the connection
	// stays; far larger ones close it (websocket close 1009).
	ws.SetReadLimit(4*s.cfg.MaxMessageBytes + 1024)
	ws.SetReadDeadline(time.Now().Add(s.pongWait))
	ws.SetPongHandler(func(string) error {
		return ws.SetReadDeadline(time.Now().Add(s.pongWait))
	})
	c := &client{s: s, ws: ws, out: make(chan []byte, outBuffer), jobs: map[string]*runq.Job{}, token: r.URL.Query().Get("token"), addr: guard.RemoteHost(r)}
	c.ctx, c.cancel = context.WithCancel(s.ctx)
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		goingAway(ws)
		return
	}
	s.clients[c] = struct{}{}
	s.wg.Add(1)
	s.mu.Unlock()
	go c.writeLoop()
	c.readLoop()
	c.close()
	s.mu.Lock()
	delete(s.clients, c)
	s.mu.Unlock()
}

// close cancels the client's runs and ends its writer, and closes the socket.
func (c *client) close() {
	c.stopRuns()
	c.ws.Close()
}

// stopRuns cancels the client's runs and ends its writer, which sends
// close 1001 and closes the socket.
func (c *client) stopRuns() {
	c.cancel()
	c.mu.Lock()
	jobs := make([]*runq.Job, 0, len(c.jobs))
	for _, j := range c.jobs {
		jobs = append(jobs, j)
	}
	c.mu.Unlock()
	for _, j := range jobs {
		c.s.runs.Cancel(j)
	}
}

func (c *client) readLoop() {
	for {
		typ, data, err := c.ws.ReadMessage()
		if err != nil {
			return
		}
		c.ws.SetReadDeadline(time.Now().Add(c.s.pongWait))
		if int64(len(data)) > c.s.cfg.MaxMessageBytes {
			c.Send(runq.ErrorMsg{Type: "error", Message: fmt.Sprintf("message of %d bytes is too large: the limit is %d bytes", len(data), c.s.cfg.MaxMessageBytes)})
			continue
		}
		if typ != websocket.TextMessage {
			c.Send(runq.ErrorMsg{Type: "error", Message: "binary messages are not understood: send JSON text"})
			continue
		}
		var m inMsg
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		err = dec.Decode(&m)
		if err == nil && dec.More() {
			err = errors.New("more than one JSON value in one message")
		}
		if err != nil {
			c.Send(runq.ErrorMsg{Type: "error", ID: m.ID, Message: "malformed message: " + err.Error() + ` (want {"type":"run","id":"c1","cell":"..."} or {"type":"cancel","id":"c1"})`})
			continue
		}
		switch m.Type {
		case "run":
			c.run(m)
		case "cancel":
			c.cancelRun(m.ID)
		default:
			c.Send(runq.ErrorMsg{Type: "error", ID: m.ID, Message: fmt.Sprintf("unknown message type %q (want run or cancel)", m.Type)})
		}
	}
}

func (c *client) writeLoop() {
	defer c.s.wg.Done()
	ping := time.NewTicker(c.s.pongWait / 2)
	defer ping.Stop()
	for {
		select {
		case b := <-c.out:
			c.ws.SetWriteDeadline(time.Now().Add(writeWait))
			if err := c.ws.WriteMessage(websocket.TextMessage, b); err != nil {
				c.cancel()
				c.ws.Close()
				return
			}
		case <-ping.C:
			c.ws.SetWriteDeadline(time.Now().Add(writeWait))
			if err := c.ws.WriteMessage(websocket.PingMessage, nil); err != nil {
				c.cancel()
				c.ws.Close()
				return
			}
		case <-c.ctx.Done():
			// Deliver what is already queued, then close. Messages sent
			// after the cancel (a cancelled run's done) are dropped by
			// send; the page treats the closed socket as the end of its
			// runs and says the connection was lost.
			for {
				select {
				case b := <-c.out:
					c.ws.SetWriteDeadline(time.Now().Add(time.Second))
					if c.ws.WriteMessage(websocket.TextMessage, b) != nil {
						c.ws.Close()
						return
					}
				default:
					goingAway(c.ws)
					return
				}
			}
		}
	}
}

// goingAway tells the peer the server is shutting down (close 1001) and
// closes ws.
func goingAway(ws *websocket.Conn) {
	ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseGoingAway, ""), time.Now().Add(time.Second))
	ws.Close()
}

// Send queues v for the writer without blocking; it makes the client the
// runq.Sink of its own runs. Progress messages only take the first half of
// the buffer, so a burst of them never crowds out a result or done; past
// that they are dropped (the next one says the same, newer). If even a
// result or done does not fit, the client is not reading: it is
// disconnected, which cancels its runs.
func (c *client) Send(v any) {
	_, progress := v.(runq.ProgressMsg)
	c.sendBytes(web.MustMarshal(v), progress)
}

// sendBytes is Send for a message already encoded (a room run's messages
// are encoded once for the presenter and every follower).
func (c *client) sendBytes(b []byte, progress bool) {
	if c.ctx.Err() != nil {
		return
	}
	if hook := c.s.sentHook; hook != nil {
		hook(b)
	}
	if progress {
		if len(c.out) >= cap(c.out)/2 {
			return
		}
	}
	select {
	case c.out <- b:
	default:
		c.cancel()
	}
}

// forget drops j from the client's runs once it has finished.
func (c *client) forget(j *runq.Job) {
	c.mu.Lock()
	if c.jobs[j.ID] == j {
		delete(c.jobs, j.ID)
	}
	c.mu.Unlock()
}

// run handles a run message: check it, admit it as one of this client's
// jobs, and queue it. Each refusal is an error message, then done, except
// for a bad or busy id, which has no run of its own to end. A run the
// queue refuses hears why and done from the runner, on its own sink: this
// client, or the room for a presenter's run.
func (c *client) run(m inMsg) {
	if m.ID == "" || len(m.ID) > 128 {
		c.Send(runq.ErrorMsg{Type: "error", ID: m.ID, Message: "run: id must be 1 to 128 characters"})
		return
	}
	lines, specs, rr, ok := c.checkRun(m)
	if !ok {
		return
	}
	j, ok := c.admit(m, lines, specs)
	if !ok {
		return
	}
	rr.attach(j)
	// Submit checks the queue's cap and adds the job under one lock.
	if err := c.s.runs.Submit(j); err != nil {
		c.s.guard.Refused(c.addr, "run: "+err.Error())
	}
}

// refuse ends run id before it starts: an error saying msg, naming the
// cell's line when line >= 0, then done.
func (c *client) refuse(id string, line int, msg string) {
	e := runq.ErrorMsg{Type: "error", ID: id, Message: msg}
	if line >= 0 {
		e.Line = runq.LineP(line)
	}
	c.Send(e)
	c.Send(runq.DoneMsg{Type: "done", ID: id})
}

// checkRun checks a run message's token (the message's, else the URL's),
// its archive fields, its room (rr is nil without one; room_ws.go) and
// its cell: each line against the limits, and the whole cell, every
// round of it, against the budget (runq.CheckCell). It returns the cell's
// run lines and their specs; ok is false when it has refused the run.
func (c *client) checkRun(m inMsg) (lines []string, specs []*harness.Spec, rr *roomRun, ok bool) {
	tok := m.Token
	if tok == "" {
		tok = c.token
	}
	if ok, throttled := c.s.guard.TokenGuess(c.addr, tok, func() bool { return c.s.guard.TokenOK(tok) }); !ok {
		if throttled != "" {
			c.refuse(m.ID, -1, throttled)
			return nil, nil, nil, false
		}
		c.s.guard.Refused(c.addr, "run: no or a wrong token")
		c.refuse(m.ID, -1, errTokenRequired.Error())
		return nil, nil, nil, false
	}
	if err := checkRunExtras(m); err != nil {
		c.refuse(m.ID, -1, err.Error())
		return nil, nil, nil, false
	}
	rr, err := c.s.roomRunFor(c, m)
	if err != nil {
		c.refuse(m.ID, -1, err.Error())
		return nil, nil, nil, false
	}
	lines, specs, bad, err := runq.CheckCell(m.Cell, m.Repeat, c.s.cfg.Limits, c.s.cfg.Budget, c.s.cfg.MaxLinesPerCell)
	if err == nil {
		bad, err = c.s.checkSource(c, m, specs)
	}
	if err != nil {
		c.refuse(m.ID, bad, err.Error())
		return nil, nil, nil, false
	}
	return lines, specs, rr, true
}

// admit makes a checked run one of this client's jobs, within the caps on
// runs per client and per address. ok is false when it has refused it.
func (c *client) admit(m inMsg, lines []string, specs []*harness.Spec) (j *runq.Job, ok bool) {
	c.mu.Lock()
	if _, busy := c.jobs[m.ID]; busy {
		c.mu.Unlock()
		c.Send(runq.ErrorMsg{Type: "error", ID: m.ID, Message: fmt.Sprintf("run %q is already queued or running: cancel it first", m.ID)})
		return nil, false
	}
	if n := len(c.jobs); n >= c.s.cfg.MaxQueuedPerClient {
		c.mu.Unlock()
		c.s.guard.Refused(c.addr, fmt.Sprintf("run: the socket already has %d runs queued or running (-max-queued)", n))
		c.refuse(m.ID, -1, fmt.Sprintf("you already have %d runs queued or running; the limit is %d", n, c.s.cfg.MaxQueuedPerClient))
		return nil, false
	}
	release, err := c.s.guard.HoldAddr(c.addr)
	if err != nil {
		c.mu.Unlock()
		c.s.guard.Refused(c.addr, err.Error())
		c.refuse(m.ID, -1, err.Error())
		return nil, false
	}
	class := runq.Cell
	if c.follower {
		class = runq.Follower // waits behind the presenter's runs
	}
	j = runq.NewJob(c.ctx)
	j.ID, j.Lines, j.Specs, j.Out, j.Class, j.Repeat, j.Source = m.ID, lines, specs, c, class, m.Repeat, m.Source
	j.From = runq.Origin{Source: "cell", Lesson: m.Lesson, Cell: m.CellID, Browser: m.Browser, Own: c.s.ownLines(m.Lesson, m.CellID, lines)}
	j.Release = func() {
		c.forget(j)
		release()
	}
	c.jobs[m.ID] = j
	c.mu.Unlock()
	return j, true
}

func (c *client) cancelRun(id string) {
	c.mu.Lock()
	j := c.jobs[id]
	c.mu.Unlock()
	if j == nil {
		c.Send(runq.ErrorMsg{Type: "error", ID: id, Message: fmt.Sprintf("cancel: no run %q is queued or running", id)})
		return
	}
	c.s.runs.Cancel(j)
}
