package server

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"kvlab/harness"
	"kvlab/internal/archive"
)

// Every line a cell runs is in the archive, with the spec as written and
// with defaults, the full result, the conditions, the progress timeline,
// where it came from, the version, the host and its times; the result
// message names its id.
func TestRunsAreRecorded(t *testing.T) {
	s := newServer(t, nil)
	ts := startServer(t, s)
	c := dial(t, ts, "", nil)
	before := time.Now().UTC()
	cell := "bench -engine null -sync always -workload fillrandom -ops 500\nprobe -ops 20"
	c.runAs("r", "01-fixture", "always-run", testBrowser, cell)
	var got []msg
	for _, m := range c.until("r", "done") {
		if m.str("type") == "result" {
			got = append(got, m)
		}
	}
	if len(got) != 2 {
		t.Fatalf("got %d results, want 2", len(got))
	}
	lines := strings.Split(cell, "\n")
	for i, m := range got {
		id := int64(m.num("run_id"))
		r, err := s.arch.Get(context.Background(), id)
		if err != nil {
			t.Fatalf("line %d: result names run_id %d: %v", i, id, err)
		}
		sent, _ := json.Marshal(m["result"])
		var a, b any
		json.Unmarshal(sent, &a)
		json.Unmarshal(r.Result, &b)
		as, _ := json.Marshal(a)
		bs, _ := json.Marshal(b)
		if string(as) != string(bs) {
			t.Errorf("line %d: archived result differs from the one sent:\n got  %s\n sent %s", i, bs, as)
		}
		if r.Spec != lines[i] || r.Source != "cell" || r.Lesson != "01-fixture" || r.Cell != "always-run" || r.Browser != testBrowser {
			t.Errorf("line %d: got spec %q source %q lesson %q cell %q browser %q, want %q cell 01-fixture always-run %s",
				i, r.Spec, r.Source, r.Lesson, r.Cell, r.Browser, lines[i], testBrowser)
		}
		if r.Version != archive.Version() || r.Host != archive.HostID() {
			t.Errorf("line %d: got version %q host %q, want %q %q", i, r.Version, r.Host, archive.Version(), archive.HostID())
		}
		if r.Started.Before(before.Add(-time.Second)) || r.Ended.Before(r.Started) {
			t.Errorf("line %d: started %v ended %v, want a start after %v and an end after the start", i, r.Started, r.Ended, before)
		}
		if !json.Valid(r.Timeline) || !strings.HasPrefix(string(r.Timeline), "[") {
			t.Errorf("line %d: timeline %s, want a JSON array", i, r.Timeline)
		}
		if !strings.Contains(string(r.Probe), `"fs"`) {
			t.Errorf("line %d: probe %s, want the conditions", i, r.Probe)
		}
	}
	bench, _ := s.arch.Get(context.Background(), int64(got[0].num("run_id")))
	if bench.Kind != "bench" || bench.Engine != "null" || bench.Sync != "always" || bench.Workload != "fillrandom" ||
		!strings.Contains(bench.SpecFull, "-threads 1") || !strings.Contains(bench.SpecFull, "-value-size") {
		t.Errorf("got kind %q engine %q sync %q workload %q spec_full %q, want a null always fillrandom bench with its defaults",
			bench.Kind, bench.Engine, bench.Sync, bench.Workload, bench.SpecFull)
	}
	if probe, _ := s.arch.Get(context.Background(), int64(got[1].num("run_id"))); probe.Kind != "probe" {
		t.Errorf("got kind %q for the probe line, want probe", probe.Kind)
	}
}

// recordedRun runs line as job id on c, waits for it to finish and returns
// the archive's record of its result.
func recordedRun(t *testing.T, s *Server, c *wsClient, id, line string) *archive.Run {
	t.Helper()
	c.run(id, line)
	var runID int64
	for _, m := range c.until(id, "done") {
		if m.str("type") == "result" {
			runID = int64(m.num("run_id"))
		}
	}
	r, err := s.arch.Get(context.Background(), runID)
	if err != nil {
		t.Fatalf("%s: run_id %d: %v", line, runID, err)
	}
	return r
}

// The timeline is the per-second progress the page saw.
func TestRecordedTimeline(t *testing.T) {
	exec := func(ctx context.Context, _ *harness.Spec, env harness.Env) (harness.Output, error) {
		for i := 1; i <= 3; i++ {
			env.Progress(harness.Progress{ElapsedSeconds: float64(i), Ops: int64(100 * i), OpsPerSec: 100, P50: 5, P99: 9, Engine: "null"})
		}
		return harness.Output{JSON: []byte(`{"kind":"bench","engine":"null","sync":"none","workload":"fillrandom"}`),
			Head: harness.Head{Kind: "bench", Engines: []string{"null"}, Syncs: []string{"none"}, Workloads: []string{"fillrandom"}}}, nil
	}
	s := newServer(t, func(c *Config) { c.exec = exec })
	ts := startServer(t, s)
	c := dial(t, ts, "", nil)
	r := recordedRun(t, s, c, "t", "bench -engine null -ops 300")
	var tl []harness.Progress
	if err := json.Unmarshal(r.Timeline, &tl); err != nil || len(tl) != 3 || tl[2].Ops != 300 {
		t.Errorf("got timeline %s (%v), want the 3 progress events", r.Timeline, err)
	}
}

// blockingArchive holds Add until release is closed.
type blockingArchive struct {
	archive.Archive
	entered chan struct{}
	release chan struct{}
	once    sync.Once
	freed   sync.Once
}

func (b *blockingArchive) free() { b.freed.Do(func() { close(b.release) }) }

func (b *blockingArchive) Add(ctx context.Context, r *archive.Run) (int64, error) {
	b.once.Do(func() { close(b.entered) })
	<-b.release
	return b.Archive.Add(ctx, r)
}

// A result is sent only once its run is recorded: a page that was told a
// run_id can always find the run, even if the server dies right after.
func TestResultWaitsForTheRecord(t *testing.T) {
	inner, err := archive.Open(context.Background(), "", t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { inner.Close() })
	ba := &blockingArchive{Archive: inner, entered: make(chan struct{}), release: make(chan struct{})}
	s := newServer(t, func(c *Config) { c.Archive = ba })
	ts := startServer(t, s)
	t.Cleanup(ba.free) // runs before the server's Close, which waits for the runner
	c := dial(t, ts, "", nil)
	c.run("w", "bench -engine null -ops 200")
	<-ba.entered
	// While the record is being written, no result has gone out.
	c.conn.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	for {
		_, b, err := c.conn.ReadMessage()
		if err != nil {
			break // the deadline: nothing more was sent
		}
		if strings.Contains(string(b), `"type":"result"`) {
			t.Fatalf("got %s before the run was recorded", b)
		}
	}
	// gorilla/websocket's connection is unusable after a read timeout: a
	// fresh one checks the archive instead.
	ba.free()
	waitFor(t, "the run to be recorded", func() bool {
		rs, err := inner.List(context.Background(), archive.Query{})
		return err == nil && len(rs) == 1
	})
}

// "Repeat 5x": one run message with repeat runs the cell's lines that many
// times, each round recorded as its own run, and the result messages say
// which round they are.
func TestRepeatRecordsAGroup(t *testing.T) {
	s := newServer(t, nil)
	ts := startServer(t, s)
	c := dial(t, ts, "", nil)
	c.send(map[string]any{"type": "run", "id": "g", "cell": "bench -engine null -ops 300", "lesson": "01-fixture", "cell_id": "cell-2", "browser": testBrowser, "repeat": 4})
	var ids []int64
	var rounds, startedIn []int
	for _, m := range c.until("g", "done") {
		if m.str("type") == "started" {
			// The page's state line says "round 2 of 4" from these.
			startedIn = append(startedIn, int(m.num("round")))
			if m.num("rounds") != 4 {
				t.Errorf("started message %v: rounds %v, want 4", m, m["rounds"])
			}
		}
		if m.str("type") == "result" {
			ids = append(ids, int64(m.num("run_id")))
			rounds = append(rounds, int(m.num("round")))
		}
	}
	if len(ids) != 4 || rounds[0] != 1 || rounds[3] != 4 {
		t.Fatalf("got run ids %v rounds %v, want 4 runs in rounds 1 to 4", ids, rounds)
	}
	if fmt.Sprint(startedIn) != "[1 2 3 4]" {
		t.Errorf("started messages say rounds %v, want [1 2 3 4]", startedIn)
	}
	seen := map[int64]bool{}
	for _, id := range ids {
		if id <= 0 || seen[id] {
			t.Fatalf("got run ids %v, want 4 distinct recorded ids", ids)
		}
		seen[id] = true
	}
	// A plain run has no round.
	c.run("p", "bench -engine null -ops 100")
	for _, m := range c.until("p", "done") {
		if (m.str("type") == "result" || m.str("type") == "started") && (m["round"] != nil || m["rounds"] != nil) {
			t.Errorf("a run without repeat: %s message has round %v of %v, want none", m.str("type"), m["round"], m["rounds"])
		}
	}
}

func TestRunMessageArchiveFields(t *testing.T) {
	s := newServer(t, nil)
	ts := startServer(t, s)
	c := dial(t, ts, "", nil)
	tests := []struct {
		name string
		msg  map[string]any
		want string
	}{
		{"repeat too many", map[string]any{"repeat": 11}, "repeat 11: must be between 1 and 10"},
		{"repeat negative", map[string]any{"repeat": -1}, "repeat -1: must be between 1 and 10"},
		{"browser with a space", map[string]any{"browser": "a b"}, `browser "a b": a browser id is 1 to 64 letters, digits and '-'`},
		{"lesson with a slash", map[string]any{"lesson": "../x"}, `lesson "../x"`},
		{"cell id too long", map[string]any{"cell_id": strings.Repeat("c", 129)}, "a cell id is 1 to 128"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := map[string]any{"type": "run", "id": "x" + string(rune('a'+i)), "cell": "bench -engine null -ops 10"}
			for k, v := range tt.msg {
				m[k] = v
			}
			c.send(m)
			ms := c.until(m["id"].(string), "done")
			if types(ms) != "error done" || !strings.Contains(ms[0].str("message"), tt.want) {
				t.Errorf("got %s %q, want error %q then done, nothing run", types(ms), ms[0].str("message"), tt.want)
			}
		})
	}
}

// A run: quiz's answer is its prediction: it is stored before the
// measurement starts, and the measurement is recorded as the quiz's run.
func TestQuizRunStoresPredictionFirst(t *testing.T) {
	s := newServer(t, nil)
	ts := startServer(t, s)
	code, r := postQuiz(t, ts, map[string]any{"lesson": "01-fixture", "quiz": "path", "answer": "yes", "browser": testBrowser})
	if code != 200 {
		t.Fatalf("got %d %s, want 200", code, r.Error)
	}
	ps, err := s.arch.Predictions(context.Background(), testBrowser, "path")
	if err != nil || len(ps) != 1 || ps[0].Value != "yes" || ps[0].Lesson != "01-fixture" {
		t.Fatalf("got predictions %+v (%v), want the answer yes for 01-fixture", ps, err)
	}
	var reply struct {
		RunIDs []int64 `json:"run_ids"`
	}
	b, _ := json.Marshal(map[string]any{"lesson": "01-fixture", "quiz": "path", "answer": "no", "browser": testBrowser})
	postJSON(t, ts.URL+"/api/quiz", b, &reply)
	if len(reply.RunIDs) != 1 {
		t.Fatalf("got run_ids %v, want the quiz's one recorded run", reply.RunIDs)
	}
	run, err := s.arch.Get(context.Background(), reply.RunIDs[0])
	if err != nil {
		t.Fatal(err)
	}
	if run.Source != "quiz" || run.Quiz != "path" || run.Lesson != "01-fixture" || run.Browser != testBrowser {
		t.Errorf("got source %q quiz %q lesson %q browser %q, want the quiz path of 01-fixture for %s", run.Source, run.Quiz, run.Lesson, run.Browser, testBrowser)
	}
	ps, _ = s.arch.Predictions(context.Background(), testBrowser, "path")
	if len(ps) != 2 || ps[1].Value != "no" || ps[1].At.After(run.Started) {
		t.Errorf("got predictions %+v and a run started at %v, want the second prediction (no) stored before the run started", ps, run.Started)
	}
}

func TestPredictEndpoint(t *testing.T) {
	s := newServer(t, nil)
	ts := startServer(t, s)
	post := func(body string) (int, map[string]any) {
		t.Helper()
		var out map[string]any
		code := postJSON(t, ts.URL+"/api/predict", []byte(body), &out)
		return code, out
	}
	code, out := post(`{"lesson":"01-fixture","quiz":"tail","browser":"b-1","value":"3.5x"}`)
	if code != 200 || out["id"] == nil {
		t.Fatalf("got %d %v, want 200 with the prediction's id", code, out)
	}
	ps, err := s.arch.Predictions(context.Background(), "b-1", "tail")
	if err != nil || len(ps) != 1 || ps[0].Value != "3.5x" {
		t.Errorf("got %+v (%v), want the prediction 3.5x", ps, err)
	}
	tests := []struct {
		name, body string
		code       int
		want       string
	}{
		{"not a number", `{"lesson":"01-fixture","quiz":"tail","browser":"b-1","value":"lots"}`, 400, `Your answer "lots" is not a number`},
		{"empty", `{"lesson":"01-fixture","quiz":"tail","browser":"b-1","value":""}`, 400, "1 to 128 characters"},
		{"no browser", `{"lesson":"01-fixture","quiz":"tail","value":"3"}`, 400, "browser"},
		{"unknown quiz", `{"lesson":"01-fixture","quiz":"nope","browser":"b-1","value":"3"}`, 404, `no quiz "nope"`},
		{"unknown field", `{"lesson":"01-fixture","quiz":"tail","browser":"b-1","value":"3","x":1}`, 400, "unknown field"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out := post(tt.body)
			if msg, _ := out["error"].(string); code != tt.code || !strings.Contains(msg, tt.want) {
				t.Errorf("got %d %q, want %d with %q", code, msg, tt.code, tt.want)
			}
		})
	}
}

// In room mode the archive keeps what the room saw: a probe's host name
// and data path are not recorded either, since /runs/ID is public.
func TestRoomModeRecordsRedacted(t *testing.T) {
	s := newServer(t, func(c *Config) { c.Token = "secret" })
	ts := startServer(t, s)
	c := dial(t, ts, "?token=secret", nil)
	r := recordedRun(t, s, c, "p", "probe -ops 20")
	var res map[string]any
	json.Unmarshal(r.Result, &res)
	if _, ok := res["host"]; ok || res["dir"] != nil || res["fs"] == nil {
		t.Errorf("recorded probe %s, want its conditions without host and dir", r.Result)
	}
}
