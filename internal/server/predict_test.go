package server

import (
	"encoding/json"
	"os"
	"testing"
)

type predictResp struct {
	quizResp
	Predicted  bool     `json:"predicted"`
	Off        string   `json:"off"`
	OffFactor  *float64 `json:"off_factor"`
	OffPercent *float64 `json:"off_percent"`
}

// A predict: yes quiz says "predicted" when the server stored the answer
// before the run (not because the request says so), and every reply
// says how far off the answer was.
func TestQuizPredictionReply(t *testing.T) {
	s := newServer(t, func(c *Config) { c.Lessons = os.DirFS("testdata/predict") })
	ts := startServer(t, s)
	var stored map[string]any
	if code := postJSON(t, ts.URL+"/api/predict", []byte(`{"lesson":"01-predict","quiz":"guess-count","browser":"`+testBrowser+`","value":"1000"}`), &stored); code != 200 {
		t.Fatalf("POST /api/predict: %d %v", code, stored)
	}
	ids, _ := runCellAs(t, ts, "01-predict", "guess", testBrowser, "bench -engine null -sync none -workload fillrandom -ops 500", 1)
	for _, tt := range []struct {
		quiz       string
		prediction bool
		answer     string
		predicted  bool
		off        string
		factor     float64
	}{
		{"guess-count", true, "1000", true, "2× the measured value", 2},
		{"guess-count", true, "450", false, "10% below the measured value", 0.9}, // not stored first
		{"after-count", true, "500", false, "exactly the measured value", 1},     // not a predict: yes quiz
	} {
		req := map[string]any{"lesson": "01-predict", "quiz": tt.quiz, "answer": tt.answer, "browser": testBrowser, "run_ids": ids, "prediction": tt.prediction}
		b, _ := json.Marshal(req)
		var r predictResp
		code := postJSON(t, ts.URL+"/api/quiz", b, &r)
		if code != 200 {
			t.Fatalf("%s: status %d: %s", tt.quiz, code, r.Error)
		}
		if r.Predicted != tt.predicted || r.Off != tt.off || r.OffFactor == nil || *r.OffFactor != tt.factor {
			t.Errorf("%s answer %s prediction %v: predicted %v off %q factor %v, want %v %q %v", tt.quiz, tt.answer, tt.prediction, r.Predicted, r.Off, r.OffFactor, tt.predicted, tt.off, tt.factor)
		}
	}
}
