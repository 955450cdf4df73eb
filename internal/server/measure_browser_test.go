package server

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	_ "kvlab/harness/mine" // registers -engine mine and mine-null
	"kvlab/internal/browsertest"
	"kvlab/lessons"
)

// A run started by an exercise's "Measure on this disk" says where it came
// from on /runs: the lesson and the exercise, not "a cell"; its
// permalink leads back to the exercise's box.
func TestBrowserMeasureSaysTheExercise(t *testing.T) {
	// The exercise's box is built once the browser's Go interpreter has
	// loaded, which takes a while on a busy machine.
	ctx := browsertest.Start(t, 1280, 900, 6*time.Minute)
	ts := startServer(t, newServer(t, func(c *Config) {
		c.Lessons = lessons.FS
		c.Addr = "127.0.0.1:8080"
	}))
	const box = "#exercise-durable-ack"
	if err := chromedp.Do(ctx,
		chromedp.Navigate(ts.URL+"/lessons/07-crash-consistency"),
		chromedp.WaitReady(chromedp.CSS(box)),
		chromedp.Evaluate[chromedp.Void](`document.querySelector('`+box+`').scrollIntoView()`),
		chromedp.WaitVisible(chromedp.CSS(box+" .ex-measure")),
		browsertest.Type(box+" .ex-editor", durableAckSolution(t)),
		chromedp.Click(chromedp.CSS(box+" .ex-measure")),
	); err != nil {
		t.Fatalf("measuring the exercise: %v", err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`['done', 'error', 'cancelled'].includes(document.querySelector('`+box+`').dataset.measure)`, chromedp.WithPollingTimeout(2*time.Minute))); err != nil {
		t.Fatalf("the measurement did not end: %v", err)
	}
	if state, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('`+box+`').dataset.measure`)); state != "done" {
		said, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('`+box+` .ex-measured').innerText`))
		t.Fatalf("the measurement ended %s: %q", state, said)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(ts.URL+"/runs"), chromedp.WaitVisible(chromedp.CSS("table.runs-table"))); err != nil {
		t.Fatal(err)
	}
	from, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('table.runs-table tr:not(.median-row) td.from')].map((td) => td.textContent.trim())`))
	if err != nil {
		t.Fatal(err)
	}
	const want = "07-crash-consistency · exercise durable-ack (Measure on this disk)"
	if len(from) == 0 {
		t.Fatal("/runs lists no run after the measurement")
	}
	for _, f := range from {
		if f != want {
			t.Errorf("/runs says a measured run came from %q, want %q", f, want)
		}
	}
	if err := chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS("table.runs-table tr:not(.median-row) th a")),
		chromedp.WaitVisible(chromedp.CSS(".run-result")),
	); err != nil {
		t.Fatal(err)
	}
	back, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`(() => { const a = document.querySelector('.run-meta a[href^="/lessons/"]'); return a ? a.getAttribute('href') : ''; })()`))
	if !strings.HasSuffix(back, "/lessons/07-crash-consistency#exercise-durable-ack") {
		t.Errorf("the run's page links back to %q, want the exercise's box", back)
	}
}
