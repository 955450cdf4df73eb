package server

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"
)

// longRun keeps the disk busy until it is cancelled; the null engine does
// no I/O, so it only costs CPU.
const longRun = "bench -engine null -duration 30s -rate 2000"

func TestWSNullRunMessageOrder(t *testing.T) {
	s := newServer(t, nil)
	ts := startServer(t, s)
	c := dial(t, ts, "", nil)
	c.run("c1", "# a comment line is not a run\nbench -engine null -duration 1500ms -rate 5000 -keys 1000\n\nbench -engine null -ops 300")
	ms := c.until("c1", "done")
	if got, want := types(ms), "queued started progress result started result done"; got != want {
		t.Fatalf("got messages %q, want %q", got, want)
	}
	for _, m := range ms {
		if m.str("id") != "c1" {
			t.Errorf("got id %q, want c1 in %v", m.str("id"), m)
		}
	}
	if ms[0].num("position") != 0 {
		t.Errorf("queued: got position %v, want 0", ms[0]["position"])
	}
	if got := ms[1].str("spec"); got != "bench -engine null -duration 1500ms -rate 5000 -keys 1000" {
		t.Errorf("started: got spec %q", got)
	}
	var prog msg
	var results []msg
	for _, m := range ms {
		switch m.str("type") {
		case "progress":
			prog = m
		case "result":
			results = append(results, m)
		}
	}
	if prog.num("line") != 0 || prog.num("ops") <= 0 || prog.num("ops_per_sec") <= 0 || prog.num("elapsed_seconds") <= 0 {
		t.Errorf("progress: got %v, want line 0 with ops, ops_per_sec and elapsed_seconds", prog)
	}
	for i, r := range results {
		if r.num("line") != float64(i) {
			t.Errorf("result %d: got line %v", i, r["line"])
		}
		res, _ := r["result"].(map[string]any)
		if res["kind"] != "bench" || res["engine"] != "null" {
			t.Errorf("result %d: got %v, want a bench result of the null engine", i, res)
		}
	}
	lat := results[1]["result"].(map[string]any)["latency"].(map[string]any)["put"].(map[string]any)
	if lat["count"] != float64(300) {
		t.Errorf("line 1: got count %v, want 300", lat["count"])
	}
	// Each run's directory is removed afterwards.
	checkNoRunDirs(t, s.cfg.DataDir)
}

func TestWSKVRun(t *testing.T) {
	s := newServer(t, nil)
	ts := startServer(t, s)
	c := dial(t, ts, "", nil)
	c.run("kv", "bench -engine kv -sync batch:16 -workload fillrandom -ops 200")
	ms := c.until("kv", "done")
	if got := types(ms); got != "queued started result done" {
		t.Fatalf("got %q, want queued started result done", got)
	}
	var res struct {
		Kind    string `json:"kind"`
		Engine  string `json:"engine"`
		Sync    string `json:"sync"`
		Fsyncs  int64  `json:"fsyncs"`
		Latency map[string]struct {
			Count int64 `json:"count"`
			P99   int64 `json:"p99_ns"`
		} `json:"latency"`
	}
	b, _ := json.Marshal(ms[2]["result"])
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	if res.Kind != "bench" || res.Engine != "kv" || res.Sync != "batch:16" {
		t.Errorf("got kind %q engine %q sync %q, want bench kv batch:16", res.Kind, res.Engine, res.Sync)
	}
	if res.Latency["put"].Count != 200 || res.Latency["put"].P99 <= 0 {
		t.Errorf("got put latency %+v, want count 200 and a p99", res.Latency["put"])
	}
	if res.Fsyncs < 200/16 {
		t.Errorf("got %d fsyncs, want at least %d for 200 puts with batch:16", res.Fsyncs, 200/16)
	}
	checkNoRunDirs(t, s.cfg.DataDir)
}

func TestWSCancel(t *testing.T) {
	s := newServer(t, nil)
	ts := startServer(t, s)
	a := dial(t, ts, "", nil)
	b := dial(t, ts, "", nil)

	a.run("long", longRun)
	a.until("long", "started")
	b.run("waiting", "bench -engine null -ops 100")
	if m := b.next(); m.str("type") != "queued" || m.num("position") != 1 {
		t.Fatalf("second run: got %v, want queued at position 1", m)
	}
	// Cancel while queued.
	b.send(`{"type":"cancel","id":"waiting"}`)
	if m := b.next(); m.str("type") != "done" || m["cancelled"] != true {
		t.Fatalf("cancel queued: got %v, want done with cancelled", m)
	}
	// Cancel while running.
	a.send(`{"type":"cancel","id":"long"}`)
	ms := a.until("long", "done")
	if last := ms[len(ms)-1]; last["cancelled"] != true {
		t.Errorf("cancel running: got %v, want done with cancelled", last)
	}
	for _, m := range ms {
		if m.str("type") == "result" {
			t.Errorf("cancelled run sent a result: %v", m)
		}
	}
	// Cancelling something unknown is an error, not a crash.
	a.send(`{"type":"cancel","id":"nope"}`)
	if m := a.next(); m.str("type") != "error" || !strings.Contains(m.str("message"), "nope") {
		t.Errorf("cancel unknown: got %v, want an error naming the id", m)
	}
	// The server still runs things.
	b.run("after", "bench -engine null -ops 100")
	if got := types(b.until("after", "done")); got != "queued started result done" {
		t.Errorf("after cancels: got %q", got)
	}
}

func TestWSDisconnectCancels(t *testing.T) {
	s, ts, a := busyServer(t)
	b := dial(t, ts, "", nil)
	b.run("next", "bench -engine null -ops 100")
	if m := b.next(); m.num("position") != 1 {
		t.Fatalf("got %v, want queued behind the long run", m)
	}
	a.conn.Close()
	// b is served only once a's 30 s run has been cancelled by the
	// disconnect; b's messages show it started right after a's run ended.
	ms := b.until("next", "done")
	if got := types(ms); got != "queued started result done" {
		t.Errorf("got %q, want queued (position 0) started result done", got)
	}
	if ms[0].num("position") != 0 {
		t.Errorf("got position %v after the disconnect, want 0", ms[0]["position"])
	}
	if waiting, _ := s.runs.Counts(); waiting != 0 {
		t.Errorf("got %d waiting jobs, want 0", waiting)
	}
}

func TestWSBadInput(t *testing.T) {
	s := newServer(t, nil)
	ts := startServer(t, s)
	c := dial(t, ts, "", nil)
	tests := []struct {
		name, send string
		line       float64 // -1: no line
		want       string
		thenDone   bool
	}{
		{"not json", `{"type":"run",`, -1, "malformed message", false},
		{"unknown field", `{"type":"run","id":"x","cell":"probe","extra":1}`, -1, "unknown field", false},
		{"unknown type", `{"type":"launch","id":"x"}`, -1, `unknown message type "launch"`, false},
		{"no id", `{"type":"run","cell":"probe"}`, -1, "id must be", false},
		{"empty cell", `{"type":"run","id":"e","cell":"# only a comment\n"}`, -1, "no run-spec lines", true},
		{"bad command", `{"type":"run","id":"b1","cell":"launch -now"}`, 0, "line 1 (launch -now)", true},
		{"bad flag value", `{"type":"run","id":"b2","cell":"bench -engine null -ops 100\nbench -ops 0"}`, 1, "-ops", true},
		{"unknown flag", `{"type":"run","id":"b3","cell":"bench -bogus 3"}`, 0, "bogus", true},
		{"over the cap", `{"type":"run","id":"b4","cell":"bench -engine null -value-size 10000000"}`, 0, "-value-size", true},
		{"dir", `{"type":"run","id":"b5","cell":"bench -engine null -dir /etc"}`, 0, "-dir is not allowed", true},
		{"keep", `{"type":"run","id":"b6","cell":"bench -engine null -keep"}`, 0, "-keep is not allowed", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c.send(tt.send)
			m := c.next()
			if m.str("type") != "error" || !strings.Contains(m.str("message"), tt.want) {
				t.Fatalf("got %v, want an error containing %q", m, tt.want)
			}
			line, hasLine := m["line"].(float64)
			if tt.line >= 0 && (!hasLine || line != tt.line) {
				t.Errorf("got line %v, want %v", m["line"], tt.line)
			}
			if tt.line < 0 && hasLine {
				t.Errorf("got line %v, want none", m["line"])
			}
			if tt.thenDone {
				if d := c.next(); d.str("type") != "done" {
					t.Errorf("got %v, want done", d)
				}
			}
		})
	}
	// Nothing ran.
	if waiting, running := s.runs.Counts(); waiting != 0 || running {
		t.Errorf("bad input queued or started a run")
	}
}

func TestWSTooLarge(t *testing.T) {
	s := newServer(t, func(c *Config) { c.MaxMessageBytes = 200 })
	ts := startServer(t, s)
	c := dial(t, ts, "", nil)
	c.run("big", "bench -engine null -ops 100 # "+strings.Repeat("x", 300))
	if m := c.next(); m.str("type") != "error" || !strings.Contains(m.str("message"), "limit is 200 bytes") {
		t.Errorf("got %v, want an error naming the 200-byte limit", m)
	}
}

func TestWSPerClientCap(t *testing.T) {
	s := newServer(t, func(c *Config) { c.MaxQueuedPerClient = 2 })
	ts := startServer(t, s)
	c := dial(t, ts, "", nil)
	c.run("a", longRun)
	c.until("a", "started")
	c.run("b", "bench -engine null -ops 10")
	c.until("b", "queued")
	c.run("c", "bench -engine null -ops 10")
	m := c.next()
	if m.str("type") != "error" || !strings.Contains(m.str("message"), "the limit is 2") {
		t.Errorf("third run: got %v, want an error naming the limit", m)
	}
	c.run("a", "bench -engine null -ops 10")
	ms := c.until("c", "done")
	if m := ms[len(ms)-1]; m.str("type") != "done" {
		t.Errorf("got %v", m)
	}
	if m := c.next(); m.str("type") != "error" || !strings.Contains(m.str("message"), "already queued or running") {
		t.Errorf("duplicate id: got %v, want an error", m)
	}
}

func TestWSTwoClientsServedInOrder(t *testing.T) {
	s := newServer(t, nil)
	ts := startServer(t, s)
	a := dial(t, ts, "", nil)
	b := dial(t, ts, "", nil)

	var mu sync.Mutex
	var events []string
	record := func(who string, ms []msg) {
		mu.Lock()
		defer mu.Unlock()
		for _, m := range ms {
			events = append(events, who+":"+m.str("type"))
		}
	}
	a.run("first", "bench -engine null -duration 1200ms -rate 5000 -keys 1000")
	record("a", a.until("first", "started"))
	b.run("second", "bench -engine null -ops 200")
	q := b.next()
	if q.str("type") != "queued" || q.num("position") != 1 {
		t.Fatalf("second client: got %v, want queued at position 1", q)
	}
	var wg sync.WaitGroup
	wg.Add(2)
	var aMsgs, bMsgs []msg
	go func() { defer wg.Done(); aMsgs = a.until("first", "done") }()
	go func() { defer wg.Done(); bMsgs = b.until("second", "done") }()
	wg.Wait()
	// b's started must come after a's result: the disk is serialized.
	aDone, bStarted := -1, -1
	for _, m := range aMsgs {
		if m.str("type") == "result" {
			aDone = 1
		}
	}
	if aDone < 0 {
		t.Fatalf("first client got no result: %v", types(aMsgs))
	}
	for i, m := range bMsgs {
		if m.str("type") == "started" {
			bStarted = i
		}
	}
	if bStarted < 0 {
		t.Fatalf("second client never started: %v", types(bMsgs))
	}
	// The queued position update (0) arrives before started.
	if got := types(bMsgs); got != "queued started result done" {
		t.Errorf("second client: got %q, want queued started result done", got)
	}
	if bMsgs[0].num("position") != 0 {
		t.Errorf("second client's update: got position %v, want 0", bMsgs[0]["position"])
	}
	// Compare the runs' own clocks: the second started after the first ended.
	ra := resultOf(t, aMsgs)
	rb := resultOf(t, bMsgs)
	if ra["kind"] != "bench" || rb["kind"] != "bench" {
		t.Errorf("got %v and %v, want two bench results", ra["kind"], rb["kind"])
	}
	record("a", aMsgs)
	record("b", bMsgs)
}

func resultOf(t *testing.T, ms []msg) map[string]any {
	t.Helper()
	for _, m := range ms {
		if m.str("type") == "result" {
			r, _ := m["result"].(map[string]any)
			return r
		}
	}
	t.Fatalf("no result in %s", types(ms))
	return nil
}
