package server

import (
	"fmt"
	"net/http"
	"time"

	"github.com/gorilla/websocket"

	"kvlab/internal/server/guard"
	"kvlab/internal/server/run"
	"kvlab/internal/server/runq"
	"kvlab/internal/server/web"
)

// The run websocket's connections; their messages are package run's
// (its doc has the protocol).
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

// client is one websocket connection: its socket and writer, and the
// runs it owns (a run.Owner), whose sink it is. It is safe for concurrent
// use. Its runs' owner's lifetime is the connection's (package doc,
// Contexts); a disconnect, a client that stops reading and Close end it.
type client struct {
	s    *Server
	runs *run.Owner
	ws   *websocket.Conn
	out  chan []byte // to the writer; never closed
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
	c := &client{s: s, ws: ws, out: make(chan []byte, outBuffer)}
	c.runs = s.cells.Owner(c, guard.RemoteHost(r), r.URL.Query().Get("token"), false)
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
	c.runs.Stop()
	c.ws.Close()
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
		c.runs.Receive(data)
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
				c.runs.Abandon()
				c.ws.Close()
				return
			}
		case <-ping.C:
			c.ws.SetWriteDeadline(time.Now().Add(writeWait))
			if err := c.ws.WriteMessage(websocket.PingMessage, nil); err != nil {
				c.runs.Abandon()
				c.ws.Close()
				return
			}
		case <-c.runs.Done():
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
	c.SendBytes(web.MustMarshal(v), progress)
}

// SendBytes is Send for a message already encoded (a room run's messages
// are encoded once for the presenter and every follower): run.Sink.
func (c *client) SendBytes(b []byte, progress bool) {
	if !c.runs.Alive() {
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
		c.runs.Abandon()
	}
}
