package server

import (
	"context"
	"encoding/json"
	"math"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"kvlab/internal/quiz"
)

// The grading lesson's cell "two", as the lesson writes it.
const (
	gradingLine1 = "bench -engine null -sync none -workload fillrandom -ops 300"
	gradingLine2 = "bench -engine null -sync none -workload fillrandom -ops 600"
)

func gradingServer(t *testing.T) *Server {
	return newServer(t, func(c *Config) { c.Lessons = os.DirFS("testdata/grading") })
}

// gradingReply is what the grading tests read of a POST /api/quiz reply.
type gradingReply struct {
	quizResp
	RunIDs []int64 `json:"run_ids"`
	Unused []struct {
		RunID int64  `json:"run_id"`
		Why   string `json:"why"`
	} `json:"unused"`
}

func postGrading(t *testing.T, url string, req map[string]any) (int, gradingReply) {
	t.Helper()
	var r gradingReply
	code := postJSON(t, url+"/api/quiz", mustJSON(t, req), &r)
	return code, r
}

// A cell rewritten by the reader runs and is recorded under the cell, but
// grades no quiz unless the quiz allows the edit; the reply says which
// line is not the lesson's.
func TestQuizRefusesARewrittenCell(t *testing.T) {
	s := gradingServer(t)
	ts := startServer(t, s)
	rewritten := gradingLine1 + "\n" + strings.Replace(gradingLine2, "-ops 600", "-ops 2100", 1)
	ids, _ := runCellAs(t, ts, "01-grading", "two", testBrowser, rewritten, 2)

	// The record says which line each run was, as run, and whether it is the lesson's.
	for i, want := range []struct {
		spec string
		own  bool
	}{{gradingLine1, true}, {strings.Replace(gradingLine2, "600", "2100", 1), false}} {
		r, err := s.arch.Get(context.Background(), ids[i])
		if err != nil {
			t.Fatal(err)
		}
		if r.Cell != "two" || r.Line != i || r.Spec != want.spec || r.Own != want.own {
			t.Errorf("run %d: cell %q line %d spec %q own %v, want two %d %q %v", ids[i], r.Cell, r.Line, r.Spec, r.Own, i, want.spec, want.own)
		}
	}

	// 2100/300 = 7: right for the rewritten cell, wrong for the lesson's.
	code, r := postGrading(t, ts.URL, map[string]any{"lesson": "01-grading", "quiz": "ratio", "answer": "7", "browser": testBrowser, "run_ids": ids})
	if code != 422 {
		t.Fatalf("rewritten cell: status %d (correct %v, want %s), want 422", code, r.Correct, r.Want)
	}
	for _, want := range []string{"this run's line 2 (" + strings.Replace(gradingLine2, "600", "2100", 1) + ") is not the lesson's line 2 (" + gradingLine2 + ")", "grades no quiz"} {
		if !strings.Contains(r.Error, want) {
			t.Errorf("rewritten cell: error %q does not say %q", r.Error, want)
		}
	}
	// One short paragraph that says what to do, however many runs.
	if !strings.HasSuffix(r.Error, "press Reset to grade") || strings.Count(r.Error, "; run ") > 0 {
		t.Errorf("rewritten cell: error %q, want one paragraph ending \"press Reset to grade\"", r.Error)
	}

	// A quiz that reads only the unedited line grades, and says why the
	// edited one was not used.
	code, r = postGrading(t, ts.URL, map[string]any{"lesson": "01-grading", "quiz": "first", "answer": "300", "browser": testBrowser, "run_ids": ids})
	if code != 200 || !r.Correct {
		t.Fatalf("first line only: status %d correct %v: %s", code, r.Correct, r.Error)
	}
	if len(r.Unused) != 1 || r.Unused[0].RunID != ids[1] || !strings.Contains(r.Unused[0].Why, "quiz reads lines 1 to 1") {
		t.Errorf("first line only: unused %+v, want run %d named as a line the quiz does not read", r.Unused, ids[1])
	}

	// A quiz that declares -ops editable grades from the edited line.
	code, r = postGrading(t, ts.URL, map[string]any{"lesson": "01-grading", "quiz": "try-ops", "answer": "7", "browser": testBrowser, "run_ids": ids})
	if code != 200 || !r.Correct {
		t.Fatalf("edit: -ops: status %d correct %v want %s: %s", code, r.Correct, r.Want, r.Error)
	}

	// An edit of another flag is not one it allows.
	other := gradingLine1 + "\n" + strings.Replace(gradingLine2, "-sync none", "-sync always", 1)
	ids, _ = runCellAs(t, ts, "01-grading", "two", testBrowser, other, 2)
	code, r = postGrading(t, ts.URL, map[string]any{"lesson": "01-grading", "quiz": "try-ops", "answer": "2", "browser": testBrowser, "run_ids": ids})
	if code != 422 || !strings.Contains(r.Error, "this quiz lets you change only -ops") {
		t.Errorf("edit of -sync: status %d error %q, want 422 naming the flags the quiz lets you change", code, r.Error)
	}
}

// The results are read in the order the record gives their lines, not
// the order of the request's run_ids.
func TestQuizReadsLinesInTheRecordsOrder(t *testing.T) {
	ts := startServer(t, gradingServer(t))
	ids, _ := runCellAs(t, ts, "01-grading", "two", testBrowser, gradingLine1+"\n"+gradingLine2, 2)
	reversed := []int64{ids[1], ids[0]}
	code, r := postGrading(t, ts.URL, map[string]any{"lesson": "01-grading", "quiz": "ratio", "answer": "0.5", "browser": testBrowser, "run_ids": reversed})
	if code != 200 {
		t.Fatalf("status %d: %s", code, r.Error)
	}
	if r.Correct || r.Want != "2" {
		t.Errorf("reversed run_ids: correct %v want %s, want the measured 2 (600/300) and 0.5 refused", r.Correct, r.Want)
	}
	if !slices.Equal(r.RunIDs, ids) {
		t.Errorf("graded from run_ids %v, want %v (line by line)", r.RunIDs, ids)
	}

	// Two runs of one line are refused, in either order.
	again, _ := runCellAs(t, ts, "01-grading", "two", testBrowser, gradingLine1+"\n"+gradingLine2, 2)
	code, r = postGrading(t, ts.URL, map[string]any{"lesson": "01-grading", "quiz": "ratio", "answer": "2", "browser": testBrowser, "run_ids": []int64{ids[0], again[0]}})
	if code != 400 || !strings.Contains(r.Error, "are both line 1 of the cell") {
		t.Errorf("two first lines: status %d error %q, want 400 saying both are line 1", code, r.Error)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// predictionReply is what the prediction tests read of a quiz reply.
type predictionReply struct {
	gradingReply
	Predicted    bool   `json:"predicted"`
	Timing       string `json:"timing"`
	PredictionID int64  `json:"prediction_id"`
	Attempt      int    `json:"attempt"`
	Attempts     int    `json:"attempts"`
	Kept         bool   `json:"kept"`
}

func predictAs(t *testing.T, ts *httptest.Server, quizID, value string) {
	t.Helper()
	var out map[string]any
	body := mustJSON(t, map[string]any{"lesson": "01-grading", "quiz": quizID, "browser": testBrowser, "value": value})
	if code := postJSON(t, ts.URL+"/api/predict", body, &out); code != 200 {
		t.Fatalf("POST /api/predict %s: %d %v", value, code, out)
	}
}

func checkGuess(t *testing.T, ts *httptest.Server, answer string, ids []int64) (int, predictionReply) {
	t.Helper()
	var r predictionReply
	req := map[string]any{"lesson": "01-grading", "quiz": "guess", "answer": answer, "browser": testBrowser, "prediction": true}
	if ids != nil {
		req["run_ids"] = ids
	}
	code := postJSON(t, ts.URL+"/api/quiz", mustJSON(t, req), &r)
	return code, r
}

// A prediction stored after the run, or never stored, is an answer after
// the result, whatever the request's "prediction" says.
func TestPredictionAfterTheResult(t *testing.T) {
	ts := startServer(t, gradingServer(t))
	ids, _ := runCellAs(t, ts, "01-grading", "two", testBrowser, gradingLine1+"\n"+gradingLine2, 2)
	predictAs(t, ts, "guess", "300") // the result is already known
	for _, answer := range []string{"300", "280"} {
		code, r := checkGuess(t, ts, answer, ids)
		if code != 200 {
			t.Fatalf("%s: status %d: %s", answer, code, r.Error)
		}
		if r.Predicted || r.Timing != "answered after the result" || r.Attempt != 0 || !r.Correct {
			t.Errorf("%s after the run: predicted %v timing %q attempt %d correct %v, want an answer after the result, right", answer, r.Predicted, r.Timing, r.Attempt, r.Correct)
		}
	}
}

// A prediction is graded once, against the first run after it that may
// grade it; later runs do not re-grade it, and a new prediction is a new
// attempt.
func TestPredictionGradedOnce(t *testing.T) {
	s := gradingServer(t)
	ts := startServer(t, s)
	predictAs(t, ts, "guess", "290")
	if code, r := checkGuess(t, ts, "290", nil); code != 422 || !strings.Contains(r.Error, "is graded by the first run of cell two after it") {
		t.Fatalf("before any run: status %d %q, want 422 saying the first run after it grades it", code, r.Error)
	}
	first, _ := runCellAs(t, ts, "01-grading", "two", testBrowser, gradingLine1+"\n"+gradingLine2, 2)
	code, r := checkGuess(t, ts, "290", first)
	if code != 200 || !r.Predicted || r.Timing != "predicted before the run" || !r.graded(true) || r.Want != "300" || r.Attempt != 1 || r.Attempts != 1 || r.Kept {
		t.Fatalf("first grade: %d %+v, want predicted, right against 300, attempt 1 of 1, not kept from before", code, r)
	}

	// A later run (an edit the quiz allows, -ops 900) does not re-grade it.
	edited := strings.Replace(gradingLine1, "-ops 300", "-ops 900", 1)
	later, _ := runCellAs(t, ts, "01-grading", "two", testBrowser, edited+"\n"+gradingLine2, 2)
	firstVerdict := r
	code, r = checkGuess(t, ts, "290", later)
	if code != 200 || r.Correct != firstVerdict.Correct || r.Busy != firstVerdict.Busy || r.Want != "300" || !r.Kept || !slices.Equal(r.RunIDs, first[:1]) {
		t.Errorf("after a later run: %d correct %v busy %q want %s kept %v run_ids %v, want the kept verdict (correct %v busy %q, 300, runs %v)", code, r.Correct, r.Busy, r.Want, r.Kept, r.RunIDs, firstVerdict.Correct, firstVerdict.Busy, first[:1])
	}

	// A new prediction is attempt 2, graded by the first run after it.
	predictAs(t, ts, "guess", "850")
	if code, r = checkGuess(t, ts, "850", later); code != 200 || r.Predicted || r.Timing != "answered after the result" {
		t.Errorf("attempt 2 against the run before it: %d predicted %v timing %q, want an answer after the result", code, r.Predicted, r.Timing)
	}
	again, _ := runCellAs(t, ts, "01-grading", "two", testBrowser, edited+"\n"+gradingLine2, 2)
	code, r = checkGuess(t, ts, "850", again)
	if code != 200 || !r.Predicted || !r.graded(true) || r.Want != "900" || r.Attempt != 2 || r.Attempts != 2 {
		t.Errorf("attempt 2: %d %+v, want predicted, right against 900, attempt 2 of 2", code, r)
	}
	code, r = checkGuess(t, ts, "290", again)
	if code != 200 || r.Want != "300" || r.Attempt != 1 || r.Attempts != 2 || !r.Kept {
		t.Errorf("attempt 1 asked again: %d %+v, want its kept verdict (300), attempt 1 of 2", code, r)
	}
	ps, err := s.arch.Predictions(context.Background(), testBrowser, "guess")
	if err != nil || len(ps) != 2 || len(ps[0].Verdict) == 0 || len(ps[1].Verdict) == 0 {
		t.Errorf("the record: %+v (%v), want two predictions, each with its verdict", ps, err)
	}
}

// A repeat: quiz is graded on its K runs of the cell: against their
// median, within its band when most rounds fit it, otherwise not at all
// (too noisy); the reply shows the spread.
func TestQuizGradedOnRepeatedRuns(t *testing.T) {
	ts := startServer(t, gradingServer(t))
	c := dial(t, ts, "", nil)
	c.send(map[string]any{"type": "run", "id": "r", "cell": gradingLine1 + "\n" + gradingLine2, "lesson": "01-grading", "cell_id": "two", "browser": testBrowser, "repeat": 3})
	var ids []int64
	var rates []float64
	for _, m := range c.until("r", "done") {
		if m.str("type") == "result" {
			ids = append(ids, int64(m.num("run_id")))
			if m.num("line") == 0 {
				rates = append(rates, m["result"].(map[string]any)["ops_per_sec"].(float64))
			}
		}
	}
	if len(ids) != 6 || len(rates) != 3 {
		t.Fatalf("got %d results and %d first-line rates, want 6 and 3", len(ids), len(rates))
	}
	lo, hi := slices.Min(rates), slices.Max(rates)
	var r struct {
		gradingReply
		Low      float64 `json:"low"`
		High     float64 `json:"high"`
		TooNoisy bool    `json:"too_noisy"`
		Spread   struct {
			Runs int     `json:"runs"`
			Low  float64 `json:"low"`
			High float64 `json:"high"`
			Text string  `json:"text"`
		} `json:"spread"`
	}
	answer := strconv.FormatFloat(lo, 'f', -1, 64)
	if code := postJSON(t, ts.URL+"/api/quiz", mustJSON(t, map[string]any{"lesson": "01-grading", "quiz": "rate", "answer": answer, "browser": testBrowser, "run_ids": ids}), &r); code != 200 {
		t.Fatalf("status %d: %s", code, r.Error)
	}
	sorted := slices.Sorted(slices.Values(rates))
	med := sorted[1]
	if r.Want != quiz.FormatNumber(med) || r.Spread.Runs != 3 || r.Spread.Low != lo || r.Spread.High != hi {
		t.Errorf("graded %s: want %s, spread %+v; want the median %s over 3 runs %v to %v", answer, r.Want, r.Spread, quiz.FormatNumber(med), lo, hi)
	}
	// The band (1 %) is not widened to the runs: most rounds (2 of 3)
	// either fit it, and the answer is graded against it, or they do
	// not, and the machine was too noisy to grade.
	// The server computes the band as median ∓ 1 % of it, which can
	// differ from med*0.99 in the last bit: compare to a part in 10¹².
	near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-12*math.Abs(b) }
	if !near(r.Low, med*0.99) || !near(r.High, med*1.01) {
		t.Errorf("range %v to %v, want the 1%% band around the median %v", r.Low, r.High, med)
	}
	in := 0
	for _, v := range rates {
		if v >= r.Low && v <= r.High {
			in++
		}
	}
	within := 2*in > len(rates)
	switch {
	case within && (r.TooNoisy || r.Correct != (lo >= r.Low)):
		t.Errorf("rounds within the band: too_noisy %v correct %v, want graded", r.TooNoisy, r.Correct)
	case !within && (!r.TooNoisy || r.Correct || !strings.Contains(r.Spread.Text, "too noisy to grade the prediction")):
		t.Errorf("rounds %v–%v wider than the band: too_noisy %v correct %v text %q, want not graded, too noisy", lo, hi, r.TooNoisy, r.Correct, r.Spread.Text)
	}
	if want := "your 3 rounds gave " + quiz.FormatNumber(lo) + "–" + quiz.FormatNumber(hi) + " ops/s"; !strings.HasPrefix(r.Spread.Text, want) {
		t.Errorf("spread text %q, want it to start %q", r.Spread.Text, want)
	}
	if len(r.RunIDs) != 3 {
		t.Errorf("graded from runs %v, want the first line's 3", r.RunIDs)
	}

	// One run is not enough.
	code, one := postGrading(t, ts.URL, map[string]any{"lesson": "01-grading", "quiz": "rate", "answer": answer, "browser": testBrowser, "run_ids": ids[:2]})
	if code != 422 || !strings.Contains(one.Error, "is graded on 3 rounds of cell two and got 1 of line 1: press the cell's Run, which runs the 3 rounds") {
		t.Errorf("one run: status %d %q, want 422 asking for 3 runs", code, one.Error)
	}
}
