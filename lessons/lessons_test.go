package lessons_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"testing"

	"kvlab/engine/crashtest"
	"kvlab/harness"
	_ "kvlab/harness/peers" // registers bbolt and pebble for the side-by-side cells
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
	return ls
}

// TestFrontMatter checks there are ten chapters, ordered 1..10, each with a
// title and a summary and at least one quiz or exercise and one cell.
func TestFrontMatter(t *testing.T) {
	ls := load(t)
	if got, want := len(ls), 10; got != want {
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
			for _, c := range l.Cells {
				if n := len(c.Lines); n > maxCellLines {
					t.Errorf("cell %s: %d lines, the server allows %d", c.ID, n, maxCellLines)
				}
				for i, line := range c.Lines {
					if err := harness.Check(line, lim); err != nil {
						t.Errorf("cell %s line %d %q: %v", c.ID, i, line, err)
					}
				}
			}
			for _, q := range l.Quizzes {
				for i, line := range q.Run {
					if err := harness.Check(line, lim); err != nil {
						t.Errorf("quiz %s run line %d %q: %v", q.ID, i, line, err)
					}
				}
			}
		})
	}
}

// TestExercisesExist checks every exercise block names an exercise the
// grader knows.
func TestExercisesExist(t *testing.T) {
	names := grader.Names()
	seen := map[string]bool{}
	for _, l := range load(t) {
		for _, e := range l.Exercises {
			seen[e] = true
			if !slices.Contains(names, e) {
				t.Errorf("%s: exercise %q: the grader has %v", l.Slug, e, names)
			}
		}
	}
	for _, n := range names {
		if !seen[n] {
			t.Errorf("exercise %q is used by no lesson", n)
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
					checkQuiz(t, q, rs)
				})
			}
		})
	}
}

// execLines scales and runs each line and decodes its JSON result.
func execLines(t *testing.T, lines []string, f float64, lim harness.Limits) ([]any, error) {
	t.Helper()
	var out []any
	for i, line := range lines {
		scaled := line
		if f != 1 {
			var err error
			if scaled, err = harness.ScaleLine(line, f); err != nil {
				return nil, fmt.Errorf("line %d %q: scaling by %g: %v", i, line, f, err)
			}
		}
		raw, err := harness.Exec(context.Background(), scaled, harness.Env{Dir: t.TempDir(), Limits: lim})
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
		out = append(out, v)
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

// checkQuiz computes the quiz's answer from rs and answers it with that
// value: the answer must be finite, a choice quiz's must be a valid index,
// and the measured answer itself must be accepted.
func checkQuiz(t *testing.T, q *quiz.Quiz, rs []any) {
	t.Helper()
	want, err := q.Answer.Eval(rs)
	if err != nil {
		t.Fatalf("answer %q: %v", q.Answer, err)
	}
	if want.IsStr {
		t.Fatalf("answer %q gave the string %q, want a number", q.Answer, want.Str)
	}
	if math.IsNaN(want.Num) || math.IsInf(want.Num, 0) {
		t.Fatalf("answer %q gave %v, want a finite number", q.Answer, want.Num)
	}
	answer := quiz.FormatNumber(want.Num)
	if q.Choices != nil {
		if i := int(want.Num); float64(i) != want.Num || i < 1 || i > len(q.Choices) {
			t.Fatalf("answer %q gave %v, want a choice index 1..%d", q.Answer, want.Num, len(q.Choices))
		}
		answer = q.Choices[int(want.Num)-1]
	}
	fb, err := quiz.Check(q, rs, answer)
	if err != nil {
		t.Fatalf("check: %v", err)
	}
	if !fb.Correct {
		t.Errorf("answering the measured value %s: got incorrect (want %s, range %s)", answer, fb.Want, fb.Range)
	}
	t.Logf("%s: answer %s %s; %s", q.ID, answer, q.Unit, fb.Shown)
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
