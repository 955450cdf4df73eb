package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"kvlab/harness"
)

// Tests that a hostile or broken client cannot crash or hang the server,
// and always gets an error that says what was wrong.

// postRaw posts body to /api/quiz and returns the status and the reply.
func postRaw(t *testing.T, ts *httptest.Server, body string) (int, map[string]any) {
	t.Helper()
	var out map[string]any
	code := postJSON(t, ts.URL+"/api/quiz", []byte(body), &out)
	return code, out
}

// quizRefusal is a body POST /api/quiz must refuse with code and an error
// that contains want.
type quizRefusal struct {
	name, body string
	code       int
	want       string
}

// checkQuizRefusals posts each body to ts and checks the status and the
// error of the reply.
func checkQuizRefusals(t *testing.T, ts *httptest.Server, tests []quizRefusal) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out := postRaw(t, ts, tt.body)
			msg, _ := out["error"].(string)
			if code != tt.code || !strings.Contains(msg, tt.want) {
				t.Errorf("got %d %q, want %d with an error containing %q", code, msg, tt.code, tt.want)
			}
		})
	}
}

func TestQuizHostileBodies(t *testing.T) {
	s := newServer(t, func(c *Config) { c.MaxMessageBytes = 1024 })
	ts := startServer(t, s)
	res := func(p50, p99 string) string {
		one := `{"latency":{"put":{"count":500,"p50_ns":` + p50 + `,"p99_ns":` + p99 + `}},"ops_per_sec":1}`
		return "[" + one + "," + one + "]"
	}
	tests := []quizRefusal{
		{"empty body", ``, 400, "malformed request"},
		{"not json", `{"lesson":`, 400, "malformed request"},
		{"array body", `[]`, 400, "malformed request"},
		{"two values", `{"lesson":"01-fixture"} {"lesson":"x"}`, 400, "more than one JSON value"},
		{"results is an object", `{"lesson":"01-fixture","quiz":"tail","answer":"2","results":{}}`, 400, "grades quizzes from the runs it recorded"},
		// Numbers sent by the client are refused, whatever they are: the
		// server grades from the runs it recorded.
		{"results of numbers", `{"lesson":"01-fixture","quiz":"tail","answer":"2","results":[1,2]}`, 400, "grades quizzes from the runs it recorded"},
		{"results of strings", `{"lesson":"01-fixture","quiz":"tail","answer":"2","results":["a","b"]}`, 400, "grades quizzes from the runs it recorded"},
		{"no results", `{"lesson":"01-fixture","quiz":"tail","answer":"2","results":[]}`, 422, "run the cell first"},
		{"made-up results", `{"lesson":"01-fixture","quiz":"tail","answer":"2","results":` + res("1", "5") + `}`, 400, "grades quizzes from the runs it recorded"},
		{"number too big for float64", `{"lesson":"01-fixture","quiz":"tail","answer":"2","results":` + res("1", "1e400") + `}`, 400, "grades quizzes from the runs it recorded"},
		{"run ids of strings", `{"lesson":"01-fixture","quiz":"tail","answer":"2","run_ids":["1"]}`, 400, "malformed request"},
		{"run id never recorded", `{"lesson":"01-fixture","quiz":"tail","answer":"2","browser":"b1","run_ids":[999999,1000000]}`, 422, "run 999999 is not in this server's archive: run the cell first"},
		{"negative run id", `{"lesson":"01-fixture","quiz":"tail","answer":"2","browser":"b1","run_ids":[-1]}`, 422, "run the cell first"},
		{"bad browser id", `{"lesson":"01-fixture","quiz":"tail","answer":"2","browser":"<script>","run_ids":[1]}`, 400, "browser"},
		{"answer NaN", `{"lesson":"01-fixture","quiz":"tail","answer":"NaN","browser":"b1","run_ids":[1]}`, 400, "not a number"},
		{"answer Inf", `{"lesson":"01-fixture","quiz":"tail","answer":"+Inf","browser":"b1","run_ids":[1]}`, 400, "not a number"},
		{"answer huge", `{"lesson":"01-fixture","quiz":"tail","answer":"1e999","browser":"b1","run_ids":[1]}`, 400, "not a number"},
		{"unknown lesson", `{"lesson":"99-nope","quiz":"tail","answer":"2"}`, 404, `no lesson "99-nope"`},
		{"traversal lesson", `{"lesson":"../../etc/passwd","quiz":"tail","answer":"2"}`, 404, "no lesson"},
		{"unknown quiz", `{"lesson":"01-fixture","quiz":"nope","answer":"2"}`, 404, `no quiz "nope"`},
		{"oversized", `{"lesson":"01-fixture","quiz":"tail","answer":"` + strings.Repeat("9", 20000) + `"}`, 413, "larger than"},
	}
	checkQuizRefusals(t, ts, tests)
}

// A run: quiz whose asker gives up while it waits for a busy queue leaves
// nothing behind in the queue.
func TestQuizRunGivesUpWhileQueued(t *testing.T) {
	s, ts, c := busyServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", ts.URL+"/api/quiz", strings.NewReader(`{"lesson":"01-fixture","quiz":"path","answer":"yes"}`))
	errc := make(chan error, 1)
	go func() {
		r, err := http.DefaultClient.Do(req)
		if err == nil {
			r.Body.Close()
		}
		errc <- err
	}()
	waitFor(t, "the quiz run to queue", func() bool { return queueLen(s) == 1 })
	cancel()
	if err := <-errc; err == nil {
		t.Fatal("got a reply, want the request cancelled")
	}
	waitFor(t, "the quiz run to leave the queue", func() bool { return queueLen(s) == 0 })
	c.send(map[string]string{"type": "cancel", "id": "long"})
	if d := c.until("long", "done")[0]; d.str("type") == "done" && d["cancelled"] != true {
		t.Errorf("got %v, want a cancelled done", d)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for i := 0; i < 3000; i++ {
		if cond() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("gave up waiting for %s", what)
}

func TestWSHostileMessages(t *testing.T) {
	s := newServer(t, func(c *Config) { c.MaxMessageBytes = 1024 })
	ts := startServer(t, s)
	c := dial(t, ts, "", nil)
	tests := []struct {
		name string
		typ  int
		send string
		want string
	}{
		{"binary frame", websocket.BinaryMessage, `{"type":"run","id":"x","cell":"probe"}`, "binary messages"},
		{"json array", websocket.TextMessage, `[1,2]`, "malformed message"},
		{"two values in one message", websocket.TextMessage, `{"type":"cancel","id":"a"}{"type":"run","id":"b","cell":"probe"}`, "more than one JSON value"},
		{"json string", websocket.TextMessage, `"run"`, "malformed message"},
		{"null", websocket.TextMessage, `null`, "unknown message type"},
		{"wrong field type", websocket.TextMessage, `{"type":"run","id":7,"cell":"probe"}`, "malformed message"},
		{"empty type", websocket.TextMessage, `{}`, `unknown message type ""`},
		{"over the message cap", websocket.TextMessage, `{"type":"run","id":"x","cell":"` + strings.Repeat("#", 2000) + `"}`, "the limit is 1024 bytes"},
		{"cancel unknown", websocket.TextMessage, `{"type":"cancel","id":"ghost"}`, `no run "ghost"`},
		{"cancel no id", websocket.TextMessage, `{"type":"cancel"}`, `no run ""`},
		{"id too long", websocket.TextMessage, `{"type":"run","id":"` + strings.Repeat("i", 200) + `","cell":"probe"}`, "1 to 128 characters"},
		{"invalid utf-8", websocket.TextMessage, "{\"type\":\"run\",\"id\":\"\xff\",\"cell\":\"probe\"}", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := c.conn.WriteMessage(tt.typ, []byte(tt.send)); err != nil {
				t.Fatal(err)
			}
			if tt.want == "" {
				return // only must not kill the connection: checked by the next case
			}
			m := c.next()
			if m.str("type") != "error" || !strings.Contains(m.str("message"), tt.want) {
				t.Fatalf("got %v, want an error containing %q", m, tt.want)
			}
		})
	}
	// A duplicate id is refused while the first run is live, and the first run is unharmed.
	c2 := dial(t, ts, "", nil)
	c2.run("d", longRun)
	c2.until("d", "started")
	c2.run("d", "bench -engine null -ops 10")
	if m := c2.next(); m.str("type") != "error" || !strings.Contains(m.str("message"), "already queued or running") {
		t.Fatalf("duplicate id: got %v, want an error", m)
	}
	c2.send(map[string]string{"type": "cancel", "id": "d"})
	if ms := c2.until("d", "done"); ms[len(ms)-1]["cancelled"] != true {
		t.Errorf("got %v, want the first run cancelled", ms[len(ms)-1])
	}
	// A message far over the cap closes the connection with "message too big".
	c3 := dial(t, ts, "", nil)
	c3.conn.WriteMessage(websocket.TextMessage, []byte(strings.Repeat("x", 1<<20)))
	c3.conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	_, _, err := c3.conn.ReadMessage()
	if !websocket.IsCloseError(err, websocket.CloseMessageTooBig) {
		t.Errorf("got %v, want close 1009 (message too big)", err)
	}
}

// Origin variants on the websocket.
func TestWSOriginVariants(t *testing.T) {
	s := newServer(t, nil)
	ts := startServer(t, s)
	host := strings.TrimPrefix(ts.URL, "http://")
	_, port, _ := strings.Cut(host, ":")
	tests := []struct {
		origin string
		ok     bool
	}{
		{"", true},
		{ts.URL, true},
		{"HTTP://" + strings.ToUpper(host), true},
		{"null", false},
		{"http://evil.example", false},
		{"http://127.0.0.1:1", false},
		{"http://localhost:" + port, false}, // same machine, but not the Host this page came from
		{"http://" + host + ".evil.example", false},
		{"http://evil.example@" + host, false},
		{"file://", false},
	}
	room := openRoom(t, ts)
	for _, path := range []string{"/ws", "/room/" + room + "/ws"} {
		u := "ws" + strings.TrimPrefix(ts.URL, "http") + path
		for _, tt := range tests {
			hdr := http.Header{}
			if tt.origin != "" {
				hdr.Set("Origin", tt.origin)
			}
			c, resp, err := websocket.DefaultDialer.Dial(u, hdr)
			if c != nil {
				c.Close()
			}
			if got := err == nil; got != tt.ok {
				code := 0
				if resp != nil {
					code = resp.StatusCode
				}
				t.Errorf("%s, Origin %q: got connected=%v (HTTP %d), want %v", path, tt.origin, got, code, tt.ok)
			}
		}
	}
}

// Closing the socket in the middle of a run or while queued cancels that
// client's runs, removes their directories and lets the queue move on.
func TestWSAbruptDisconnect(t *testing.T) {
	s := newServer(t, nil)
	ts := startServer(t, s)
	a := dial(t, ts, "", nil)
	a.run("a", longRun)
	a.until("a", "started")
	b := dial(t, ts, "", nil)
	b.run("b", longRun)
	b.until("b", "queued")
	c := dial(t, ts, "", nil)
	c.run("c", "bench -engine null -ops 100")
	if m := c.until("c", "queued"); m[len(m)-1].num("position") != 2 {
		t.Fatalf("got %v, want position 2", m[len(m)-1])
	}
	b.conn.UnderlyingConn().Close() // queued, gone without a close frame
	if m := c.next(); m.str("type") != "queued" || m.num("position") != 1 {
		t.Fatalf("got %v, want queued at position 1", m)
	}
	a.conn.UnderlyingConn().Close() // running, gone
	ms := c.until("c", "done")
	if !strings.Contains(types(ms), "result") {
		t.Fatalf("got %q, want c to run", types(ms))
	}
	checkNoRunDirs(t, s.cfg.DataDir)
}

// Close cancels everything and waits for every goroutine it started.
func TestCloseLeavesNoGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	cfg := Config{Lessons: os.DirFS("testdata/lessons"), DataDir: t.TempDir(), Limits: testLimits()}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s)
	var cs []*websocket.Conn
	for i := 0; i < 3; i++ {
		u := "ws" + strings.TrimPrefix(ts.URL, "http") + "/ws"
		c, _, err := websocket.DefaultDialer.Dial(u, nil)
		if err != nil {
			t.Fatal(err)
		}
		c.WriteJSON(map[string]string{"type": "run", "id": fmt.Sprint(i), "cell": longRun})
		cs = append(cs, c)
	}
	waitFor(t, "two runs to queue", func() bool { return queueLen(s) == 2 })
	s.Close()
	// Close has returned: the runner, the writers and the run's own
	// goroutines are gone now, not eventually.
	buf := make([]byte, 1<<20)
	stacks := string(buf[:runtime.Stack(buf, true)])
	for _, fn := range []string{"(*Server).runLoop", "(*client).writeLoop", "kvlab/harness."} {
		if strings.Contains(stacks, fn) {
			t.Errorf("after Close, a goroutine is still in %s", fn)
		}
	}
	for _, c := range cs {
		c.Close()
	}
	ts.Close()
	waitFor(t, "goroutines to end", func() bool { return runtime.NumGoroutine() <= before })
	checkNoRunDirs(t, cfg.DataDir)
}

// After Close, a run: quiz gets an error instead of waiting forever for a
// runner that has stopped.
func TestQuizRunAfterClose(t *testing.T) {
	s := newServer(t, nil)
	ts := startServer(t, s)
	s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second) // guards a hang only
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", ts.URL+"/api/quiz", strings.NewReader(`{"lesson":"01-fixture","quiz":"path","answer":"yes"}`))
	r, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("got %v, want an error reply", err)
	}
	defer r.Body.Close()
	var out map[string]any
	json.NewDecoder(r.Body).Decode(&out)
	if r.StatusCode != http.StatusServiceUnavailable || !strings.Contains(fmt.Sprint(out["error"]), "shutting down") {
		t.Errorf("got %d %v, want 503 saying the server is shutting down", r.StatusCode, out)
	}
}

// A client that never reads must not hold up other clients or the queue.
func TestWSSlowConsumer(t *testing.T) {
	exec := func(ctx context.Context, _ *harness.Spec, env harness.Env) (harness.Output, error) {
		for i := 0; i < 200_000 && ctx.Err() == nil; i++ {
			env.Progress(harness.Progress{Ops: int64(i)})
		}
		return harness.Output{JSON: []byte(`{"kind":"bench"}`), Head: harness.Head{Kind: "bench"}}, nil
	}
	s := newServer(t, func(c *Config) { c.exec = exec })
	ts := startServer(t, s)
	slow := dial(t, ts, "", nil) // never reads
	slow.run("s", "bench -engine null -ops 10\nbench -engine null -ops 10")
	fast := dial(t, ts, "", nil)
	fast.run("f", "bench -engine null -ops 10")
	ms := fast.until("f", "done")
	if ms[len(ms)-1]["cancelled"] == true {
		t.Errorf("the fast client's run was cancelled")
	}
	if !strings.Contains(types(ms), "result") {
		t.Errorf("got %q, want a result for the fast client", types(ms))
	}
}

// A peer that vanishes without closing (no FIN, no pong) is dropped after
// the pong wait, which cancels its run.
func TestWSDeadPeerDropped(t *testing.T) {
	s := newServer(t, nil)
	s.pongWait = 300 * time.Millisecond
	ts := startServer(t, s)
	c := dial(t, ts, "", nil)
	c.run("x", longRun)
	c.until("x", "started")
	// Stop reading: the client library answers pings only while reading.
	waitFor(t, "the server to drop the silent client", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(s.clients) == 0
	})
	waitFor(t, "the queue to be idle", func() bool {
		_, running := s.runs.Counts()
		return !running
	})
}

// A client that answers pings stays connected while idle.
func TestWSIdleClientStays(t *testing.T) {
	s := newServer(t, nil)
	s.pongWait = 300 * time.Millisecond
	ts := startServer(t, s)
	c := dial(t, ts, "", nil)
	pings := make(chan struct{}, 16)
	c.conn.SetPingHandler(func(data string) error {
		select {
		case pings <- struct{}{}:
		default:
		}
		return c.conn.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(time.Second))
	})
	go func() {
		for {
			if _, _, err := c.conn.ReadMessage(); err != nil {
				return
			}
		}
	}()
	for i := 0; i < 4; i++ {
		select {
		case <-pings:
		case <-time.After(60 * time.Second):
			t.Fatal("no ping")
		}
	}
	s.mu.Lock()
	n := len(s.clients)
	s.mu.Unlock()
	if n != 1 {
		t.Errorf("got %d clients, want the idle one still connected", n)
	}
}

// A page served under another name that resolves to this machine (DNS
// rebinding) must not run anything on a loopback server without a token.
func TestWSForeignHostRejected(t *testing.T) {
	s := newServer(t, func(c *Config) { c.Addr = "127.0.0.1:8080" })
	ts := startServer(t, s)
	u := "ws" + strings.TrimPrefix(ts.URL, "http") + "/ws"
	_, port, _ := strings.Cut(strings.TrimPrefix(ts.URL, "http://"), ":")
	for _, host := range []string{"rebind.evil.example:" + port, "rebind.evil.example"} {
		hdr := http.Header{"Origin": {"http://" + host}, "Host": {host}}
		c, resp, err := websocket.DefaultDialer.Dial(u, hdr)
		if c != nil {
			c.Close()
		}
		if err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
			t.Errorf("Host %s: got err=%v resp=%v, want HTTP 403", host, err, resp)
		}
		r, _ := http.NewRequest("POST", ts.URL+"/api/quiz", strings.NewReader(`{}`))
		r.Host = host
		r.Header.Set("Origin", "http://"+host)
		resp2, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		resp2.Body.Close()
		if resp2.StatusCode != http.StatusForbidden {
			t.Errorf("quiz with Host %s: got %d, want 403", host, resp2.StatusCode)
		}
	}
	// localhost names pass.
	for _, host := range []string{"localhost", "127.0.0.1", "[::1]"} {
		hdr := http.Header{"Host": {host + ":" + port}}
		c, resp, err := websocket.DefaultDialer.Dial(u, hdr)
		if err != nil {
			t.Errorf("Host %s: got %v (%v), want a connection", host, err, resp)
			continue
		}
		c.Close()
	}
}

// run: quizzes cannot flood the queue: past maxQuizRuns waiting, the next
// is refused with 429 and the reason.
func TestQuizRunFloodCapped(t *testing.T) {
	// Every request comes from one address: not the cap tested here.
	// The held connection is closed at cleanup.
	s, ts, _ := busyServerWith(t, func(c *Config) { c.MaxQueuedPerAddress = 2 * maxQuizRuns })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	body := `{"lesson":"01-fixture","quiz":"path","answer":"yes"}`
	done := make(chan struct{}, maxQuizRuns)
	for i := 0; i < maxQuizRuns; i++ {
		req, _ := http.NewRequestWithContext(ctx, "POST", ts.URL+"/api/quiz", strings.NewReader(body))
		go func() {
			if r, err := http.DefaultClient.Do(req); err == nil {
				r.Body.Close()
			}
			done <- struct{}{}
		}()
	}
	waitFor(t, "the quiz runs to queue", func() bool { return queueLen(s) == maxQuizRuns })
	code, out := postRaw(t, ts, body)
	if msg, _ := out["error"].(string); code != http.StatusTooManyRequests || !strings.Contains(msg, "the most allowed") {
		t.Errorf("got %d %q, want 429 saying the limit is reached", code, msg)
	}
	cancel()
	for i := 0; i < maxQuizRuns; i++ {
		<-done
	}
	waitFor(t, "the queue to empty", func() bool { return queueLen(s) == 0 })
}

// A quiz body that trickles in is cut off with 408 instead of holding a
// handler forever.
func TestQuizSlowBody(t *testing.T) {
	s := newServer(t, nil)
	s.quiz.bodyWait = 200 * time.Millisecond
	ts := startServer(t, s)
	pr, pw := io.Pipe()
	defer pw.Close()
	go pw.Write([]byte(`{"lesson":`)) // and then nothing more
	req, _ := http.NewRequest("POST", ts.URL+"/api/quiz", pr)
	req.ContentLength = 1000
	r, err := (&http.Client{Timeout: 60 * time.Second}).Do(req) // the timeout guards a hang only
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	b, _ := io.ReadAll(r.Body)
	if r.StatusCode != http.StatusRequestTimeout || !strings.Contains(string(b), "took longer than") {
		t.Errorf("got %d %s, want 408 saying the body was too slow", r.StatusCode, b)
	}
}

// Many sockets from one page cannot grow the queue without bound.
func TestWSQueueCapAcrossClients(t *testing.T) {
	s := newServer(t, func(c *Config) { c.maxWaiting = 3 })
	ts := startServer(t, s)
	first := dial(t, ts, "", nil)
	first.run("r", longRun)
	first.until("r", "started")
	queueRuns(t, ts, 3)
	if m := oneMoreRun(t, ts); m.str("type") != "error" || !strings.Contains(m.str("message"), "queue is full (3 runs waiting") {
		t.Errorf("got %v, want an error saying the queue is full", m)
	}
	if got := queueLen(s); got != 3 {
		t.Errorf("got %d waiting, want 3", got)
	}
}

// A run: quiz the full queue refuses gives its address's place back: an
// address asking again and again is told the queue is full every time,
// never that it holds -max-queued-per-address runs it does not have.
func TestQuizRefusedByFullQueueReleasesAddress(t *testing.T) {
	s, ts := fullQueueServer(t) // this address holds 2 runs
	body := `{"lesson":"01-fixture","quiz":"path","answer":"yes"}`
	for i := range s.cfg.MaxQueuedPerAddress + 1 {
		code, out := postRaw(t, ts, body)
		if msg, _ := out["error"].(string); code != http.StatusTooManyRequests || !strings.Contains(msg, "the run queue is full") {
			t.Fatalf("quiz %d: got %d %q, want 429 saying the queue is full", i+1, code, msg)
		}
	}
}
