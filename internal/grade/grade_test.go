package grade

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"kvlab/internal/archive"
	"kvlab/internal/lesson"
	"kvlab/internal/quiz"
)

func mustQuiz(t *testing.T, src string) *quiz.Quiz {
	t.Helper()
	q, err := quiz.Parse(src)
	if err != nil {
		t.Fatalf("%q: %v", src, err)
	}
	return q
}

func rounds(vals ...string) [][]json.RawMessage {
	out := make([][]json.RawMessage, len(vals))
	for i, v := range vals {
		out[i] = []json.RawMessage{json.RawMessage(`{"ratio":` + v + `}`)}
	}
	return out
}

// Grade grades one round as quiz.Check, several as quiz.CheckRepeated;
// each failure has the Kind its caller answers by.
func TestGrade(t *testing.T) {
	one := mustQuiz(t, "id: q\nquestion: ?\ncell: c\nanswer: $0.ratio\ntolerance: 10%\nunit: x\nshow: ratio $0.ratio")
	rep := mustQuiz(t, "id: q\nquestion: ?\ncell: c\nrepeat: 3\nanswer: $0.ratio\ntolerance: 15%\nunit: x")
	for _, tt := range []struct {
		name    string
		q       *quiz.Quiz
		answer  string
		rounds  [][]json.RawMessage
		kind    Kind // 0: no error
		correct bool
		want    float64
	}{
		{"one round, right", one, "105", rounds("100"), 0, true, 100},
		{"one round, wrong", one, "150", rounds("100"), 0, false, 100},
		{"three rounds, the median", rep, "300", rounds("310", "290", "300"), 0, true, 300},
		{"not a number", one, "lots", rounds("100"), BadAnswer, false, 0},
		{"a result that is not JSON", one, "1", [][]json.RawMessage{{json.RawMessage(`{`)}}, BadRequest, false, 0},
		{"no result for the line", one, "1", [][]json.RawMessage{{nil}}, Ungradable, false, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fb, err := Grade(tt.q, tt.answer, tt.rounds, false)
			if got := KindOf(err); err != nil && got != tt.kind || err == nil && tt.kind != 0 {
				t.Fatalf("error %v (kind %d), want kind %d", err, got, tt.kind)
			}
			if err != nil {
				return
			}
			if fb.Correct != tt.correct || fb.WantNum != tt.want {
				t.Errorf("correct %v want %v, want correct %v want %v", fb.Correct, fb.WantNum, tt.correct, tt.want)
			}
		})
	}
	if _, err := Grade(one, "lots", rounds("100"), false); !errors.Is(err, quiz.ErrBadAnswer) {
		t.Errorf("a bad answer's error %v does not wrap quiz.ErrBadAnswer", err)
	}
}

// A prediction graded on a busy machine's rounds is not graded, and says
// why; the same answer after the result (not a prediction) is graded.
func TestGradeDeclinesABusyPrediction(t *testing.T) {
	q := mustQuiz(t, "id: q\nquestion: ?\ncell: c\npredict: yes\nanswer: $0.ops_per_sec\ntolerance: 10%")
	busy := [][]json.RawMessage{{json.RawMessage(`{"kind":"bench","ops_per_sec":100,"cpu":{"idle_ms":200,"idle_busy_fraction":0.9}}`)}}
	fb, err := Grade(q, "100", busy, true)
	if err != nil || fb.Correct || !fb.TooNoisy || !strings.Contains(fb.Busy, "90% of the processors") {
		t.Errorf("a prediction on a busy machine: correct %v too_noisy %v busy %q (%v), want not graded, naming the processors", fb.Correct, fb.TooNoisy, fb.Busy, err)
	}
	fb, err = Grade(q, "100", busy, false)
	if err != nil || !fb.Correct || fb.TooNoisy || fb.Busy != "" {
		t.Errorf("an answer after the result: correct %v too_noisy %v busy %q (%v), want graded right", fb.Correct, fb.TooNoisy, fb.Busy, err)
	}
}

// Measure gives a poll the figure the rounds give (their median) and,
// from the same decoding, why a busy machine's rounds judge no
// prediction; a result that is not JSON is the caller's bad request.
func TestMeasure(t *testing.T) {
	q := mustQuiz(t, "id: q\nquestion: ?\ncell: c\nrepeat: 3\nanswer: $0.ops_per_sec\ntolerance: 10%")
	run := func(ops, busy string) []json.RawMessage {
		return []json.RawMessage{json.RawMessage(`{"kind":"bench","ops_per_sec":` + ops + `,"cpu":{"idle_ms":200,"idle_busy_fraction":` + busy + `}}`)}
	}
	quiet := [][]json.RawMessage{run("100", "0.01"), run("300", "0.02"), run("200", "0")}
	fb, why, err := Measure(q, quiet)
	if err != nil || fb.WantNum != 200 || why != "" {
		t.Errorf("quiet rounds: %v, %q, %v; want their median 200 and no busy reason", fb.WantNum, why, err)
	}
	one := mustQuiz(t, "id: q\nquestion: ?\ncell: c\nanswer: $0.ratio\ntolerance: 10%\nshow: ratio $0.ratio")
	if fb, _, err := Measure(one, rounds("42")); err != nil || fb.WantNum != 42 || fb.Shown != "ratio 42" {
		t.Errorf("one round: %v, shown %q (%v); want 42, shown \"ratio 42\"", fb.WantNum, fb.Shown, err)
	}
	if _, _, err := Measure(q, nil); KindOf(err) != Ungradable {
		t.Errorf("no rounds: %v, want ungradable", err)
	}
	busy := [][]json.RawMessage{run("100", "0.01"), run("300", "0.6"), run("200", "0")}
	if fb, why, err := Measure(q, busy); err != nil || fb.WantNum != 200 || !strings.Contains(why, "60% of the processors") {
		t.Errorf("one busy round: %v, %q, %v; want the median 200 and why the machine was busy", fb.WantNum, why, err)
	}
	if _, _, err := Measure(q, [][]json.RawMessage{{json.RawMessage(`{`)}}); KindOf(err) != BadRequest {
		t.Errorf("a result that is not JSON: %v, want a bad request", err)
	}
}

// Pick reads each run as the line its record names, and says why a run
// cannot grade.
func TestPick(t *testing.T) {
	l := &lesson.Lesson{Slug: "01-x", Cells: []*lesson.Cell{{ID: "c", Lines: []string{"bench -ops 10", "bench -ops 20"}}}}
	q := mustQuiz(t, "id: q\nquestion: ?\ncell: c\nanswer: $1.ratio / $0.ratio\ntolerance: 10%\nunit: x")
	run := func(id int64, line int, spec, ratio string) *archive.Run {
		return &archive.Run{ID: id, Line: line, Spec: spec, Started: time.Unix(id, 0), Result: json.RawMessage(`{"ratio":` + ratio + `}`)}
	}
	// Given in reverse order, each still reads as its own line.
	g, err := Pick(l, q, []*archive.Run{run(2, 1, "bench -ops 20", "6"), run(1, 0, "bench -ops 10", "3")})
	if err != nil {
		t.Fatal(err)
	}
	fb, err := Grade(q, "2", g.Rounds(), false)
	if err != nil || !fb.Correct || fb.WantNum != 2 {
		t.Errorf("reversed runs: %+v %v, want 6/3 = 2 right", fb, err)
	}
	if !g.Started().Equal(time.Unix(1, 0)) {
		t.Errorf("started %v, want the earliest run's", g.Started())
	}
	// An edited line is unused, and the error says to press Reset.
	_, err = Pick(l, q, []*archive.Run{run(1, 0, "bench -ops 99", "3"), run(2, 1, "bench -ops 20", "6")})
	if KindOf(err) != Ungradable {
		t.Errorf("edited line: %v, want an Ungradable error", err)
	}
	// Two runs for one line of a quiz without repeat: the request's fault.
	_, err = Pick(l, q, []*archive.Run{run(1, 0, "bench -ops 10", "3"), run(3, 0, "bench -ops 10", "3")})
	if KindOf(err) != BadRequest {
		t.Errorf("two runs of line 1: %v, want a BadRequest error", err)
	}
}
