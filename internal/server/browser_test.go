package server

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"kvlab/internal/browsertest"
)

// browser starts headless Chromium for one test, or skips when it is not
// installed (CI installs it).
func browser(t *testing.T, width, height int) context.Context {
	return browsertest.Start(t, width, height, 3*time.Minute)
}

// shot saves a screenshot of the window, scrolled to sel, into the test's
// temp dir (and into $KVLAB_SCREENSHOTS when set, to look at by hand).
func shot(t *testing.T, ctx context.Context, sel, name string) {
	t.Helper()
	browsertest.Shot(t, ctx, sel, name, t.TempDir(), os.Getenv("KVLAB_SCREENSHOTS"))
}

func TestBrowserRunCell(t *testing.T) {
	ctx := browser(t, 1280, 900)
	s := newServer(t, nil)
	ts := startServer(t, s)

	if err := chromedp.Do(ctx,
		chromedp.Navigate(ts.URL+"/lessons/01-fixture"),
		chromedp.WaitVisible(chromedp.CSS("#cell-always-run .run")),
		chromedp.Click(chromedp.CSS("#cell-always-run .run")),
		chromedp.WaitVisible(chromedp.CSS("#cell-always-run table.nums td.p99")),
		chromedp.WaitVisible(chromedp.CSS("#cell-always-run.is-done")),
	); err != nil {
		t.Fatalf("running the cell: %v", err)
	}
	table, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#cell-always-run table.nums")))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"p99", "p99.9", "ops/s", "mean", "always", "none"} {
		if !strings.Contains(strings.ToLower(table), want) {
			t.Errorf("result table %q lacks %q", table, want)
		}
	}
	p99, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#cell-always-run tbody td.p99")))
	if !strings.HasSuffix(p99, "ns") && !strings.HasSuffix(p99, "µs") && !strings.HasSuffix(p99, "ms") {
		t.Errorf("got p99 cell %q, want a latency with a unit", p99)
	}
	charts, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('#cell-always-run figure.chart svg').length`))
	if err != nil || charts < 2 {
		t.Errorf("got %d charts (%v), want the spectrum and the histogram at least", charts, err)
	}
	logs, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('[role=log]').length`))
	if logs < 2 {
		t.Errorf("got %d role=log regions, want one per cell", logs)
	}

	// The quiz is checked against the run just made.
	if err := chromedp.Do(ctx,
		chromedp.SetValue(chromedp.CSS("#quiz-count input[name=answer]"), "500"),
		chromedp.Click(chromedp.CSS("#quiz-count .check")),
		chromedp.WaitVisible(chromedp.CSS("#quiz-count .verdict.ok")),
	); err != nil {
		t.Fatalf("checking the quiz: %v", err)
	}
	// Nothing was fetched from anywhere but labserver.
	external, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`performance.getEntriesByType('resource').filter(e => !e.name.startsWith(location.origin)).length`))
	if external != 0 {
		t.Errorf("got %d requests to other hosts, want 0", external)
	}
	shot(t, ctx, "#cell-always-run", "lesson-light.png")

	// Results survive a reload; the index shows progress.
	if err := chromedp.Do(ctx,
		chromedp.Reload(),
		chromedp.WaitVisible(chromedp.CSS("#cell-always-run td.p99")),
		chromedp.Navigate(ts.URL+"/"),
		chromedp.WaitVisible(chromedp.CSS(".lesson-card .progress-text")),
	); err != nil {
		t.Fatalf("after reload: %v", err)
	}
	prog, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`.lesson-card[data-lesson="01-fixture"] .progress-text`)))
	if !strings.Contains(prog, "1/2 cells run") || !strings.Contains(prog, "quizzes 1/3 right") {
		t.Errorf("got index progress %q, want 1/2 cells run and quizzes 1/3 right", prog)
	}
	shot(t, ctx, "", "index.png")
}

func TestBrowserEditCancelAndTheme(t *testing.T) {
	ctx := browser(t, 800, 900)
	s := newServer(t, nil)
	ts := startServer(t, s)
	if err := chromedp.Do(ctx,
		chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile, chromedp.EmulateScale(2)), // a phone
		chromedp.Navigate(ts.URL+"/lessons/01-fixture"),
		chromedp.WaitVisible(chromedp.CSS("#cell-cell-2 textarea")),
		browsertest.Type("#cell-cell-2 textarea", longRun),
		chromedp.Click(chromedp.CSS("#cell-cell-2 .run")),
		chromedp.WaitVisible(chromedp.CSS("#cell-cell-2.is-running")),
		chromedp.WaitVisible(chromedp.CSS("#cell-cell-2 .live")),
		// A progress message draws the live ops/s line.
		chromedp.WaitReady(chromedp.CSS("#cell-cell-2 .live-chart svg path")),
	); err != nil {
		t.Fatalf("starting a long run: %v", err)
	}
	shot(t, ctx, "#cell-cell-2", "phone-running.png")
	// Esc cancels.
	ectx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ectx,
		chromedp.Focus(chromedp.CSS("#cell-cell-2 textarea")),
		chromedp.KeyEvent(kb.Escape),
		chromedp.WaitVisible(chromedp.CSS("#cell-cell-2.is-error")),
	); err != nil {
		st, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('#cell-cell-2').className + ' / ' + document.querySelector('#cell-cell-2 .cell-state').textContent + ' / ' + document.activeElement.className`))
		t.Fatalf("Esc did not cancel: %v (cell: %s)", err, st)
	}
	state, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#cell-cell-2 .cell-state")))
	if state != "cancelled" {
		t.Errorf("got state %q, want cancelled", state)
	}
	// The edit survives a reload; Reset restores the lesson's text.
	if err := chromedp.Do(ctx, chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS("#cell-cell-2 textarea"))); err != nil {
		t.Fatal(err)
	}
	v, _ := chromedp.Run(ctx, chromedp.Value(chromedp.CSS("#cell-cell-2 textarea")))
	if v != longRun {
		t.Errorf("after reload: got %q, want the edit %q", v, longRun)
	}
	chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#cell-cell-2 .reset")))
	v, _ = chromedp.Run(ctx, chromedp.Value(chromedp.CSS("#cell-cell-2 textarea")))
	if v != "probe -ops 50\n" {
		t.Errorf("after reset: got %q, want the lesson's text", v)
	}
	// The theme toggle flips and is remembered.
	before, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.documentElement.dataset.theme`))
	chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#theme-toggle")))
	after, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.documentElement.dataset.theme`))
	if before == after || (after != "dark" && after != "light") {
		t.Errorf("theme toggle: got %q then %q, want a switch", before, after)
	}
	// Shift+Enter runs.
	if err := chromedp.Do(ctx,
		chromedp.Focus(chromedp.CSS("#cell-always-run textarea")),
		chromedp.KeyEvent("\r", chromedp.KeyModifiers(chromedp.ModifierShift)),
		chromedp.WaitVisible(chromedp.CSS("#cell-always-run td.p99")),
	); err != nil {
		t.Fatalf("Shift+Enter: %v", err)
	}
	wide, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`document.documentElement.scrollWidth`))
	if wide > 400 {
		t.Errorf("page is %d px wide on a 390 px phone, want no horizontal scroll", wide)
	}
	shot(t, ctx, "#cell-always-run", "phone-dark.png")
	// Crash and sweep results fit the phone too: no table scrolls sideways,
	// the per-trial table included.
	if err := chromedp.Do(ctx,
		browsertest.Type("#cell-cell-2 textarea", phoneCell),
		chromedp.Click(chromedp.CSS("#cell-cell-2 .run")),
		chromedp.WaitVisible(chromedp.CSS("#cell-cell-2 .result-crash table")),
		chromedp.WaitVisible(chromedp.CSS("#cell-cell-2 .result-bench table")),
		chromedp.Evaluate[chromedp.Void](`document.querySelectorAll('#cell-cell-2 .result-crash details').forEach((d) => { d.open = true; })`),
	); err != nil {
		t.Fatalf("running a crash and a sweep: %v", err)
	}
	over, _ := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('#cell-cell-2 .table-wrap')].filter((w) => w.scrollWidth > w.clientWidth + 1).map((w) => w.closest('.result').className + ': ' + w.scrollWidth + ' px in ' + w.clientWidth)`))
	if len(over) > 0 {
		t.Errorf("tables scroll sideways on a 390 px phone: %q", over)
	}
	wide, _ = chromedp.Run(ctx, chromedp.Evaluate[int](`document.documentElement.scrollWidth`))
	if wide > 400 {
		t.Errorf("with a crash and a sweep the page is %d px wide on a 390 px phone, want no horizontal scroll", wide)
	}
	shot(t, ctx, "#cell-cell-2 .result-crash", "phone-crash.png")
	shot(t, ctx, "#cell-cell-2 .result-bench", "phone-sweep.png")
	// The sweep above has whatever figures this machine measured; a busy
	// machine's are wider. The widest a sweep can show (every latency
	// "999.9 µs", a seven-digit ops/s) must fit as well.
	over, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](widestSweep, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("drawing the widest sweep: %v", err)
	}
	if len(over) > 0 {
		t.Errorf("the widest sweep's table scrolls sideways on a 390 px phone: %q", over)
	}
}

// widestSweep draws, with the page's own results.js, a five-line sweep
// whose every figure takes the most characters its format allows, into
// the cell's result area, and lists the tables that scroll sideways.
const widestSweep = `(async () => {
  const { renderResults } = await import('/static/results.js');
  const lat = { count: 1999999, mean_ns: 999949, p50_ns: 999949, p95_ns: 999949, p99_ns: 999949, p999_ns: 999949, max_ns: 99994999 };
  const runs = [1, 2, 4, 8, 16].map((n) => ({ kind: 'bench', engine: 'null', sync: 'none', workload: 'fillrandom', threads: n, ops_per_sec: 9999999, latency: { put: lat } }));
  const out = document.querySelector('#cell-cell-2 .cell-out') || document.querySelector('#cell-cell-2');
  const box = document.createElement('div');
  out.append(box);
  renderResults(box, [{ spec: 'sweep -engine null -sync none -threads 1,2,4,8,16', result: runs }]);
  const over = [...box.querySelectorAll('.table-wrap')].filter((w) => w.scrollWidth > w.clientWidth + 1).map((w) => w.scrollWidth + ' px in ' + w.clientWidth);
  box.remove();
  return over;
})()`

// phoneCell is a crash (power loss simulated in memory, so it is quick)
// and a sweep, whose tables are the widest a cell shows.
const phoneCell = "crash -sync batch:100 -trials 2 -power\nsweep -engine null -sync none -threads 1,2,4,8,16 -ops 2000"

// TestBrowserQuizWaitsInQueue: a run: quiz checked while a cell holds the
// disk says how many runs are ahead of it, and gets its verdict once the
// cell is cancelled and its own run is done.
func TestBrowserQuizWaitsInQueue(t *testing.T) {
	ctx := browser(t, 1280, 900)
	s := newServer(t, nil)
	ts := startServer(t, s)
	if err := chromedp.Do(ctx,
		chromedp.Navigate(ts.URL+"/lessons/01-fixture"),
		chromedp.WaitVisible(chromedp.CSS("#cell-cell-2 textarea")),
		browsertest.Type("#cell-cell-2 textarea", longRun),
		chromedp.Click(chromedp.CSS("#cell-cell-2 .run")),
		chromedp.WaitVisible(chromedp.CSS("#cell-cell-2.is-running")),
		chromedp.Click(chromedp.CSS(`#quiz-path input[name=answer][value="1"]`)),
		chromedp.Click(chromedp.CSS("#quiz-path .check")),
	); err != nil {
		t.Fatalf("starting a long run and checking the quiz: %v", err)
	}
	const note = `(document.querySelector('#quiz-path .measuring') || {}).textContent || ''`
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`(`+note+`).includes('1 run ahead')`,
		chromedp.WithPollingTimeout(20*time.Second))); err != nil {
		got, _ := chromedp.Run(ctx, chromedp.Evaluate[string](note))
		t.Fatalf("the quiz's note says %q (%v), want it to say 1 run ahead in the queue", got, err)
	}
	shot(t, ctx, "#quiz-path", "quiz-queued.png")
	if err := chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS("#cell-cell-2 .cancel")),
		chromedp.WaitVisible(chromedp.CSS("#quiz-path .verdict")),
	); err != nil {
		t.Fatalf("after cancelling the cell, waiting for the quiz's verdict: %v", err)
	}
	// Right, or, when the run's conditions said the machine was busy,
	// no verdict on the prediction, saying why.
	cls, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('#quiz-path .verdict').className + '|' + !!document.querySelector('#quiz-path .verdict tr.busy')`))
	if cls != "verdict ok predicted|false" && cls != "verdict noisy predicted|true" {
		t.Errorf("the quiz's verdict: class and busy row %q, want right (verdict ok) or, on a busy machine, not graded with the reason", cls)
	}
}
