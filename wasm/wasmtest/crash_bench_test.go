package wasmtest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// BenchmarkBrowserCrashGrading measures what a student waits for after
// clicking Run tests on a crash exercise: the time from the click to the
// results table, in headless Chromium, with the grading in the page's
// WebAssembly worker. Each exercise's model solution is graded on its
// largest workload (seed 905: 40 Puts, a log of 55 KiB; atomic-replace
// has one workload). The target is under 3 s on a student's laptop;
// compare with BenchmarkRunLargest in wasm/grader, the same gradings
// natively, for the wasm/native ratio, which depends less on how busy the
// machine is.
//
// The benchmark waits for the worker to load first (load-ms: the download
// and compile of the wasm, which the page starts when an exercise scrolls
// into view, so a reader seldom waits for it) and for its warm-up (warm-ms:
// the page has it grade durable-ack's solution once, which pays for the
// browser compiling the grader's code paths while the reader reads). The
// first grading of each exercise, before the timed ones, is reported
// apart as first-ms.
func BenchmarkBrowserCrashGrading(b *testing.B) {
	ctx := browser(b)
	url := serveLesson(b, staticDir(b, true), crashLesson)
	if err := chromedp.Do(ctx, chromedp.Navigate(url),
		chromedp.WaitVisible(chromedp.CSS(exAck+` .ex-editor`))); err != nil {
		b.Fatalf("loading the exercise: %v", err)
	}
	// A busy machine's slow grading is measured, not stopped.
	raiseLimits(b, ctx, slowLimit)
	loadMs, err := chromedp.Run(ctx, chromedp.Poll[float64](`kvlabExercises.runner.state === 'ready' && kvlabExercises.runner.loadMs[0]`,
		chromedp.WithPollingInterval(10*time.Millisecond), chromedp.WithPollingTimeout(2*time.Minute)))
	if err != nil {
		b.Fatalf("waiting for the worker to load: %v", err)
	}
	warmMs, err := chromedp.Run(ctx, chromedp.Poll[float64](`kvlabExercises.runner.warmed.length > 0 && kvlabExercises.runner.warmed[0].ms`,
		chromedp.WithPollingInterval(10*time.Millisecond), chromedp.WithPollingTimeout(2*time.Minute)))
	if err != nil {
		b.Fatalf("waiting for the worker's warm-up: %v", err)
	}
	for _, c := range []struct{ exercise, seed string }{
		{"durable-ack", largest},
		{"torn-tail", largest},
		{"atomic-replace", ""},
	} {
		b.Run(c.exercise, func(b *testing.B) {
			sel := `.exercise[data-exercise=` + c.exercise + `]`
			setCode(b, ctx, sel, solution(b, c.exercise)+c.seed)
			state, first := runAndWait(b, ctx, sel, 60*time.Second)
			if state != "passed" {
				b.Fatalf("%s solution: state %q, want passed", c.exercise, state)
			}
			for b.Loop() {
				if state, _ := runAndWait(b, ctx, sel, 60*time.Second); state != "passed" {
					b.Fatalf("%s solution: state %q, want passed", c.exercise, state)
				}
			}
			if c.seed != "" {
				if rows := readTable(b, ctx, sel); len(rows) == 0 || !strings.Contains(noteOf(b, ctx, sel), "kvlab:seed 905") {
					b.Fatalf("%s: %d rows, and the note does not name seed 905", c.exercise, len(rows))
				}
			}
			b.ReportMetric(float64(first.Milliseconds()), "first-ms")
			b.ReportMetric(loadMs, "load-ms")
			b.ReportMetric(warmMs, "warm-ms")
		})
	}
}

// noteOf returns the text of the notes under sel's results.
func noteOf(t testing.TB, ctx context.Context, sel string) string {
	t.Helper()
	note, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel+` .ex-notes`)))
	if err != nil {
		t.Fatalf("reading the notes of %s: %v", sel, err)
	}
	return note
}
