package lessons_test

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"kvlab/engine/crashtest"
	"kvlab/harness"
	"kvlab/harness/calc"
	"kvlab/harness/harnesstest"
	"kvlab/harness/peers" // registers bbolt, pebble, sqlite, kvserver and redis for the side-by-side cells
	"kvlab/internal/browsertest"
	"kvlab/internal/lesson"
	"kvlab/internal/quiz"
	"kvlab/internal/server"
	"kvlab/lessons"
	"kvlab/wasm/grader"
)

// scale is the factor every cell's size budgets (-ops, -duration, -keys,
// -trials, -warmup) are multiplied by before running. With -short the
// course runs at a twentieth of its size; without it, at full size, which
// is what a student gets (about a minute or two of runs on a typical disk).
var scale = flag.Float64("scale", 0, "size factor for running cells (0 = 0.05 with -short, 1 otherwise)")

// TestMain lets this test binary serve as the child of the crash cells:
// `crash` re-executes the running binary, and the child must run its
// workload before the tests start.
func TestMain(m *testing.M) {
	crashtest.MaybeRunChild()
	os.Exit(m.Run())
}

// maxCellLines is the server's default cap on lines per cell
// (server.Config.MaxLinesPerCell's zero value).
const maxCellLines = 16

func load(t *testing.T) []*lesson.Lesson {
	t.Helper()
	ls, err := lesson.Load(lessons.FS)
	if err != nil {
		t.Fatalf("loading the lessons: %v", err)
	}
	for _, l := range ls {
		for _, c := range l.Cells {
			if c.Script != "" {
				for _, line := range c.Lines {
					cellScripts.Store(line, c.Script)
				}
			}
		}
	}
	return ls
}

// cellScripts maps each line of a cell that has a ```lua mine block to
// that block's script: what the page sends with the cell's run, and
// what execIn hands its -script mine lines (harness.Env.Script).
var cellScripts sync.Map

// TestFrontMatter checks there are twelve chapters, ordered 1..12, each with a
// title and a summary and at least one quiz or exercise and one cell.
func TestFrontMatter(t *testing.T) {
	ls := load(t)
	if got, want := len(ls), 12; got != want {
		t.Fatalf("got %d lessons, want %d", got, want)
	}
	for i, l := range ls {
		t.Run(l.Slug, func(t *testing.T) {
			if got, want := l.Order, i+1; got != want {
				t.Errorf("order: got %d, want %d", got, want)
			}
			if prefix := fmt.Sprintf("%02d-", i+1); !strings.HasPrefix(l.File, prefix) {
				t.Errorf("file name %q: want prefix %q", l.File, prefix)
			}
			if l.Title == "" || l.Summary == "" {
				t.Errorf("title %q, summary %q: both are required", l.Title, l.Summary)
			}
			if len(l.Cells) == 0 {
				t.Errorf("no lab cells")
			}
			if len(l.Quizzes)+len(l.Exercises) == 0 {
				t.Errorf("no quiz and no exercise")
			}
			if !strings.Contains(string(l.Body), "## Try this") {
				t.Errorf(`no "## Try this" section`)
			}
		})
	}
}

// TestCellsParse checks every lab line and every quiz run: line with the
// harness's own parser under the server's default caps.
func TestCellsParse(t *testing.T) {
	lim := server.DefaultLimits()
	for _, l := range load(t) {
		t.Run(l.Slug, func(t *testing.T) {
			for _, p := range lineProblems(l, lim) {
				t.Error(p)
			}
		})
	}
}

// lineProblems lists every run-spec line of l that harness.ParseSpec rejects
// under lim, and every cell with more lines than the server runs.
func lineProblems(l *lesson.Lesson, lim harness.Limits) []string {
	var ps []string
	for _, c := range l.Cells {
		if n := len(c.Lines); n > maxCellLines {
			ps = append(ps, fmt.Sprintf("cell %s: %d lines, the server allows %d", c.ID, n, maxCellLines))
		}
		for i, line := range c.Lines {
			if _, err := harness.ParseSpec(line, lim); err != nil {
				ps = append(ps, fmt.Sprintf("cell %s line %d %q: %v", c.ID, i, line, err))
			}
		}
	}
	for _, q := range l.Quizzes {
		for i, line := range q.Run {
			if _, err := harness.ParseSpec(line, lim); err != nil {
				ps = append(ps, fmt.Sprintf("quiz %s run line %d %q: %v", q.ID, i, line, err))
			}
		}
	}
	return ps
}

// TestAnswersAreMeasured checks every quiz answer reads at least one
// result ($N): an answer with no reference is a number typed into the
// lesson, right on one disk and wrong on the next.
func TestAnswersAreMeasured(t *testing.T) {
	for _, l := range load(t) {
		for _, p := range answerProblems(l) {
			t.Error(p)
		}
	}
}

func answerProblems(l *lesson.Lesson) []string {
	var ps []string
	for _, q := range l.Quizzes {
		if !strings.Contains(q.Answer.String(), "$") {
			ps = append(ps, fmt.Sprintf("%s: quiz %s: answer %q reads no result; write it over $0, $1, ...", l.Slug, q.ID, q.Answer))
		}
	}
	return ps
}

// TestExercisesExist checks every exercise block names an exercise the
// grader knows, and every exercise is used.
func TestExercisesExist(t *testing.T) {
	for _, p := range exerciseProblems(load(t), grader.Names()) {
		t.Error(p)
	}
}

func exerciseProblems(ls []*lesson.Lesson, names []string) []string {
	var ps []string
	seen := map[string]bool{}
	for _, l := range ls {
		for _, e := range l.Exercises {
			seen[e] = true
			if !slices.Contains(names, e) {
				ps = append(ps, fmt.Sprintf("%s: exercise %q: the grader has %v", l.Slug, e, names))
			}
		}
	}
	for _, n := range names {
		if !seen[n] {
			ps = append(ps, fmt.Sprintf("exercise %q is used by no lesson", n))
		}
	}
	return ps
}

// TestCheckersCatchBadLessons feeds the checkers above a lesson with a
// mistake of each kind, so that a passing run of the real lessons means
// something.
func TestCheckersCatchBadLessons(t *testing.T) {
	src := "---\ntitle: Bad\nsummary: s\norder: 1\n---\n" +
		"```lab a\nbench -engine kv -ops 0\nbench -engine kv -ops 2000 -threads 100000\nbench -engine kv -frobnicate\nbench -engine kv -ops 100\n```\n" +
		"```quiz\nid: q\nquestion: ?\nrun: bench -engine nosuch -ops 10\nanswer: $0.ops_per_sec\ntolerance: 10%\n```\n" +
		"```quiz\nid: typed\nquestion: ?\ncell: a\nanswer: 42 * 2\ntolerance: 10%\n```\n" +
		"```exercise percentile\n```\n"
	l, err := lesson.Parse("01-bad.md", []byte(src))
	if err != nil {
		t.Fatalf("parsing the fixture: %v", err)
	}
	ps := lineProblems(l, server.DefaultLimits())
	for _, want := range []string{`line 0 "bench -engine kv -ops 0"`, `line 1 `, `line 2 `, `quiz q run line 0`} {
		if !slices.ContainsFunc(ps, func(p string) bool { return strings.Contains(p, want) }) {
			t.Errorf("lineProblems: no problem mentioning %q; got %q", want, ps)
		}
	}
	if got, want := len(ps), 4; got != want {
		t.Errorf("lineProblems: got %d problems, want %d: %q", got, want, ps)
	}

	ps = answerProblems(l)
	if len(ps) != 1 || !strings.Contains(ps[0], "quiz typed") {
		t.Errorf("answerProblems: got %q, want one problem naming quiz typed", ps)
	}

	ps = exerciseProblems([]*lesson.Lesson{l}, []string{"percentile-tests", "mean-vs-tail"})
	if got, want := len(ps), 3; got != want {
		t.Errorf("exerciseProblems: got %d problems, want %d (one unknown, two unused): %q", got, want, ps)
	}

	// Quizzes against a made-up result: a field that is not there, a
	// division by zero, a choice index out of range, and one that works.
	var res any
	if err := json.Unmarshal([]byte(`{"kind":"bench","ops_per_sec":100,"fsyncs":0,"latency":{"put":{"p50_ns":10,"p99_ns":30}}}`), &res); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		quiz    string
		wantErr string
	}{
		{"id: a\nquestion: ?\ncell: c\nanswer: $0.latency.get.p99_ns\ntolerance: 1", "get"},
		{"id: b\nquestion: ?\ncell: c\nanswer: $0.ops_per_sec / $0.fsyncs\ntolerance: 1", "zero"},
		{"id: c\nquestion: ?\ncell: c\nchoices: x | y\nanswer: 3", "choice index"},
		{"id: d\nquestion: ?\ncell: c\nanswer: $0.latency.put.p99_ns / $0.latency.put.p50_ns\ntolerance: 5%", ""},
	} {
		q, err := quiz.Parse(tc.quiz)
		if err != nil {
			t.Fatalf("quiz %q: %v", tc.quiz, err)
		}
		_, err = quizAnswer(q, []any{res})
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("quiz %s: got error %v, want none", q.ID, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("quiz %s: got error %v, want one mentioning %q", q.ID, err, tc.wantErr)
		}
	}
}

// TestCellsRunAndQuizzesCheck runs every cell of every lesson, at reduced
// size with -short, against the real engine in a temporary directory; every
// line must produce a result, and every quiz must compute a finite answer
// (a valid choice index for choice quizzes) from those results.
func TestCellsRunAndQuizzesCheck(t *testing.T) {
	f := *scale
	if f == 0 {
		f = 1
		if testing.Short() {
			f = 0.05
		}
	}
	lim := server.DefaultLimits()
	for _, l := range load(t) {
		t.Run(l.Slug, func(t *testing.T) {
			results := map[string][]any{} // cell ID -> decoded result per line
			for _, c := range l.Cells {
				t.Run(c.ID, func(t *testing.T) {
					if f == 1 {
						results[c.ID] = cachedRun(t, l.Slug, c)
						return
					}
					rs, err := execLines(t, c.Lines, f, lim)
					if err != nil {
						t.Fatal(err)
					}
					results[c.ID] = rs
				})
			}
			for _, q := range l.Quizzes {
				t.Run("quiz-"+q.ID, func(t *testing.T) {
					rs := results[q.Cell]
					if q.Run != nil {
						var err error
						if rs, err = execLines(t, q.Run, f, lim); err != nil {
							t.Fatal(err)
						}
					} else if rs == nil {
						t.Skipf("cell %s did not run", q.Cell)
					}
					got, err := quizAnswer(q, rs)
					if err != nil {
						t.Fatal(err)
					}
					if err := compareIndependently(q, rs); err != nil {
						t.Error(err)
					}
					t.Log(got)
				})
			}
		})
	}
}

// execLines scales and runs each line and decodes its JSON result.
func execLines(t *testing.T, lines []string, f float64, lim harness.Limits) ([]any, error) {
	t.Helper()
	return execRound(t, lines, f, lim, 1)
}

// execRound is execLines for round r of a repeated cell: the lines run in
// the round's mirrored order (calc.RoundOrder, as the server runs a
// cell's rounds), their results returned in the cell's line order.
func execRound(t *testing.T, lines []string, f float64, lim harness.Limits, r int) ([]any, error) {
	t.Helper()
	return execIn(t, "", lines, f, lim, r)
}

// execIn is execRound with each line's runs under dir ("" for a fresh
// temporary directory per line).
func execIn(t *testing.T, dir string, lines []string, f float64, lim harness.Limits, r int) ([]any, error) {
	t.Helper()
	out := make([]any, len(lines))
	for _, i := range calc.RoundOrder(len(lines), r) {
		line := lines[i]
		scaled := line
		if f != 1 {
			var err error
			if scaled, err = harnesstest.ScaleLine(line, f); err != nil {
				return nil, fmt.Errorf("line %d %q: scaling by %g: %v", i, line, f, err)
			}
		}
		runDir := dir
		if runDir == "" {
			runDir = t.TempDir()
			// PostgreSQL refuses root and runs as nobody there, who must
			// enter the run's directory (lesson 12's pg-sync cells).
			os.Chmod(filepath.Dir(runDir), 0o755)
			os.Chmod(runDir, 0o755)
		}
		env := harness.Env{Dir: runDir, Limits: lim}
		if script, ok := cellScripts.Load(line); ok {
			env.Script = script.(string)
		}
		raw, err := harnesstest.Exec(context.Background(), scaled, env)
		if errors.Is(err, peers.ErrRedisMissing) || errors.Is(err, peers.ErrPostgresMissing) || errors.Is(err, peers.ErrEtcdMissing) {
			// A cell with a real redis-server, PostgreSQL or etcd runs
			// where one is installed (.ci/run installs them); elsewhere
			// it skips, or fails under KVLAB_REQUIRE_TOOLS=1.
			browsertest.Missing(t, fmt.Sprintf("line %d %q: %v", i, scaled, err))
		}
		if err != nil {
			return nil, fmt.Errorf("line %d %q: %v", i, scaled, err)
		}
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil, fmt.Errorf("line %d %q: result is not JSON: %v", i, scaled, err)
		}
		if err := hasResult(v); err != nil {
			return nil, fmt.Errorf("line %d %q: %v", i, scaled, err)
		}
		out[i] = v
		t.Logf("line %d: %s\n%s", i, scaled, summary(v))
	}
	return out, nil
}

// hasResult checks a decoded result is a non-empty object with a kind, or a
// non-empty array of them.
func hasResult(v any) error {
	switch r := v.(type) {
	case map[string]any:
		if k, _ := r["kind"].(string); k == "" {
			return fmt.Errorf("result has no kind: %v", keys(r))
		}
		return nil
	case []any:
		if len(r) == 0 {
			return fmt.Errorf("empty result array")
		}
		for i, e := range r {
			if err := hasResult(e); err != nil {
				return fmt.Errorf("element %d: %v", i, err)
			}
		}
		return nil
	}
	return fmt.Errorf("result is %T, want an object or an array", v)
}

func keys(m map[string]any) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// quizAnswer computes the quiz's answer from rs and answers the quiz with
// it: the answer must be finite, a choice quiz's must be a valid index, and
// quiz.Check must accept the measured answer as correct. It returns the
// feedback's filled-in show text.
func quizAnswer(q *quiz.Quiz, rs []any) (string, error) {
	want, err := q.Answer.Eval(rs)
	if err != nil {
		return "", fmt.Errorf("answer %q: %v", q.Answer, err)
	}
	if want.IsStr {
		return "", fmt.Errorf("answer %q gave the string %q, want a number", q.Answer, want.Str)
	}
	if math.IsNaN(want.Num) || math.IsInf(want.Num, 0) {
		return "", fmt.Errorf("answer %q gave %v, want a finite number", q.Answer, want.Num)
	}
	answer := quiz.FormatNumber(want.Num)
	if q.Choices != nil {
		i := int(want.Num)
		if float64(i) != want.Num || i < 1 || i > len(q.Choices) {
			return "", fmt.Errorf("answer %q gave %v, want a choice index 1..%d", q.Answer, want.Num, len(q.Choices))
		}
		answer = q.Choices[i-1]
	}
	fb, err := quiz.Check(q, rs, answer)
	if err != nil {
		return "", fmt.Errorf("check: %v", err)
	}
	if !fb.Correct {
		return "", fmt.Errorf("answering the measured value %s: got incorrect (want %s, range %s)", answer, fb.Want, fb.Range)
	}
	return fmt.Sprintf("%s: answer %s %s; %s", q.ID, answer, q.Unit, fb.Shown), nil
}

// summary is one log line per result with the figures a reader of the
// test log wants: throughput and latency for bench, costs for probe,
// counts for crash, the prediction for model.
func summary(v any) string {
	if a, ok := v.([]any); ok {
		var b strings.Builder
		for _, e := range a {
			b.WriteString(summary(e))
		}
		return b.String()
	}
	m, _ := v.(map[string]any)
	num := func(path ...string) float64 {
		var cur any = m
		for _, k := range path {
			o, _ := cur.(map[string]any)
			cur = o[k]
		}
		f, _ := cur.(float64)
		return f
	}
	switch m["kind"] {
	case "bench":
		s := fmt.Sprintf("\t%v %v %v threads=%v: %.0f ops/s", m["engine"], m["sync"], m["workload"], m["threads"], num("ops_per_sec"))
		lat, _ := m["latency"].(map[string]any)
		for _, op := range []string{"put", "get", "delete"} {
			if _, ok := lat[op]; ok {
				s += fmt.Sprintf("; %s p50=%.0fns p99=%.0fns max=%.0fns", op,
					num("latency", op, "p50_ns"), num("latency", op, "p99_ns"), num("latency", op, "max_ns"))
			}
		}
		return s + "\n"
	case "probe":
		return fmt.Sprintf("\t%v on %v: write mean=%.0fns, write+fdatasync mean=%.0fns p99=%.0fns\n",
			m["fs"], m["device"], num("write", "mean_ns"), num("write_fdatasync", "mean_ns"), num("write_fdatasync", "p99_ns"))
	case "crash":
		return fmt.Sprintf("\t%v power=%v: writes=%.0f durable_acked=%.0f recovered=%.0f lost=%.0f lost_acked=%.0f corrupt=%.0f\n",
			m["sync"], m["power"], num("writes"), num("durable_acked"), num("recovered"), num("lost"), num("lost_acked"), num("corrupt"))
	case "model":
		return fmt.Sprintf("\t%v: predicted %.0f ops/s, p99 %v, loss window %.1f ms\n",
			m["sync"], num("predicted_ops_per_sec"), m["p99_path"], num("loss_window_ms"))
	}
	return fmt.Sprintf("\t%v\n", m["kind"])
}
