package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"kvlab/internal/archive"
	"kvlab/internal/grade"
	"kvlab/internal/quiz"
	"kvlab/internal/server/liveclass"
	"kvlab/internal/server/run"
	"kvlab/internal/server/web"
)

// POST /api/predict stores a prediction in the run archive when the
// reader enters it, before the cell it predicts runs, so the record shows
// the prediction came first. Request:
//
//	{"lesson":"04-the-fsync-tax","quiz":"flush-vs-write","browser":"...","value":"120"}
//
// Reply: {"id":7,"at":"2026-12-01T03:04:05Z"} ("at": when the server
// accepted it; only runs that start after it grade it as a prediction),
// or {"error":"..."} with
// 400 (bad body or value), 403 (origin or host), 404 (no such quiz) or 500
// (the archive failed). A run: quiz's answer is its prediction and is
// stored by POST /api/quiz before it measures.

type predictRequest struct {
	Lesson  string `json:"lesson"`
	Quiz    string `json:"quiz"`
	Browser string `json:"browser"`
	Value   string `json:"value"`
}

type predictReply struct {
	ID int64     `json:"id"`
	At time.Time `json:"at"`
}

func (a *quizAPI) handlePredict(w http.ResponseWriter, r *http.Request) {
	s := a.s
	if !apiAccessOK(s.guard, w, r) || !s.writeAllowed(w, r, "prediction") {
		return
	}
	var req predictRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, s.cfg.Writes.MaxBytes))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		web.JSONError(w, http.StatusBadRequest, "malformed request: "+err.Error()+` (want {"lesson":"...","quiz":"...","browser":"...","value":"..."})`)
		return
	}
	if err := run.CheckOrigin("", "", req.Browser); err != nil || req.Browser == "" {
		web.JSONError(w, http.StatusBadRequest, `browser: 1 to 64 letters, digits and '-' (the id the page keeps), required`)
		return
	}
	l, q := a.quizFor(w, req.Lesson, req.Quiz)
	if q == nil {
		return
	}
	v := strings.TrimSpace(req.Value)
	switch {
	case v == "" || len(v) > liveclass.MaxPredictionLen:
		web.JSONError(w, http.StatusBadRequest, fmt.Sprintf("value: the prediction must be 1 to %d characters", liveclass.MaxPredictionLen))
		return
	case q.Choices == nil:
		if _, err := quiz.ParseNumber(v, q.Unit); err != nil {
			web.JSONError(w, http.StatusBadRequest, grade.AnswerMessage(err))
			return
		}
	}
	if !s.predictionAllowed(w, req.Browser, l.Slug, q.ID) {
		return
	}
	// At is taken here, when the server accepts the prediction: it is what
	// a run's start is compared with (quizpredict.go), however late a
	// batched write commits it.
	p := &archive.Prediction{Browser: req.Browser, Lesson: l.Slug, Quiz: q.ID, Value: v, At: time.Now().UTC()}
	id, err := s.arch.AddPrediction(r.Context(), p)
	if err != nil {
		web.JSONError(w, http.StatusInternalServerError, "storing the prediction: "+err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(predictReply{ID: id, At: p.At})
}
