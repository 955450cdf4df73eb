package server

import (
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// On shutdown every websocket client is told the server is going away
// (close 1001), idle or running, instead of seeing the connection drop
// (1006).
func TestShutdownClosesWith1001(t *testing.T) {
	s := newServer(t, nil)
	ts := startServer(t, s)
	idle := dial(t, ts, "", nil)
	busy := dial(t, ts, "", nil)
	busy.run("x", longRun)
	busy.until("x", "started")
	s.Close()
	for name, c := range map[string]*wsClient{"idle": idle, "running": busy} {
		c.conn.SetReadDeadline(time.Now().Add(30 * time.Second))
		var err error
		for err == nil {
			_, _, err = c.conn.ReadMessage()
		}
		if !websocket.IsCloseError(err, websocket.CloseGoingAway) {
			t.Errorf("%s client: got %v, want close 1001 (going away)", name, err)
		}
	}
}

// A socket whose upgrade finishes after Close has begun (the window
// between the handshake and the server counting the client) is told the
// same: close 1001, not a dropped connection.
func TestShutdownClosesLateSocketWith1001(t *testing.T) {
	s := newServer(t, nil)
	ts := startServer(t, s)
	s.Close()
	c := dial(t, ts, "", nil)
	c.conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	_, _, err := c.conn.ReadMessage()
	if !websocket.IsCloseError(err, websocket.CloseGoingAway) {
		t.Errorf("got %v, want close 1001 (going away)", err)
	}
}
