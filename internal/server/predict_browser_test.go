package server

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// A predict: yes quiz locks its cell until the reader has predicted; the
// prediction survives a reload; the cell's run grades it, and the verdict
// says the measured value and how far off the prediction was.
func TestBrowserPredictThenMeasure(t *testing.T) {
	ctx := browser(t, 1280, 900)
	s := newServer(t, func(c *Config) { c.Lessons = os.DirFS("testdata/predict") })
	ts := startServer(t, s)
	const locked = `document.querySelector('#cell-guess .run').disabled`
	const note = `!document.querySelector('#cell-guess .predict-lock').hidden`
	if err := chromedp.Do(ctx,
		chromedp.Navigate(ts.URL+"/lessons/01-predict"),
		chromedp.WaitVisible(chromedp.CSS("#quiz-guess-count .check")),
	); err != nil {
		t.Fatal(err)
	}
	if got, err := chromedp.Run(ctx, chromedp.Evaluate[bool](locked+` && `+note)); err != nil || !got {
		t.Fatalf("before a prediction: Run disabled with the note = %v (%v), want true", got, err)
	}
	// Clicking the disabled button, or Shift+Enter, runs nothing.
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(window.kvlab.cells[0].run(), true)`)); err != nil {
		t.Fatal(err)
	}
	if st, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('#cell-guess').className`)); strings.Contains(st, "is-queued") || strings.Contains(st, "is-running") {
		t.Fatalf("a locked cell started a run: class %q", st)
	}
	shot(t, ctx, "#cell-guess", "predict-locked.png")

	if err := chromedp.Do(ctx,
		chromedp.SetValue(chromedp.CSS("#quiz-guess-count input[name=answer]"), "1000"),
		chromedp.Click(chromedp.CSS("#quiz-guess-count .check")),
		chromedp.WaitVisible(chromedp.CSS("#quiz-guess-count .prediction-kept")),
		chromedp.Reload(),
		chromedp.WaitVisible(chromedp.CSS("#quiz-guess-count .prediction-kept")),
	); err != nil {
		t.Fatalf("entering a prediction and reloading: %v", err)
	}
	if got, err := chromedp.Run(ctx, chromedp.Evaluate[bool](locked+` || `+note)); err != nil || got {
		t.Fatalf("after the prediction: Run disabled or the note shown = %v (%v), want false", got, err)
	}
	if err := chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS("#cell-guess .run")),
		chromedp.WaitVisible(chromedp.CSS("#cell-guess.is-done")),
	); err != nil {
		t.Fatalf("running the cell: %v", err)
	}
	const verdict = `(document.querySelector('#quiz-guess-count .verdict.predicted') || {}).textContent || ''`
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`(`+verdict+`).includes('off by')`, chromedp.WithPollingTimeout(20*time.Second))); err != nil {
		got, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('#quiz-guess-count .quiz-feedback').textContent`))
		t.Fatalf("no graded prediction after the run: the quiz shows %q (%v)", got, err)
	}
	got, _ := chromedp.Run(ctx, chromedp.Evaluate[string](verdict))
	for _, want := range []string{"your prediction1000 puts", "measured500 puts", "2× the measured value", "Your prediction was off", "what `-ops` asked for"} {
		if !strings.Contains(got, strings.ReplaceAll(want, "`-ops`", "-ops")) {
			t.Errorf("verdict %q lacks %q", got, want)
		}
	}
	shot(t, ctx, "#quiz-guess-count", "predict-graded.png")
}
