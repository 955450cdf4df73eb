package wasmtest

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"kvlab/wasm/grader"
)

// crashLesson has the crash exercises' blocks, as lesson 7 has.
const crashLesson = "---\ntitle: Crash exercise fixture\nsummary: The crash exercises.\norder: 1\n---\n\n# Crash exercise fixture\n\n" +
	"```exercise durable-ack\n```\n\nBetween the two.\n\n```exercise torn-tail\n```\n\n```exercise atomic-replace\n```\n"

const exAck = `.exercise[data-exercise=durable-ack]`

// crashWrong is a wrong version of a crash exercise's solution, the
// model solution with old replaced by new, graded on workload seed, and
// the failing row the page must show: the one the grader, run natively
// on the same code, shows.
type crashWrong struct {
	exercise, old, new string
	row                string // the row's input starts so
	hint               string // in the row's hint cell
}

// wrongSeed is the workload the wrong versions are graded on.
const wrongSeed = "\n// kvlab:seed 7\n"

var crashWrongs = []crashWrong{
	{"durable-ack", "\tif err := s.log.Sync(); err != nil {\n\t\t// After a failed fdatasync Linux marks the pages clean: a retry\n\t\t// succeeds without writing them. The error must stick.\n\t\ts.err = err\n\t\treturn err\n\t}\n", "",
		"power cut after each operation, prefix", "you acknowledged before its fdatasync"},
	{"torn-tail", "\tif good < len(data) {\n\t\t// A torn tail: cut it off, so new records follow the last good one.\n\t\tif err := s.log.Truncate(int64(good)); err != nil {\n\t\t\treturn nil, err\n\t\t}\n\t}\n", "",
		"power cut after each operation", "Open must truncate the file"},
	{"atomic-replace", "\treturn fs.SyncDir()\n", "\treturn nil\n",
		"power cut after each operation, dirent", "call SyncDir after Rename"},
}

// TestBrowserCrashExercise submits a wrong solution of each crash
// exercise and reads the crash point and the rule the page names, then
// submits the model solution and times its grading: every crash point of
// the workload in every power mode.
func TestBrowserCrashExercise(t *testing.T) {
	ctx := browser(t)
	url := serveLesson(t, staticDir(t, true), crashLesson)
	if err := chromedp.Do(ctx, chromedp.Navigate(url),
		chromedp.WaitVisible(chromedp.CSS(exAck+` .ex-editor`))); err != nil {
		t.Fatalf("loading the exercise: %v", err)
	}
	// The crash exercise gets a longer limit than the page's 2 s.
	limits, err := chromedp.Run(ctx, chromedp.Evaluate[[]int](`['durable-ack', 'percentile'].map((n) => kvlabExercises.runner.limitFor(n))`))
	if err != nil || !slices.Equal(limits, []int{10000, 2000}) {
		t.Errorf("time limits of durable-ack and percentile = %v (err %v), want [10000 2000] ms", limits, err)
	}
	// The runs below check verdicts, not the limit: a busy machine may
	// take longer than 10 s to grade, and must not be stopped for it.
	raiseLimits(t, ctx, slowLimit)
	for _, w := range crashWrongs {
		sel := `.exercise[data-exercise=` + w.exercise + `]`
		sol := solution(t, w.exercise)
		if !strings.Contains(sol, w.old) {
			t.Fatalf("%s: the solution has no %q to replace", w.exercise, w.old)
		}
		src := strings.Replace(sol, w.old, w.new, 1) + wrongSeed
		native := grader.Run(w.exercise, src)
		want := slices.IndexFunc(native.Cases, func(c grader.Case) bool { return strings.HasPrefix(c.Input, w.row) })
		if want < 0 || native.Cases[want].Pass || !strings.Contains(native.Cases[want].Hint, w.hint) {
			t.Fatalf("%s: natively, no failing row %q with a hint containing %q: %+v", w.exercise, w.row, w.hint, native.Cases)
		}
		setCode(t, ctx, sel, src)
		state, first := runAndWait(t, ctx, sel, 60*time.Second)
		if state != "failed" {
			t.Fatalf("%s, wrong: state %q, want failed", w.exercise, state)
		}
		t.Logf("browser: %s, first run (the wrong solution): %v", w.exercise, first.Round(time.Millisecond))
		rows := readTable(t, ctx, sel)
		i := slices.IndexFunc(rows, func(r tableRow) bool { return strings.HasPrefix(r.Cells[1], w.row) })
		if i < 0 {
			t.Fatalf("%s: no row %q in %+v", w.exercise, w.row, rows)
		}
		if r, c := rows[i], native.Cases[want]; r.Class != "ex-fail" || r.Cells[3] != c.Got || r.Cells[5] != c.Hint {
			t.Errorf("%s: row %+v, want a failure with got %q and hint %q, as natively", w.exercise, r, c.Got, c.Hint)
		}
		if w.exercise == "durable-ack" {
			note, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel+` .ex-notes`)))
			if !strings.Contains(note, "kvlab:seed 7") || !strings.Contains(note, "1 create log · 2 fsync dir · 3 write log @0, ") {
				t.Errorf("note %q, want the workload's seed and the operations up to the cut", note)
			}
		}
		if w.exercise != "atomic-replace" {
			timeSolution(t, ctx, w.exercise+" (largest workload)", sol+largest)
		}
		// Last, as the page keeps the code of the last Run: the reload
		// below finds the solution.
		timeSolution(t, ctx, w.exercise, sol)
	}

	// A fresh page and worker: once it is ready, and no run waits, it
	// grades the first crash exercise's solution once (runner.warmed), so
	// that the reader's first Run does not pay for the browser compiling
	// the crash grader's code paths.
	if err := chromedp.Do(ctx, chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(exAck+` .ex-editor`))); err != nil {
		t.Fatal(err)
	}
	raiseLimits(t, ctx, slowLimit)
	warmed, err := chromedp.Run(ctx, chromedp.Poll[string](`kvlabExercises.runner.warmed.map((w) => w.name).join()`,
		chromedp.WithPollingInterval(10*time.Millisecond), chromedp.WithPollingTimeout(2*time.Minute)))
	if err != nil || warmed != "durable-ack" {
		t.Fatalf("warm-ups of a fresh crash page = %q (err %v), want durable-ack once", warmed, err)
	}
	warmMs, _ := chromedp.Run(ctx, chromedp.Evaluate[float64](`kvlabExercises.runner.warmed[0].ms`))
	t.Logf("browser: the worker's warm-up (durable-ack's solution) took %.0f ms", warmMs)
	if code, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('`+exAck+` .ex-editor').value`)); code != solution(t, "durable-ack") {
		t.Fatalf("after the reload the editor does not hold the solution")
	}
	state, first := runAndWait(t, ctx, exAck, 60*time.Second)
	if state != "passed" {
		t.Fatalf("solution after a reload: state %q, want passed", state)
	}
	t.Logf("browser: durable-ack solution, first run in a fresh page and worker: %v", first.Round(time.Millisecond))
}

// timeSolution runs the model solution sol in the block of exercise name
// five times, checks every row passes and logs the median time from the
// click to the results.
func timeSolution(t *testing.T, ctx context.Context, name, sol string) {
	t.Helper()
	sel := `.exercise[data-exercise=` + strings.Fields(name)[0] + `]`
	setCode(t, ctx, sel, sol)
	var times []time.Duration
	for range 5 {
		state, d := runAndWait(t, ctx, sel, 60*time.Second)
		if state != "passed" {
			t.Fatalf("%s solution: state %q, want passed", sel, state)
		}
		times = append(times, d)
	}
	for i, r := range readTable(t, ctx, sel) {
		if r.Class != "ex-pass" {
			t.Errorf("%s row %d %+v, want pass", sel, i+1, r)
		}
	}
	slices.Sort(times)
	t.Logf("browser: %s solution graded (click to results) in %v median of %d (min %v, max %v)", name,
		times[len(times)/2].Round(time.Millisecond), len(times), times[0].Round(time.Millisecond), times[len(times)-1].Round(time.Millisecond))
}
