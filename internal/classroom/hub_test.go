package classroom

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// hubServer serves one hub: every websocket that connects joins it.
func hubServer(t *testing.T, h *Hub) *httptest.Server {
	t.Helper()
	up := websocket.Upgrader{}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		if tc, ok := ws.NetConn().(*net.TCPConn); ok {
			tc.SetWriteBuffer(4096)
		}
		f, err := h.Join(ws)
		if err != nil {
			ws.Close()
			return
		}
		for {
			if _, _, err := ws.ReadMessage(); err != nil {
				f.Close(0, "")
				return
			}
		}
	}))
	t.Cleanup(ts.Close)
	return ts
}

// smallDialer dials with a small receive buffer, so a client that does
// not read stalls its follower quickly.
var smallDialer = &websocket.Dialer{NetDialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
	c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetReadBuffer(4096)
	}
	return c, err
}}

// TestHubFanout: every message reaches every live follower in order; a
// follower that never reads is closed with 1008 and forgotten while the
// others go on; the queued bytes stay under the cap throughout.
func TestHubFanout(t *testing.T) {
	lim := HubLimits{MaxMessages: 64, MaxBytes: 32 << 10}
	h := NewHub(lim, nil)
	ts := hubServer(t, h)
	u := "ws" + strings.TrimPrefix(ts.URL, "http")
	const live, total = 20, 400
	var got [live]atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, live)
	for i := range live {
		c, _, err := websocket.DefaultDialer.Dial(u, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range total {
				_, b, err := c.ReadMessage()
				if err != nil {
					errs <- fmt.Errorf("follower %d: after %d messages: %v", i, n, err)
					return
				}
				if want := fmt.Sprintf("m%04d", n); !strings.HasPrefix(string(b), want) {
					errs <- fmt.Errorf("follower %d: message %d is %.5s, want %s", i, n, b, want)
					return
				}
				got[i].Add(1)
			}
		}()
	}
	stalled, _, err := smallDialer.Dial(u, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer stalled.Close()
	waitUntil(t, "every follower joined", func() bool { return h.Count() == live+1 })
	pad := strings.Repeat("x", 1000)
	maxQueued := int64(0)
	for n := range total {
		h.Broadcast([]byte(fmt.Sprintf("m%04d%s", n, pad)))
		maxQueued = max(maxQueued, h.QueuedBytes())
		if n%16 == 15 { // let the live followers catch up; the stalled one never does
			waitUntil(t, "the live followers read the burst", func() bool {
				for i := range live {
					if got[i].Load() < int64(n+1) {
						return false
					}
				}
				return true
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	waitUntil(t, "the stalled follower is forgotten", func() bool { return h.Count() == live })
	if h.Dropped() != 1 {
		t.Errorf("Dropped = %d, want 1 (the stalled follower)", h.Dropped())
	}
	if limit := int64((live + 1) * lim.MaxBytes); maxQueued > limit {
		t.Errorf("queued bytes reached %d, above the cap %d", maxQueued, limit)
	}
	// The stalled client, reading at last, finds its socket closed: what
	// was in flight, then the 1008 frame, or, when even that could not
	// be written to a socket nobody read, the connection cut (1006).
	stalled.SetReadDeadline(time.Now().Add(30 * time.Second))
	for {
		if _, _, err := stalled.ReadMessage(); err != nil {
			if ce, ok := err.(*websocket.CloseError); ok && ce.Code != CloseTooSlow && ce.Code != websocket.CloseAbnormalClosure {
				t.Errorf("stalled follower closed with %d, want %d (or 1006)", ce.Code, CloseTooSlow)
			}
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Error("the stalled follower's socket was not closed")
			}
			break
		}
	}
	h.Close(CloseNormal, "done", []byte(`{"type":"closed"}`))
	if h.Count() != 0 || h.QueuedBytes() != 0 {
		t.Errorf("after Close: %d followers, %d bytes queued; want none", h.Count(), h.QueuedBytes())
	}
	if _, err := h.Join(nil); err != ErrClosed {
		t.Errorf("Join after Close: got %v, want ErrClosed", err)
	}
}

// TestHubCloseSendsFinal: Close delivers what is queued, the final
// message and the close frame.
func TestHubCloseSendsFinal(t *testing.T) {
	h := NewHub(HubLimits{}, nil)
	ts := hubServer(t, h)
	c, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(ts.URL, "http"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	waitUntil(t, "the follower joined", func() bool { return h.Count() == 1 })
	h.Broadcast([]byte(`{"type":"section","section":1}`))
	h.Close(CloseNormal, "room closed", []byte(`{"type":"closed"}`))
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	var got []string
	for {
		_, b, err := c.ReadMessage()
		if err != nil {
			if !websocket.IsCloseError(err, CloseNormal) {
				t.Errorf("close: got %v, want 1000", err)
			}
			break
		}
		got = append(got, string(b))
	}
	if strings.Join(got, " ") != `{"type":"section","section":1} {"type":"closed"}` {
		t.Errorf("got %q, want the section then closed", got)
	}
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}
