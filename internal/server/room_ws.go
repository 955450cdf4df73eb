package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/gorilla/websocket"

	"kvlab/internal/archive"
	"kvlab/internal/classroom"
	"kvlab/internal/server/guard"
	"kvlab/internal/server/runq"
	"kvlab/internal/server/web"
)

// The follower socket, GET /room/{code}/ws, and the presenter's runs in
// a room.
//
// A follower's socket is written by the room's hub only (one writer per
// follower, a bounded queue; see package classroom). What the follower
// sends is bounded (followerMaxMessage bytes, followerMaxRate messages a
// second; else close 1008) and is only ever a follower's: a run (when the
// presenter allowed runs), queued behind the presenter's runs with the
// usual caps and answered to that follower alone, or a cancel of its own
// run. The presenter uses the normal /ws with "room" (and "poll") on a
// run message: every message of that run is encoded once and goes to the
// presenter and, the same bytes, to every follower.

const (
	followerMaxMessage = 4 << 10
	followerMaxRate    = 20 // messages a second
)

type roomRunMsg struct {
	Type   string `json:"type"` // "room_run"
	ID     string `json:"id"`
	CellID string `json:"cell_id"`
	Cell   string `json:"cell"`
}

// roomRun is a presenter's run in a room: the job's sink. It is safe for
// concurrent use (its fields never change after roomRunFor).
type roomRun struct {
	s     *Server
	c     *client
	room  *classroom.Room
	poll  *classroom.Poll // nil unless the run measures a poll
	m     inMsg
	quizQ string // the poll's quiz
}

// roomRunFor checks a run message's "room" and "poll": the room is open,
// the client is its presenter (a follower proxy never is), and the poll
// is open to measuring. nil, nil for a run outside a room.
func (s *Server) roomRunFor(c *client, m inMsg) (*roomRun, error) {
	if m.Room == "" && m.Poll == "" {
		return nil, nil
	}
	if c.follower {
		return nil, errors.New("a follower cannot run for the room: only the presenter's runs are shown to the room")
	}
	if m.Room == "" {
		return nil, errors.New(`poll: a run that measures a poll must name its room ("room":"XXXXX-XXXXX")`)
	}
	code, err := classroom.ParseCode(m.Room)
	var room *classroom.Room
	if err == nil {
		room = s.rooms.reg.Get(code, time.Now())
	}
	if room == nil {
		return nil, errors.New(s.noRoom(m.Room))
	}
	if _, why := s.guard.PresenterError(c.addr, room, "room "+classroom.FormatCode(room.Code), m.Presenter); why != "" {
		return nil, errors.New(why)
	}
	rr := &roomRun{s: s, c: c, room: room, m: m}
	room.Lock()
	defer room.Unlock()
	if m.Poll != "" {
		p := room.Poll(m.Poll)
		switch {
		case p == nil:
			return nil, fmt.Errorf("poll: room %s has no poll %q", classroom.FormatCode(room.Code), m.Poll)
		case p.State != classroom.PollOpen:
			return nil, fmt.Errorf("poll %s (%s) is %s: its measurement already started; open a new poll for the quiz to measure again", p.Key, p.Quiz, p.State)
		}
		q, _, err := s.pollQuiz(room, p.Quiz)
		if err != nil {
			return nil, err
		}
		if m.CellID != "" && m.CellID != q.Cell {
			return nil, fmt.Errorf("poll %s measures cell %s, not %s", p.Key, q.Cell, m.CellID)
		}
		rr.poll, rr.quizQ = p, q.ID
	}
	s.touch(context.Background(), room)
	return rr, nil
}

// attach makes j's messages go to the room, a refusal included, and
// queues it as the presenter's: followers first hear room_run; a poll's
// predictions close now, before j is queued. A nil rr does nothing.
func (rr *roomRun) attach(j *runq.Job) {
	if rr == nil {
		return
	}
	j.Out, j.Refused, j.Class = rr, rr.refused, runq.Presenter
	rr.s.broadcast(rr.room, roomRunMsg{Type: "room_run", ID: rr.m.ID, CellID: rr.m.CellID, Cell: rr.m.Cell})
	if rr.poll == nil {
		return
	}
	rr.room.Lock()
	rr.poll.StartMeasuring(time.Now().UTC())
	rr.s.savePoll(rr.poll)
	rr.room.Unlock()
	// Ballots accepted before the poll closed are stored before the run
	// is queued (at most one group commit away).
	rr.poll.Pending.Wait()
	rr.room.Lock()
	v := rr.poll.View()
	rr.room.Unlock()
	rr.s.broadcast(rr.room, pollMsg{Type: "poll", Poll: v})
	rr.s.spawn(func() { rr.measured(j) })
}

// refused tells the presenter and every follower (they heard room_run)
// why the queue refused the run (done follows, to the same audience); a poll it was to measure opens again,
// since nothing was measured, and the room hears the poll's new state.
func (rr *roomRun) refused(err error) {
	msg := "the run queue refused this run: " + err.Error()
	if rr.poll == nil {
		rr.Send(runq.ErrorMsg{Type: "error", ID: rr.m.ID, Message: msg})
		return
	}
	rr.room.Lock()
	reopened := rr.poll.Reopen()
	if reopened {
		rr.s.savePoll(rr.poll)
		msg += fmt.Sprintf("; poll %s is open again: predictions are taken until the presenter measures again", rr.poll.Key)
	}
	v := rr.poll.View()
	rr.room.Unlock()
	rr.Send(runq.ErrorMsg{Type: "error", ID: rr.m.ID, Message: msg})
	rr.s.broadcast(rr.room, pollMsg{Type: "poll", Poll: v})
}

// Send implements runq.Sink: one encoding for the presenter and the room.
func (rr *roomRun) Send(v any) {
	b := web.MustMarshal(v)
	_, progress := v.(runq.ProgressMsg)
	rr.c.sendBytes(b, progress)
	rr.s.broadcastBytes(rr.room, b)
}

// measured waits for the poll's run and, when it gave its results,
// evaluates the quiz's answer on them and closes the poll. A failed or
// cancelled run leaves the poll measuring.
func (rr *roomRun) measured(j *runq.Job) {
	<-j.Done()
	if j.Err() != nil || len(j.Results()) != len(j.Lines) {
		return
	}
	q, _, err := rr.s.pollQuiz(rr.room, rr.quizQ)
	var v float64
	if err == nil {
		v, err = quizAnswer(q, j.Results())
	}
	if err != nil {
		rr.s.log.Printf("room %s: poll %s: %v", classroom.FormatCode(rr.room.Code), rr.poll.Key, err)
		return
	}
	var runID int64
	if n := len(j.RunIDs()); n > 0 {
		runID = j.RunIDs()[n-1]
	}
	rr.room.Lock()
	rr.poll.Finish(v, runID)
	rr.s.savePoll(rr.poll)
	view := rr.poll.View()
	rr.room.Unlock()
	rr.s.broadcast(rr.room, pollMsg{Type: "poll", Poll: view})
}

// savePoll stores p's progress. REQUIRES: its room locked.
func (s *Server) savePoll(p *classroom.Poll) {
	ap := &archive.Poll{ID: p.ArchID, MeasureStarted: p.MeasureStarted, Measured: p.Measured, RunID: p.RunID}
	if err := s.arch.UpdatePoll(context.Background(), ap); err != nil {
		s.log.Printf("poll %s: %v", p.Key, err)
	}
}

func (s *Server) handleRoomWS(w http.ResponseWriter, r *http.Request) {
	room := s.followerRoom(w, r)
	if room == nil {
		return
	}
	up := s.upgrader()
	ws, err := up.Upgrade(w, r, nil)
	if err != nil {
		return // Upgrade has replied
	}
	f, err := room.Hub.Join(ws)
	if err != nil {
		ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(classroom.CloseNormal, "room closed"), time.Now().Add(time.Second))
		ws.Close()
		return
	}
	f.Send(web.MustMarshal(roomMsg{Type: "room", roomState: lockedStateOf(room)}))
	fr := &followerReader{s: s, room: room, f: f, ws: ws, addr: guard.RemoteHost(r)}
	fr.read()
	if fr.proxy != nil {
		fr.proxy.stopRuns()
	}
	f.Close(0, "")
	<-f.Done()
}

// followerReader reads one follower's socket.
type followerReader struct {
	s    *Server
	room *classroom.Room
	f    *classroom.Follower
	ws   *websocket.Conn
	addr string
	// proxy runs the follower's own runs through the run queue as a
	// client without a socket of its own; nil until the first run.
	proxy *client
}

func (fr *followerReader) read() {
	ws, pong := fr.ws, fr.s.pongWait
	ws.SetReadLimit(4 * followerMaxMessage)
	ws.SetReadDeadline(time.Now().Add(pong))
	ws.SetPongHandler(func(string) error { return ws.SetReadDeadline(time.Now().Add(pong)) })
	window, n := time.Now(), 0
	for {
		typ, data, err := ws.ReadMessage()
		if err != nil {
			return
		}
		ws.SetReadDeadline(time.Now().Add(pong))
		if now := time.Now(); now.Sub(window) >= time.Second {
			window, n = now, 0
		}
		n++
		why := ""
		switch {
		case n > followerMaxRate:
			why = fmt.Sprintf("more than %d messages a second", followerMaxRate)
		case len(data) > followerMaxMessage:
			why = fmt.Sprintf("a message of %d bytes; the limit is %d", len(data), followerMaxMessage)
		case typ != websocket.TextMessage:
			why = "a binary message; send JSON text"
		}
		if why != "" {
			fr.s.guard.Refused(fr.addr, "room socket: "+why)
			drain(ws)
			fr.f.Close(classroom.CloseTooSlow, why)
			return
		}
		fr.handle(data)
	}
}

// drain reads and drops, for a moment, what a refused follower has
// already sent. Closing a socket with unread bytes in its receive buffer
// makes the kernel reset the connection, and the reset can reach the
// follower before the close frame that says why it was refused.
func drain(ws *websocket.Conn) {
	ws.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	for {
		_, r, err := ws.NextReader()
		if err != nil {
			return
		}
		if _, err := io.Copy(io.Discard, r); err != nil {
			return
		}
	}
}

// handle acts on one follower message: a run (when allowed) or a cancel.
func (fr *followerReader) handle(data []byte) {
	var m inMsg
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		fr.reply(runq.ErrorMsg{Type: "error", ID: m.ID, Message: "malformed message: " + err.Error() + ` (want {"type":"run","id":"c1","cell":"..."} or {"type":"cancel","id":"c1"})`})
		return
	}
	switch m.Type {
	case "run":
		fr.room.Lock()
		allowed := fr.room.AllowRuns
		fr.room.Unlock()
		switch {
		case !allowed:
			fr.reply(runq.ErrorMsg{Type: "error", ID: m.ID, Message: "the presenter has not allowed runs in this room"})
		case m.Room != "" || m.Poll != "" || m.Token != "" || m.Presenter != "":
			fr.reply(runq.ErrorMsg{Type: "error", ID: m.ID, Message: "a follower's run carries no room, poll or token: it runs for this follower only"})
		default:
			fr.client().run(m)
		}
	case "cancel":
		if fr.proxy == nil {
			fr.reply(runq.ErrorMsg{Type: "error", ID: m.ID, Message: fmt.Sprintf("cancel: no run %q is queued or running", m.ID)})
			return
		}
		fr.proxy.cancelRun(m.ID)
	default:
		fr.reply(runq.ErrorMsg{Type: "error", ID: m.ID, Message: fmt.Sprintf("unknown message type %q (want run or cancel)", m.Type)})
	}
}

func (fr *followerReader) reply(v any) { fr.f.Send(web.MustMarshal(v)) }

// client returns the follower's run proxy, starting it on first use: a
// client without a socket whose messages a forwarder hands to the
// follower's queue. Its runs are cancelled when the follower leaves.
func (fr *followerReader) client() *client {
	if fr.proxy != nil {
		return fr.proxy
	}
	s := fr.s
	c := &client{s: s, out: make(chan []byte, outBuffer), jobs: map[string]*runq.Job{}, token: s.cfg.Token, addr: fr.addr, follower: true}
	c.ctx, c.cancel = context.WithCancel(s.ctx)
	fr.proxy = c
	s.spawn(func() {
		for {
			select {
			case b := <-c.out:
				fr.f.Send(b)
			case <-c.ctx.Done():
				return
			case <-fr.f.Done():
				c.cancel()
				return
			}
		}
	})
	return c
}
