package server

import (
	"bytes"
	"encoding/json"
	"flag"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"kvlab/harness"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// testLimits lets a null-engine run go on for a few seconds, so tests can
// cancel it and watch it queue others.
func testLimits() harness.Limits {
	l := DefaultLimits()
	l.MaxOps = 1_000_000_000
	return l
}

func newServer(t testing.TB, mod func(*Config)) *Server {
	t.Helper()
	cfg := Config{Lessons: os.DirFS("testdata/lessons"), DataDir: t.TempDir(), Limits: testLimits()}
	if mod != nil {
		mod(&cfg)
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// startServer serves s over real HTTP; Cleanup closes s first, then the listener.
func startServer(t testing.TB, s *Server) *httptest.Server {
	t.Helper()
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	t.Cleanup(func() { s.Close() })
	return ts
}

func get(t *testing.T, s http.Handler, path string, hdr ...string) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest("GET", "http://localhost"+path, nil)
	if strings.Contains(path, "%") || strings.Contains(path, "..") {
		r.URL.RawPath = ""
		r.RequestURI = path
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		r.Header.Set(hdr[i], hdr[i+1])
	}
	w := httptest.NewRecorder()
	s.ServeHTTP(w, r)
	return w
}

// wsClient is a test websocket client.
type wsClient struct {
	t    testing.TB
	conn *websocket.Conn
}

type msg map[string]any

func (m msg) str(k string) string { s, _ := m[k].(string); return s }
func (m msg) num(k string) float64 {
	f, ok := m[k].(float64)
	if !ok {
		return -1
	}
	return f
}

func dial(t testing.TB, ts *httptest.Server, query string, hdr http.Header) *wsClient {
	t.Helper()
	return dialPath(t, ts, "/ws"+query, hdr)
}

// dialPath opens a websocket to path on ts, closed when the test ends.
func dialPath(t testing.TB, ts *httptest.Server, path string, hdr http.Header) *wsClient {
	t.Helper()
	u := "ws" + strings.TrimPrefix(ts.URL, "http") + path
	c, resp, err := websocket.DefaultDialer.Dial(u, hdr)
	if err != nil {
		code := 0
		if resp != nil {
			code = resp.StatusCode
		}
		t.Fatalf("dial %s: %v (HTTP %d)", u, err, code)
	}
	t.Cleanup(func() { c.Close() })
	return &wsClient{t: t, conn: c}
}

// jsonBytes is v as a message body: a string as it is (so a test can send
// malformed JSON), anything else encoded.
func jsonBytes(v any) []byte {
	if s, ok := v.(string); ok {
		return []byte(s)
	}
	b, _ := json.Marshal(v)
	return b
}

func (c *wsClient) send(v any) {
	c.t.Helper()
	if err := c.conn.WriteMessage(websocket.TextMessage, jsonBytes(v)); err != nil {
		c.t.Fatalf("send: %v", err)
	}
}

func (c *wsClient) run(id, cell string) {
	c.send(map[string]string{"type": "run", "id": id, "cell": cell})
}

// next reads one message. The deadline only guards against a hang.
func (c *wsClient) next() msg {
	c.t.Helper()
	c.conn.SetReadDeadline(time.Now().Add(90 * time.Second))
	_, b, err := c.conn.ReadMessage()
	if err != nil {
		c.t.Fatalf("read: %v", err)
	}
	var m msg
	if err := json.Unmarshal(b, &m); err != nil {
		c.t.Fatalf("message %s: %v", b, err)
	}
	return m
}

// until reads messages up to and including the first of type typ for id.
func (c *wsClient) until(id, typ string) []msg {
	c.t.Helper()
	var out []msg
	for {
		m := c.next()
		out = append(out, m)
		if m.str("id") == id && m.str("type") == typ {
			return out
		}
	}
}

// busyServer starts a server whose disk is held by one client's run
// "long" (already started), so whatever is asked for next has to queue.
func busyServer(t *testing.T) (*Server, *httptest.Server, *wsClient) {
	t.Helper()
	return busyServerWith(t, nil)
}

// busyServerWith is busyServer with opt applied to its Config.
func busyServerWith(t *testing.T, opt func(*Config)) (*Server, *httptest.Server, *wsClient) {
	t.Helper()
	s := newServer(t, opt)
	ts := startServer(t, s)
	c := dial(t, ts, "", nil)
	c.run("long", longRun)
	c.until("long", "started")
	return s, ts, c
}

// fullQueueServer starts a server whose run queue is full: one run holds
// the disk and one waits, the most it keeps waiting (maxWaiting 1); both
// come from this machine's address.
func fullQueueServer(t *testing.T) (*Server, *httptest.Server) {
	t.Helper()
	s := newServer(t, func(c *Config) { c.maxWaiting = 1 })
	ts := startServer(t, s)
	c := dial(t, ts, "", nil)
	c.run("long", longRun)
	c.until("long", "started")
	queueRuns(t, ts, 1)
	return s, ts
}

// checkNoRunDirs fails the test when a run directory is left in dataDir.
func checkNoRunDirs(t *testing.T, dataDir string) {
	t.Helper()
	ents, _ := os.ReadDir(filepath.Join(dataDir, "runs"))
	if len(ents) != 0 {
		t.Errorf("got %d leftover run directories, want 0", len(ents))
	}
}

func types(ms []msg) string {
	var out []string
	for _, m := range ms {
		t := m.str("type")
		if len(out) > 0 && t == "progress" && out[len(out)-1] == "progress" {
			continue
		}
		out = append(out, t)
	}
	return strings.Join(out, " ")
}

// queueLen is the number of waiting jobs.
func queueLen(s *Server) int {
	n, _ := s.runs.Counts()
	return n
}

// postJSON posts body to url and decodes the reply into out.
func postJSON(t *testing.T, url string, body []byte, out any) int {
	t.Helper()
	r, err := http.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	if err := json.NewDecoder(r.Body).Decode(out); err != nil {
		t.Fatalf("HTTP %d: decoding the reply: %v", r.StatusCode, err)
	}
	return r.StatusCode
}
