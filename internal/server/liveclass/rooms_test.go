package liveclass

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"kvlab/harness"
	"kvlab/internal/archive"
	"kvlab/internal/classroom"
	"kvlab/internal/lesson"
	"kvlab/internal/server/guard"
	"kvlab/internal/server/run"
	"kvlab/internal/server/runq"
)

// The room alone: a Rooms on the server's fixture lessons with its own
// SQLite archive, a guard for a loopback server without a token, and a
// Runner that records a follower's runs instead of running them. Tests
// that need the whole server (the presenter's runs on /ws, the queue,
// the pages' templates) are package server's.

// testLimits are the server's default write limits (DefaultWriteLimits).
var testLimits = Limits{PerBrowser: 20, BallotsPerAddress: 150, SharesPerAddressRoom: 100, MaxBytes: 4 << 10, MaxShareBytes: 64 << 10}

// str and num read a field of a decoded JSON reply.
func str(m map[string]any, k string) string  { s, _ := m[k].(string); return s }
func num(m map[string]any, k string) float64 { f, _ := m[k].(float64); return f }

// rig is a Rooms served over real HTTP.
type rig struct {
	rs   *Rooms
	ts   *httptest.Server
	arch archive.Archive
	runs *fakeRunner
}

// newRig starts a Rooms; mod may change its Config before New. Cleanup
// closes it as the server would: its followers, then its goroutines.
func newRig(t testing.TB, mod func(*Config)) *rig {
	t.Helper()
	ls, err := lesson.Load(os.DirFS("../testdata/lessons"))
	if err != nil {
		t.Fatal(err)
	}
	a, err := archive.Open(context.Background(), "", t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{arch: a, runs: &fakeRunner{}}
	g := guard.New(guard.Config{MaxQueuedPerAddress: 8})
	runner := runq.New(runq.Config{RunsDir: t.TempDir(), Name: "test", Limits: harness.DefaultLimits(),
		Budget: runq.DefaultBudget(), MaxWaiting: 8, Archive: a, Exec: r.runs.exec})
	svcCtx, stopSvc := context.WithCancel(context.Background())
	svc := run.NewService(svcCtx, run.Config{Runner: runner, Guard: g, Limits: harness.DefaultLimits(),
		Budget: runq.DefaultBudget(), MaxLines: 16, MaxPerOwner: 4})
	cfg := Config{Archive: a, Guard: g, Runs: svc,
		Lesson: func(slug string) (*lesson.Lesson, error) {
			for _, l := range ls {
				if l.Slug == slug {
					return l, nil
				}
			}
			return nil, nil
		},
		WriteRate: g.NewWriteRate(1<<30, 1<<30),
		Log:       log.New(io.Discard, "", 0),
		Upgrader:  &websocket.Upgrader{CheckOrigin: guard.SameOrigin}, PongWait: time.Minute, Writes: testLimits}
	if mod != nil {
		mod(&cfg)
	}
	r.rs, err = New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	r.rs.Route(mux)
	r.ts = httptest.NewServer(mux)
	t.Cleanup(func() {
		stopSvc()
		runner.Close()
		r.rs.Close()
		r.ts.Close()
		r.rs.Wait()
		a.Close()
	})
	return r
}

// fakeRunner is the runner's Exec: it records the lines it is given to
// run and gives each an empty result.
type fakeRunner struct {
	mu   sync.Mutex // guards runs
	runs []string
}

func (f *fakeRunner) exec(ctx context.Context, sp *harness.Spec, env harness.Env) (harness.Output, error) {
	f.mu.Lock()
	f.runs = append(f.runs, sp.String())
	f.mu.Unlock()
	return harness.Output{JSON: []byte(`{}`)}, nil
}

// ran is the lines run so far.
func (f *fakeRunner) ran() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.runs...)
}

// call sends a JSON body (a string, or a value to encode) and decodes
// the JSON reply.
func (r *rig) call(t testing.TB, method, path string, body any) (int, map[string]any) {
	t.Helper()
	b, ok := body.(string)
	if !ok {
		j, _ := json.Marshal(body)
		b = string(j)
	}
	req, _ := http.NewRequest(method, r.ts.URL+path, bytes.NewReader([]byte(b)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var m map[string]any
	json.Unmarshal(raw, &m)
	return resp.StatusCode, m
}

// open starts a room on the fixture lesson and returns its code and
// presenter secret.
func (r *rig) open(t testing.TB) (code, secret string) {
	t.Helper()
	st, m := r.call(t, "POST", "/api/rooms", `{"lesson":"01-fixture"}`)
	code, _ = m["code"].(string)
	secret, _ = m["presenter_secret"].(string)
	if st != http.StatusCreated || code == "" || secret == "" {
		t.Fatalf("POST /api/rooms: %d %v, want 201, a code and a secret", st, m)
	}
	return code, secret
}

// follower is a follower's socket.
type follower struct {
	t    *testing.T
	conn *websocket.Conn
}

// join joins room code as a follower and reads its first message, the
// room's state.
func (r *rig) join(t *testing.T, code string) *follower {
	t.Helper()
	c, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(r.ts.URL, "http")+"/room/"+code+"/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	f := &follower{t: t, conn: c}
	if m := f.next(); m["type"] != "room" || m["code"] != code {
		t.Fatalf("first message %v: want the room's state", m)
	}
	return f
}

func (f *follower) send(s string) {
	f.t.Helper()
	if err := f.conn.WriteMessage(websocket.TextMessage, []byte(s)); err != nil {
		f.t.Fatal(err)
	}
}

// next reads one message. The deadline only guards against a hang.
func (f *follower) next() map[string]any {
	f.t.Helper()
	f.conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	_, b, err := f.conn.ReadMessage()
	if err != nil {
		f.t.Fatalf("read: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		f.t.Fatalf("message %s: %v", b, err)
	}
	return m
}

// nextOf reads until a message of type typ.
func (f *follower) nextOf(typ string) map[string]any {
	f.t.Helper()
	for {
		if m := f.next(); m["type"] == typ {
			return m
		}
	}
}

// TestRoomLookupLimit: an address that asks for more than
// -max-unknown-codes well-formed codes that name no room is refused every
// lookup for the rest of the minute, even a right one; text that is not a
// code does not count.
func TestRoomLookupLimit(t *testing.T) {
	const max = 5
	r := newRig(t, func(c *Config) { c.MaxUnknownCodes = max })
	code, _ := r.open(t)
	for i := range 3 * max {
		if st, _ := r.call(t, "GET", "/api/rooms/not-a-code-"+strconv.Itoa(i), ""); st != 404 {
			t.Fatalf("text that is not a code: %d, want 404", st)
		}
	}
	if st, m := r.call(t, "GET", "/api/rooms/"+code, ""); st != http.StatusOK {
		t.Fatalf("a right code after %d texts that are not codes: %d %v, want 200 (they do not count)", 3*max, st, m)
	}
	for i := range max {
		st, m := r.call(t, "GET", "/api/rooms/222223333"+string(classroom.Alphabet[i%len(classroom.Alphabet)]), "")
		if msg, _ := m["error"].(string); st != 404 || !strings.Contains(msg, "rooms expire 4h after") {
			t.Fatalf("unknown code %d: %d %v, want 404", i, st, m)
		}
	}
	st, m := r.call(t, "GET", "/api/rooms/"+code, "")
	if msg, _ := m["error"].(string); st != http.StatusTooManyRequests || !strings.Contains(msg, "-max-unknown-codes") {
		t.Fatalf("a right code after %d wrong ones: %d %v, want 429 naming the flag", max, st, m)
	}
}

// TestRoomExpires: a room past its time to live answers 404, its
// followers are told it closed, and the archive no longer reloads it.
func TestRoomExpires(t *testing.T) {
	r := newRig(t, func(c *Config) { c.TTL = time.Hour })
	code, _ := r.open(t)
	f := r.join(t, code)
	room := r.rs.Open(code)
	room.Lock()
	room.Expires = time.Now().Add(-time.Second) // as if the hour had passed
	r.rs.saveRoom(context.Background(), room)
	room.Unlock()
	st, m := r.call(t, "GET", "/api/rooms/"+code, "")
	if msg, _ := m["error"].(string); st != 404 || !strings.Contains(msg, "rooms expire 1h after") {
		t.Fatalf("an expired room: %d %v, want 404 naming the 1h", st, m)
	}
	r.rs.sweep(time.Now()) // what the sweeper does every sweepEvery
	f.nextOf("closed")
	if open, _ := r.arch.OpenRooms(context.Background(), time.Now()); len(open) != 0 {
		t.Errorf("OpenRooms after the expiry: %v, want none", open)
	}
}

// TestFollowerRuns: a follower's run is refused until the presenter
// allows runs, and one that names a room, a poll or a token always is;
// an allowed one goes to the Runner as the follower sent it, and its
// messages come back to that follower.
func TestFollowerRuns(t *testing.T) {
	r := newRig(t, nil)
	code, secret := r.open(t)
	f := r.join(t, code)
	run := `{"type":"run","id":"r1","cell":"bench -engine null -ops 10"}`
	f.send(run)
	if m := f.nextOf("error"); !strings.Contains(m["message"].(string), "not allowed runs") {
		t.Errorf("a run before the presenter allowed runs: %v, want refused", m)
	}
	if st, m := r.call(t, "POST", "/api/rooms/"+code+"/allow-runs", map[string]any{"presenter": secret, "allow": true}); st != 200 {
		t.Fatalf("allow runs: %d %v", st, m)
	}
	f.send(`{"type":"run","id":"r2","cell":"bench -engine null -ops 10","room":"` + code + `"}`)
	if m := f.nextOf("error"); !strings.Contains(m["message"].(string), "no room, poll or token") {
		t.Errorf("a follower's run naming the room: %v, want refused", m)
	}
	f.send(run)
	if m := f.nextOf("done"); m["id"] != "r1" {
		t.Errorf("done for %v, want r1", m["id"])
	}
	if got := r.runs.ran(); len(got) != 1 || !strings.HasPrefix(got[0], "bench -engine null") || !strings.Contains(got[0], "-ops 10") {
		t.Errorf("the runner ran %q, want the one allowed run r1's line", got)
	}
}
