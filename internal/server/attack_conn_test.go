package server

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"kvlab/internal/browsertest"
)

// queueRuns opens n sockets on ts and queues one longRun on each.
func queueRuns(t *testing.T, ts *httptest.Server, n int) {
	t.Helper()
	for range n {
		c := dial(t, ts, "", nil)
		c.run("w", longRun)
		c.until("w", "queued")
	}
}

// oneMoreRun asks for one more longRun on a new socket and returns the
// first message of the answer: a refusal, when the queue is full.
func oneMoreRun(t *testing.T, ts *httptest.Server) msg {
	t.Helper()
	c := dial(t, ts, "", nil)
	c.run("over", longRun)
	return c.until("over", "done")[0]
}

// One student opening many sockets cannot take the whole queue: runs are
// counted per remote address too (default 8), and the refusal is logged
// once a minute per address. Before, one address could fill all 64 slots.
func TestRunsCappedPerAddress(t *testing.T) {
	var log browsertest.Buffer
	s := newServer(t, func(c *Config) { c.Log = &log })
	ts := startServer(t, s)
	first := dial(t, ts, "", nil)
	first.run("r", longRun)
	first.until("r", "started")
	queueRuns(t, ts, 7) // one socket each, under the per-socket cap
	for range 2 {
		if m := oneMoreRun(t, ts); m.str("type") != "error" || !strings.Contains(m.str("message"), "-max-queued-per-address") {
			t.Fatalf("got %v, want an error naming -max-queued-per-address", m)
		}
	}
	if got := queueLen(s); got != 7 {
		t.Errorf("got %d waiting, want 7", got)
	}
	if n := strings.Count(log.String(), "refused 127.0.0.1: "); n != 1 {
		t.Errorf("got %d refusal lines for 127.0.0.1 in the log, want 1 (one a minute); the log:\n%s", n, log.String())
	}
	// The address's places come back as its runs end.
	first.send(map[string]string{"type": "cancel", "id": "r"})
	first.until("r", "done")
	c := dial(t, ts, "", nil)
	c.run("again", "bench -engine null -ops 10")
	if m := c.next(); m.str("type") != "queued" {
		t.Errorf("after one run ended: got %v, want queued", m)
	}
}

// serveReal serves s with the http.Server and listener labserver serve
// uses, on a loopback port.
func serveReal(t *testing.T, s *Server, maxConns, perAddr int) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := s.HTTPServer()
	go hs.Serve(s.guard.LimitListener(ln, maxConns, perAddr))
	t.Cleanup(func() { hs.Close() })
	return ln.Addr().String()
}

// A GET / whose declared body trickles in one byte at a time is cut off
// by the read timeout. Before, 50 such connections were still open after
// 150 s.
func TestSlowBodyOnPlainRouteCutOff(t *testing.T) {
	s := newServer(t, nil)
	s.readTimeout = time.Second
	addr := serveReal(t, s, 100, 100)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: %s\r\nContent-Length: 200000\r\n\r\n", addr)
	closed := make(chan struct{})
	go func() {
		io.Copy(io.Discard, c) // the page, then EOF when the server hangs up
		close(closed)
	}()
	t0 := time.Now()
	for {
		select {
		case <-closed:
			t.Logf("the server closed the trickling connection after %v (read timeout 1s)", time.Since(t0).Round(10*time.Millisecond))
			return
		case <-time.After(200 * time.Millisecond):
		}
		if time.Since(t0) > 30*time.Second {
			t.Fatal("the connection was still open after 30 s of a trickling body, want it closed by the 1 s read timeout")
		}
		c.Write([]byte("x"))
	}
}

// The timeouts are for the plain routes: a websocket stays open and
// works past them.
func TestWSOutlivesHTTPTimeouts(t *testing.T) {
	s := newServer(t, nil)
	s.readTimeout, s.writeTimeout = 300*time.Millisecond, 300*time.Millisecond
	addr := serveReal(t, s, 100, 100)
	c := dial(t, &httptest.Server{URL: "http://" + addr}, "", nil)
	time.Sleep(time.Second)
	c.run("x", "bench -engine null -ops 100")
	if ms := c.until("x", "done"); !strings.Contains(types(ms), "result") {
		t.Errorf("got %q, want a result after the HTTP timeouts passed", types(ms))
	}
}

// Open connections are capped in all and per address; one over a cap is
// told why with a 503, and the refusal is logged.
func TestConnectionCaps(t *testing.T) {
	for _, tt := range []struct {
		name          string
		max, perAddr  int
		want, wantLog string
	}{
		{"in all", 2, 10, "-max-conns)", "connections are open, the most the server keeps"},
		{"per address", 10, 2, "-max-conns-per-address", "from this address are open"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var log browsertest.Buffer
			s := newServer(t, func(c *Config) { c.Log = &log })
			addr := serveReal(t, s, tt.max, tt.perAddr)
			for range 2 {
				c, err := net.Dial("tcp", addr)
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
			}
			time.Sleep(100 * time.Millisecond) // both accepted
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(30 * time.Second))
			fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: %s\r\n\r\n", addr)
			r, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatalf("reading the reply: %v", err)
			}
			b, _ := io.ReadAll(r.Body)
			if r.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(b), tt.want) {
				t.Errorf("got %d %q, want 503 naming %s", r.StatusCode, b, tt.want)
			}
			if !strings.Contains(log.String(), "refused 127.0.0.1: ") || !strings.Contains(log.String(), tt.wantLog) {
				t.Errorf("the log says %q, want a refusal of 127.0.0.1 saying %q", log.String(), tt.wantLog)
			}
		})
	}
}
