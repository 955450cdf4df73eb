package wasmtest

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// crashLesson has the crash exercises' blocks, as lesson 7 has.
const crashLesson = "---\ntitle: Crash exercise fixture\nsummary: The crash exercises.\norder: 1\n---\n\n# Crash exercise fixture\n\n" +
	"```exercise durable-ack\n```\n\nBetween the two.\n\n```exercise torn-tail\n```\n"

const (
	exAck  = `.exercise[data-exercise=durable-ack]`
	exTorn = `.exercise[data-exercise=torn-tail]`
)

// TestBrowserCrashExercise submits a store that acknowledges before its
// fdatasync, reads the crash point the page names, then submits the model
// solution and times its grading: every crash point of the workload in
// both power modes.
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
	sol := solution(t, "durable-ack")
	const sync = "\tif err := s.log.Sync(); err != nil {\n\t\treturn err\n\t}\n\ts.index[key] = value"
	if !strings.Contains(sol, sync) {
		t.Fatalf("the solution has no %q to remove", sync)
	}
	setCode(t, ctx, exAck, strings.Replace(sol, sync, "\ts.index[key] = value", 1))
	state, _ := runAndWait(t, ctx, exAck, 60*time.Second)
	if state != "failed" {
		t.Fatalf("store without fdatasync: state %q, want failed", state)
	}
	rows := readTable(t, ctx, exAck)
	i := slices.IndexFunc(rows, func(r tableRow) bool { return strings.HasPrefix(r.Cells[1], "power cut after each operation, prefix") })
	if i < 0 {
		t.Fatalf("no prefix-mode row in %+v", rows)
	}
	r := rows[i]
	const wantGot = "power cut after operation 3 (write log @0, 13 bytes): key k0 was acknowledged at operation 3 but is gone"
	if r.Class != "ex-fail" || r.Cells[3] != wantGot || !strings.Contains(r.Cells[5], "you acknowledged before its fdatasync") {
		t.Errorf("prefix row %+v, want a failure with got %q and the fdatasync rule", r, wantGot)
	}
	note, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(exAck+` .ex-notes`)))
	if !strings.Contains(note, "1 create log · 2 fsync dir · 3 write log @0, 13 bytes") {
		t.Errorf("note %q, want the operations up to the cut", note)
	}

	timeSolution(t, ctx, "durable-ack", sol)

	// torn-tail: an Open that leaves the torn tail in place loses the
	// record appended after it.
	sol = solution(t, "torn-tail")
	const truncate = "\tif good < len(data) {\n\t\t// A torn tail: cut it off, so new records follow the last good one.\n\t\tif err := s.log.Truncate(int64(good)); err != nil {\n\t\t\treturn nil, err\n\t\t}\n\t}\n"
	if !strings.Contains(sol, truncate) {
		t.Fatalf("the solution has no %q to remove", truncate)
	}
	setCode(t, ctx, exTorn, strings.Replace(sol, truncate, "", 1))
	if state, _ := runAndWait(t, ctx, exTorn, 60*time.Second); state != "failed" {
		t.Fatalf("torn-tail without truncation: state %q, want failed", state)
	}
	rows = readTable(t, ctx, exTorn)
	i = slices.IndexFunc(rows, func(r tableRow) bool { return strings.HasPrefix(r.Cells[1], "power cut after each operation") })
	if i < 0 {
		t.Fatalf("no power-cut row in %+v", rows)
	}
	r = rows[i]
	if r.Class != "ex-fail" || !strings.HasPrefix(r.Cells[3], "power cut after operation ") ||
		!strings.HasSuffix(r.Cells[3], `reopened, Put("after") acknowledged, reopened again: key after is gone`) ||
		!strings.Contains(r.Cells[5], "Open must truncate the file") {
		t.Errorf("torn-tail power-cut row %+v, want the crash point, the lost Put and the truncation rule", r)
	}
	timeSolution(t, ctx, "torn-tail", sol)
}

// timeSolution runs the model solution sol in the block of exercise name
// five times, checks every row passes and logs the median time from the
// click to the results.
func timeSolution(t *testing.T, ctx context.Context, name, sol string) {
	t.Helper()
	sel := `.exercise[data-exercise=` + name + `]`
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
