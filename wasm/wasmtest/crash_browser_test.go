package wasmtest

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// crashLesson has the crash exercise's block, as lesson 7 has.
const crashLesson = "---\ntitle: Crash exercise fixture\nsummary: The crash exercise.\norder: 1\n---\n\n# Crash exercise fixture\n\n" +
	"```exercise durable-ack\n```\n"

const exAck = `.exercise[data-exercise=durable-ack]`

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

	setCode(t, ctx, exAck, sol)
	var times []time.Duration
	for range 5 {
		state, d := runAndWait(t, ctx, exAck, 60*time.Second)
		if state != "passed" {
			t.Fatalf("solution: state %q, want passed", state)
		}
		times = append(times, d)
	}
	for i, r := range readTable(t, ctx, exAck) {
		if r.Class != "ex-pass" {
			t.Errorf("row %d %+v, want pass", i+1, r)
		}
	}
	slices.Sort(times)
	t.Logf("browser: durable-ack solution graded (click to results) in %v median of %d (min %v, max %v)",
		times[len(times)/2].Round(time.Millisecond), len(times), times[0].Round(time.Millisecond), times[len(times)-1].Round(time.Millisecond))
}
