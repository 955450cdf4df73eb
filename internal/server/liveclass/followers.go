package liveclass

import (
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/gorilla/websocket"

	"kvlab/internal/classroom"
	"kvlab/internal/server/guard"
	"kvlab/internal/server/run"
	"kvlab/internal/server/runq"
	"kvlab/internal/server/web"
)

// The follower socket, GET /room/{code}/ws.
//
// A follower's socket is written by the room's hub only (one writer per
// follower, a bounded queue; see package classroom). What the follower
// sends is bounded (FollowerMaxMessage bytes, FollowerMaxRate messages a
// second; else close 1008) and is only ever a follower's: a run (when the
// presenter allowed runs), queued behind the presenter's runs with the
// usual caps and answered to that follower alone, or a cancel of its own
// run. The presenter's runs reach followers through the room's fan-out
// sink (presenter.go).

// The follower socket's bounds: a larger message, or more of them in a
// second, closes it (1008).
const (
	FollowerMaxMessage = 4 << 10
	FollowerMaxRate    = 20 // messages a second
)

func (rs roomHTTP) handleRoomWS(w http.ResponseWriter, r *http.Request) {
	room := rs.followerRoom(w, r)
	if room == nil {
		return
	}
	ws, err := rs.cfg.Upgrader.Upgrade(w, r, nil)
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
	fr := &followerReader{rs: rs.Rooms, room: room, f: f, ws: ws, addr: guard.RemoteHost(r)}
	fr.read()
	if fr.owner != nil {
		fr.owner.Stop()
	}
	f.Close(0, "")
	<-f.Done()
}

// followerReader reads one follower's socket.
type followerReader struct {
	rs   *Rooms
	room *classroom.Room
	f    *classroom.Follower
	ws   *websocket.Conn
	addr string
	// owner owns the follower's own runs (runs); nil until the first.
	owner *run.Owner
}

func (fr *followerReader) read() {
	ws, pong := fr.ws, fr.rs.cfg.PongWait
	ws.SetReadLimit(4 * FollowerMaxMessage)
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
		case n > FollowerMaxRate:
			why = fmt.Sprintf("more than %d messages a second", FollowerMaxRate)
		case len(data) > FollowerMaxMessage:
			why = fmt.Sprintf("a message of %d bytes; the limit is %d", len(data), FollowerMaxMessage)
		case typ != websocket.TextMessage:
			why = "a binary message; send JSON text"
		}
		if why != "" {
			fr.rs.cfg.Guard.Refused(fr.addr, "room socket: "+why)
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
	m, err := run.Decode(data)
	if err != nil {
		fr.reply(runq.ErrorMsg{Type: "error", ID: m.ID, Message: err.Error()})
		return
	}
	if m.Type == "run" {
		fr.room.Lock()
		allowed := fr.room.AllowRuns
		fr.room.Unlock()
		switch {
		case !allowed:
			fr.reply(runq.ErrorMsg{Type: "error", ID: m.ID, Message: "the presenter has not allowed runs in this room"})
			return
		case m.Room != "" || m.Poll != "" || m.Token != "" || m.Presenter != "":
			fr.reply(runq.ErrorMsg{Type: "error", ID: m.ID, Message: "a follower's run carries no room, poll or token: it runs for this follower only"})
			return
		}
	}
	fr.runs().Handle(m)
}

func (fr *followerReader) reply(v any) { fr.f.Send(web.MustMarshal(v)) }

// runs returns the owner of the follower's own runs, made on first use:
// their messages go to this follower alone, they wait behind the
// presenter's and need no token, and they are cancelled when the
// follower leaves.
func (fr *followerReader) runs() *run.Owner {
	if fr.owner == nil {
		fr.owner = fr.rs.cfg.Runs.Owner(followerSink{fr.f}, fr.addr, "", true)
	}
	return fr.owner
}

// followerSink sends a follower's own runs' messages to that follower,
// through the room hub's bounded queue (which drops a follower too slow
// to read them).
type followerSink struct{ f *classroom.Follower }

// Send implements runq.Sink.
func (fs followerSink) Send(v any) { fs.f.Send(web.MustMarshal(v)) }

// SendBytes implements run.Sink.
func (fs followerSink) SendBytes(b []byte, _ bool) { fs.f.Send(b) }
