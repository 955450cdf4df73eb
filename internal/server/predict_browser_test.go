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
	// On a busy machine (make test's other packages, a CPU hog) the judge
	// grades no prediction, and the verdict says so and why. Each
	// attempt's run reads the machine as it was then: one attempt can be
	// graded and the next declined.
	busy := strings.Contains(got, "your machine was busy")
	head, kept := "Your prediction was off", "not within range"
	attempts := []string{"Attempt 1: predicted 1000, off (2× too high)", "Attempt 2: predicted 520, right (4% above the measured value)"}
	if busy {
		t.Logf("the runs' conditions said the machine was busy: %q", got)
		head, kept = "Not graded: your machine was busy", "not graded, the machine busy"
		if !strings.Contains(got, "your machineother programs held") && !strings.Contains(got, "your machineanother program was writing") {
			t.Errorf("verdict %q does not say what the runs' conditions showed", got)
		}
		attempts[0] = "Attempt 1: predicted 1000, not graded, the machine busy (2× too high)"
	}
	for _, want := range []string{"your prediction1000 puts", "measured500 puts", "2× too high", head, "what `-ops` asked for"} {
		if !strings.Contains(got, strings.ReplaceAll(want, "`-ops`", "-ops")) {
			t.Errorf("verdict %q lacks %q", got, want)
		}
	}
	shot(t, ctx, "#quiz-guess-count", "predict-graded.png")

	// The verdict is kept: a reload and another run do not re-grade it.
	const feedback = `document.querySelector('#quiz-guess-count .quiz-feedback').textContent`
	const again = `!document.querySelector('#quiz-guess-count .predict-again').hidden`
	if err := chromedp.Do(ctx,
		chromedp.Reload(),
		chromedp.WaitVisible(chromedp.CSS("#quiz-guess-count .quiz-last")),
		chromedp.Click(chromedp.CSS("#cell-guess .run")),
		chromedp.WaitVisible(chromedp.CSS("#cell-guess.is-done")),
	); err != nil {
		t.Fatalf("reloading and running again: %v", err)
	}
	if got, _ := chromedp.Run(ctx, chromedp.Evaluate[string](feedback+` + '|' + (`+again+`)`)); got != "Last time you predicted 1000: "+kept+" (2× too high).|true" {
		t.Errorf("after a reload and a second run the quiz shows %q, want the kept verdict and Predict again", got)
	}

	// Predict again opens a new attempt: the last run's figures go out of
	// sight, the cell locks, the field empties, and what is then typed
	// and entered (Enter, as an answer would be) is the new prediction,
	// not an answer graded against the run already made.
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#quiz-guess-count .predict-again"))); err != nil {
		t.Fatal(err)
	}
	type againState struct {
		Figures bool   `json:"figures"`
		Locked  bool   `json:"locked"`
		Field   string `json:"field"`
		Button  string `json:"button"`
		Said    string `json:"said"`
	}
	st, err := chromedp.Run(ctx, chromedp.Evaluate[againState](`({
		figures: !!document.querySelector('#cell-guess .cell-out table, #cell-guess .cell-out .result'),
		locked: `+locked+` && `+note+`,
		field: document.querySelector('#quiz-guess-count input[name=answer]').value,
		button: document.querySelector('#quiz-guess-count .check').textContent,
		said: `+feedback+`})`))
	if err != nil {
		t.Fatal(err)
	}
	if st.Figures || !st.Locked || st.Field != "" || st.Button != "Lock in prediction" || !strings.Contains(st.Said, "next run") {
		t.Errorf("after Predict again: figures shown %v, cell locked %v, field %q, button %q, feedback %q; want the figures hidden, the cell locked, an empty field, 'Lock in prediction' and a word that the next run grades it",
			st.Figures, st.Locked, st.Field, st.Button, st.Said)
	}
	shot(t, ctx, "#quiz-guess-count", "predict-again.png")
	if err := chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.CSS("#quiz-guess-count input[name=answer]"), "520\r"),
		chromedp.WaitVisible(chromedp.CSS("#quiz-guess-count .prediction-kept")),
		chromedp.Click(chromedp.CSS("#cell-guess .run")),
		chromedp.WaitVisible(chromedp.CSS("#cell-guess.is-done")),
	); err != nil {
		t.Fatalf("predicting again and running: %v", err)
	}
	const graded2, busy2 = "Attempt 2: ✓ Your prediction holds.", "Attempt 2: · Not graded: your machine was busy"
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`(`+verdict+`).includes('`+graded2+`') || (`+verdict+`).includes('`+busy2+`')`, chromedp.WithPollingTimeout(20*time.Second))); err != nil {
		got, _ := chromedp.Run(ctx, chromedp.Evaluate[string](feedback))
		t.Fatalf("no graded second attempt: the quiz shows %q (%v)", got, err)
	}
	if got, _ := chromedp.Run(ctx, chromedp.Evaluate[string](verdict)); strings.Contains(got, busy2) {
		t.Logf("the second attempt's run said the machine was busy: %q", got)
		attempts[1] = "Attempt 2: predicted 520, not graded, the machine busy (4% above the measured value)"
	}
	// An answer checked after the result says so.
	if err := chromedp.Do(ctx,
		chromedp.SetValue(chromedp.CSS("#quiz-guess-count input[name=answer]"), "500"),
		chromedp.Click(chromedp.CSS("#quiz-guess-count .check")),
		chromedp.WaitVisible(chromedp.CSS("#quiz-guess-count .verdict .timing-note")),
	); err != nil {
		t.Fatalf("checking an answer after the result: %v", err)
	}
	if got, _ := chromedp.Run(ctx, chromedp.Evaluate[string](feedback)); !strings.Contains(got, "✓ Right.") || !strings.Contains(got, "Answered after the result") {
		t.Errorf("an answer after the result shows %q, want it right and marked as answered after the result", got)
	}
	if err := chromedp.Do(ctx, chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS("#quiz-guess-count .quiz-attempts"))); err != nil {
		t.Fatalf("the attempts after a reload: %v", err)
	}
	got, _ = chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('#quiz-guess-count .quiz-attempts').textContent`))
	for _, want := range attempts {
		if !strings.Contains(got, want) {
			t.Errorf("attempts %q lack %q", got, want)
		}
	}
}

// The page says what an open-loop result's table leaves out: its
// utilization and pacer lag, and the units due that never started
// (censored samples) with who fell behind, and shows the run's fdatasync
// distribution. The result is planted in
// the browser's store, as a past run of the cell, so the figures are
// fixed.
func TestBrowserOpenLoopCensoredAndFsyncs(t *testing.T) {
	ctx := browser(t, 1280, 900)
	s := newServer(t, nil)
	ts := startServer(t, s)
	const result = `{"kind":"bench","spec":"bench -engine kv -sync periodic:10ms -workload fillrandom -duration 2s -rate 5000","engine":"kv","sync":"periodic:10ms","workload":"fillrandom","threads":1,"ops":3766,"units":3766,"wall_seconds":2,"ops_per_sec":1883,"units_per_sec":1883,"rate":5000,` +
		`"latency":{"put":{"count":3766,"mean_ns":4e8,"p50_ns":3e8,"p95_ns":9e8,"p99_ns":1e9,"p999_ns":1.1e9,"max_ns":1.2e9,"exact":true}},` +
		`"latency_uncorrected":{"put":{"count":3766,"mean_ns":270000,"p50_ns":4000,"p95_ns":9000,"p99_ns":80000000,"p999_ns":90000000,"max_ns":95000000,"exact":true}},` +
		`"fsyncs":150,"fsyncs_counted":true,"fsync_mean_ns":5000000,"fsync_samples":151,"fsync_p50_ns":2450000,"fsync_p99_ns":57000000,"fsync_max_ns":83000000,` +
		`"backlog_units":6234,"utilization":1.35,"timeline":[],` +
		`"pacer_lag":{"count":3766,"mean_ns":3000,"p50_ns":2100,"p99_ns":41000,"max_ns":910000,"exact":true,"delay_p99_ns":52000},"behind":"store"}`
	if err := chromedp.Do(ctx,
		chromedp.Navigate(ts.URL+"/lessons/01-fixture"),
		chromedp.WaitVisible(chromedp.CSS("#cell-always-run .run")),
		chromedp.Evaluate[chromedp.Void](`localStorage.setItem('kvlab:results:01-fixture:always-run', JSON.stringify({at: Date.now(), lines: [{spec: 'bench', result: `+result+`}]}))`),
		chromedp.Reload(),
		chromedp.WaitVisible(chromedp.CSS("#cell-always-run .callout.backlog")),
	); err != nil {
		t.Fatalf("showing a planted open-loop result: %v", err)
	}
	for sel, wants := range map[string][]string{
		"#cell-always-run .callout.backlog": {"6,234 of 10,000 units due never started (the store fell behind)", "corrected percentiles are incomplete without them"},
		"#cell-always-run .open-loop":       {"utilization 1.35", "rate × mean service time", "pacer lag p50 2.1 µs p99 41.0 µs max 910.0 µs"},
		"#cell-always-run .fsyncs":          {"p50 2.45 ms", "p99 57.00 ms", "151 timed"},
	} {
		got, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
		if err != nil {
			t.Fatalf("%s: %v", sel, err)
		}
		for _, w := range wants {
			if !strings.Contains(got, w) {
				t.Errorf("%s says %q, want %q in it", sel, got, w)
			}
		}
	}
	shot(t, ctx, "#cell-always-run .callout.backlog", "open-loop-censored.png")
}
