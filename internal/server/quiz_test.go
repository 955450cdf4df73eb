package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

type quizResp struct {
	Correct  bool              `json:"correct"`
	Answer   string            `json:"answer"`
	Want     string            `json:"want"`
	Range    string            `json:"range"`
	Shown    string            `json:"shown"`
	Explain  string            `json:"explain_html"`
	Measured []json.RawMessage `json:"measured"`
	Error    string            `json:"error"`
	TooNoisy bool              `json:"too_noisy"`
	Busy     string            `json:"busy"`
}

// graded reports whether r is the verdict right (as want says) on its
// runs, or, for a prediction on runs a busy machine measured (make
// test's other packages, a CPU hog beside it), no verdict saying why:
// the judge grades no prediction on such runs (quiz.DeclineIfBusy).
func (r quizResp) graded(want bool) bool {
	if r.Busy != "" {
		return r.TooNoisy && !r.Correct
	}
	return r.Correct == want
}

func postQuiz(t *testing.T, ts *httptest.Server, req map[string]any) (int, quizResp) {
	t.Helper()
	b, _ := json.Marshal(req)
	var out quizResp
	code := postJSON(t, ts.URL+"/api/quiz", b, &out)
	return code, out
}

// testBrowser is the browser id the tests' runs and quizzes send.
const testBrowser = "test-browser-1"

// runAs sends a run message the way the page does: with the lesson, the
// cell's id and the browser id.
func (c *wsClient) runAs(id, lessonSlug, cellID, browser, cell string) {
	c.send(map[string]any{"type": "run", "id": id, "cell": cell, "lesson": lessonSlug, "cell_id": cellID, "browser": browser})
}

// measureCell runs the fixture's always-run cell as testBrowser and
// returns the archive ids of its results and the results themselves.
func measureCell(t *testing.T, ts *httptest.Server) ([]int64, []json.RawMessage) {
	t.Helper()
	return measureCellAs(t, ts, testBrowser, "always-run")
}

func measureCellAs(t *testing.T, ts *httptest.Server, browser, cellID string) ([]int64, []json.RawMessage) {
	t.Helper()
	return runCellAs(t, ts, "01-fixture", cellID, browser, "bench -engine null -sync always -workload fillrandom -ops 500\nbench -engine null -sync none -workload fillrandom -ops 500", 2)
}

// runCellAs runs a cell's text over the websocket the way the page does,
// naming the lesson, the cell and the browser, and returns the archive
// id and the result of each line; it fails unless there are lines of
// them, each recorded.
func runCellAs(t *testing.T, ts *httptest.Server, lessonSlug, cellID, browser, text string, lines int) ([]int64, []json.RawMessage) {
	t.Helper()
	c := dial(t, ts, "", nil)
	c.runAs("m", lessonSlug, cellID, browser, text)
	var ids []int64
	var out []json.RawMessage
	for _, m := range c.until("m", "done") {
		if m.str("type") == "result" {
			b, _ := json.Marshal(m["result"])
			out = append(out, b)
			ids = append(ids, int64(m.num("run_id")))
		}
	}
	if len(out) != lines {
		t.Fatalf("got %d results, want %d", len(out), lines)
	}
	for i, id := range ids {
		if id <= 0 {
			t.Fatalf("result %d has run_id %d, want the archive's id", i, id)
		}
	}
	return ids, out
}

// runCell runs a cell's text over the websocket and returns its results,
// one per line, the way the page shows them.
func runCell(t *testing.T, ts *httptest.Server, text string, lines int) []json.RawMessage {
	t.Helper()
	_, out := runCellAs(t, ts, "", "", "", text, lines)
	return out
}

func TestQuizAgainstCellMeasurement(t *testing.T) {
	s := newServer(t, nil)
	ts := startServer(t, s)
	ids, results := measureCell(t, ts)
	var line1 struct {
		Latency struct {
			Put struct {
				P50 float64 `json:"p50_ns"`
				P99 float64 `json:"p99_ns"`
			} `json:"put"`
		} `json:"latency"`
	}
	json.Unmarshal(results[1], &line1)
	ratio := line1.Latency.Put.P99 / line1.Latency.Put.P50
	tests := []struct {
		name, quiz, answer string
		correct            bool
	}{
		{"count right", "count", "500", true},
		{"count with unit", "count", "500 puts", true},
		{"count wrong", "count", "501", false},
		{"ratio right", "tail", fmt.Sprintf("%.3f", ratio), true},
		{"ratio within 10%", "tail", fmt.Sprintf("%.3fx", ratio*1.08), true},
		{"ratio wrong", "tail", fmt.Sprintf("%.3f", ratio*1.5), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, r := postQuiz(t, ts, map[string]any{"lesson": "01-fixture", "quiz": tt.quiz, "answer": tt.answer, "browser": testBrowser, "run_ids": ids})
			if code != 200 {
				t.Fatalf("got status %d (%s), want 200", code, r.Error)
			}
			if r.Correct != tt.correct {
				t.Errorf("answer %s: got correct=%v (measured %s, range %s), want %v", tt.answer, r.Correct, r.Want, r.Range, tt.correct)
			}
		})
	}
	_, r := postQuiz(t, ts, map[string]any{"lesson": "01-fixture", "quiz": "count", "answer": "500", "browser": testBrowser, "run_ids": ids})
	if !strings.HasPrefix(r.Shown, "measured count = 500; ops/s = ") || !strings.Contains(r.Explain, "<em>exactly</em>") {
		t.Errorf("got shown %q explain %q, want measured values and rendered explanation", r.Shown, r.Explain)
	}
}

func TestQuizMeasuresItsOwnRun(t *testing.T) {
	s := newServer(t, nil)
	ts := startServer(t, s)
	// The null engine does no I/O: its p99 is far below a millisecond, so
	// the rule picks choice 1 ("yes") from the measurement.
	tests := []struct {
		answer  string
		correct bool
		want    string
	}{
		{"1", true, "yes"},
		{"yes", true, "yes"},
		{"2", false, "yes"},
	}
	for _, tt := range tests {
		t.Run(tt.answer, func(t *testing.T) {
			code, r := postQuiz(t, ts, map[string]any{"lesson": "01-fixture", "quiz": "path", "answer": tt.answer})
			if code != 200 {
				t.Fatalf("got status %d (%s), want 200", code, r.Error)
			}
			if r.Correct != tt.correct || r.Want != tt.want {
				t.Errorf("got correct=%v want=%q, want correct=%v want=%q", r.Correct, r.Want, tt.correct, tt.want)
			}
			if len(r.Measured) != 1 || !strings.Contains(string(r.Measured[0]), `"engine":"null"`) {
				t.Errorf("got measured %s, want the null engine's result", r.Measured)
			}
		})
	}
}

func TestQuizErrors(t *testing.T) {
	s := newServer(t, nil)
	ts := startServer(t, s)
	ids, results := measureCell(t, ts)
	otherIDs, _ := measureCellAs(t, ts, "another-browser", "always-run")
	cellIDs, _ := measureCellAs(t, ts, testBrowser, "cell-2")
	tests := []struct {
		name string
		req  map[string]any
		code int
		want string
	}{
		{"no lesson", map[string]any{"lesson": "nope", "quiz": "count", "answer": "1"}, 404, `no lesson "nope"`},
		{"no quiz", map[string]any{"lesson": "01-fixture", "quiz": "nope", "answer": "1"}, 404, `no quiz "nope"`},
		{"not a number", map[string]any{"lesson": "01-fixture", "quiz": "count", "answer": "lots", "browser": testBrowser, "run_ids": ids}, 400, `Your answer "lots" is not a number`},
		{"an ambiguous comma", map[string]any{"lesson": "01-fixture", "quiz": "count", "answer": "1,500", "browser": testBrowser, "run_ids": ids}, 400, `Your answer "1,500" could mean 1500 or 1.500: write 1500 (no comma) for the whole number, or 1.500 with a point for the decimal`},
		{"not a choice", map[string]any{"lesson": "01-fixture", "quiz": "path", "answer": "maybe"}, 400, "not one of the choices"},
		{"no results", map[string]any{"lesson": "01-fixture", "quiz": "count", "answer": "1"}, 422, "run the cell first"},
		{"too few runs", map[string]any{"lesson": "01-fixture", "quiz": "tail", "answer": "1", "browser": testBrowser, "run_ids": ids[:1]}, 422, "run the cell first"},
		{"numbers from the client", map[string]any{"lesson": "01-fixture", "quiz": "count", "answer": "500", "results": results}, 400, "grades quizzes from the runs it recorded itself, not from numbers sent with the answer"},
		{"numbers beside run ids", map[string]any{"lesson": "01-fixture", "quiz": "count", "answer": "500", "browser": testBrowser, "run_ids": ids, "results": results}, 400, "not from numbers sent with the answer"},
		{"another browser's runs", map[string]any{"lesson": "01-fixture", "quiz": "count", "answer": "500", "browser": testBrowser, "run_ids": otherIDs}, 422, "was not recorded from cell always-run of lesson 01-fixture in this browser"},
		{"another cell's runs", map[string]any{"lesson": "01-fixture", "quiz": "count", "answer": "500", "browser": testBrowser, "run_ids": cellIDs}, 422, "was not recorded from cell always-run"},
		{"no browser", map[string]any{"lesson": "01-fixture", "quiz": "count", "answer": "500", "run_ids": ids}, 400, "browser: missing"},
		{"an id twice", map[string]any{"lesson": "01-fixture", "quiz": "tail", "answer": "1", "browser": testBrowser, "run_ids": []int64{ids[0], ids[0]}}, 400, "given twice"},
		{"an id never recorded", map[string]any{"lesson": "01-fixture", "quiz": "count", "answer": "500", "browser": testBrowser, "run_ids": []int64{ids[1] + 100}}, 422, "run the cell first"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, r := postQuiz(t, ts, tt.req)
			if code != tt.code || !strings.Contains(r.Error, tt.want) {
				t.Errorf("got %d %q, want %d with %q", code, r.Error, tt.code, tt.want)
			}
		})
	}
	r, _ := http.Post(ts.URL+"/api/quiz", "application/json", strings.NewReader("{"))
	if r.StatusCode != 400 {
		t.Errorf("malformed body: got %d, want 400", r.StatusCode)
	}
	r.Body.Close()
}

// A run: line over the server's caps is named once: which line, its text,
// what is wrong and what is allowed. The author's log says the same.
func TestQuizRunLineOverCap(t *testing.T) {
	var logb strings.Builder
	s := newServer(t, func(c *Config) {
		c.Limits.MaxOps = 200
		c.Log = &logb
	})
	ts := startServer(t, s)
	code, r := postQuiz(t, ts, map[string]any{"lesson": "01-fixture", "quiz": "path", "answer": "yes"})
	want := "measuring for quiz path: run: line 1 (bench -engine null -ops 300): -ops 300: must be between 1 and 200"
	if code != http.StatusInternalServerError || r.Error != want {
		t.Errorf("got %d %q, want 500 %q", code, r.Error, want)
	}
	if n := strings.Count(r.Error, "line 1"); n != 1 {
		t.Errorf("the error names the line %d times, want once: %q", n, r.Error)
	}
	_, log, _ := strings.Cut(logb.String(), "quiz path: ")
	if want := "run: line 1 (bench -engine null -ops 300): -ops 300: must be between 1 and 200\n"; log != want {
		t.Errorf("the log says %q, want %q", log, want)
	}
}
