package wasmtest

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/chromedp/chromedp"

	"kvlab/harness/calc"
	"kvlab/internal/browsertest"
	"kvlab/internal/server"
)

// fixtureLesson has two exercise blocks, as a lesson would.
const fixtureLesson = "---\ntitle: Exercise fixture\nsummary: Two in-browser exercises.\norder: 1\n---\n\n# Exercise fixture\n\n" +
	"```exercise percentile\n```\n\nSome text between.\n\n```exercise percentile-tests\n```\n"

// staticDir builds a static folder for the server: the repository's page
// files plus the freshly built wasm. withWasm false leaves wasm/ empty, as
// before `make wasm`.
func staticDir(t testing.TB, withWasm bool) string {
	t.Helper()
	dir := t.TempDir()
	src, err := filepath.Abs("../../static")
	if err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		copyFile(t, filepath.Join(src, e.Name()), filepath.Join(dir, e.Name()))
	}
	if err := os.Mkdir(filepath.Join(dir, "wasm"), 0o755); err != nil {
		t.Fatal(err)
	}
	if withWasm {
		wasm, wasmExec := buildWasm(t)
		copyFile(t, wasmExec, filepath.Join(dir, "wasm", "wasm_exec.js"))
		copyFile(t, wasm, filepath.Join(dir, "wasm", "yaegi.wasm"))
		gzipFile(t, wasm, filepath.Join(dir, "wasm", "yaegi.wasm.gz"))
	}
	return dir
}

func copyFile(t testing.TB, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func gzipFile(t testing.TB, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		t.Fatal(err)
	}
	zw, _ := gzip.NewWriterLevel(out, gzip.BestSpeed)
	if _, err := io.Copy(zw, in); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// startServer serves the fixture lesson with the given static folder.
func startServer(t testing.TB, static string) string {
	t.Helper()
	return serveLesson(t, static, fixtureLesson)
}

// serveLesson serves lesson (Markdown with front matter) as
// 01-exercise-fixture with the given static folder and returns its URL.
func serveLesson(t testing.TB, static, lesson string) string {
	t.Helper()
	srv, err := server.New(server.Config{
		Lessons: fstest.MapFS{"01-exercise-fixture.md": {Data: []byte(lesson)}},
		Static:  os.DirFS(static),
	})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(func() {
		ts.Close()
		srv.Close()
	})
	return ts.URL + "/lessons/01-exercise-fixture"
}

// browser starts headless Chromium, or skips when it is not installed.
// The crash exercise's test grades some thirty runs: on a busy machine
// that takes minutes.
func browser(t testing.TB) context.Context {
	return browsertest.Start(t, 1280, 900, 8*time.Minute)
}

// tableRow is one row of a results table as the page shows it.
type tableRow struct {
	Class string   `json:"class"`
	Cells []string `json:"cells"`
}

const ex1 = `.exercise[data-exercise=percentile]`

// readTable returns the rows of the first results table of sel.
func readTable(t testing.TB, ctx context.Context, sel string) []tableRow {
	t.Helper()
	rows, err := chromedp.Run(ctx, chromedp.Evaluate[[]tableRow](`Array.from(document.querySelectorAll(`+jsString(sel+` .ex-table:not(.ex-mutants) tbody tr`)+`)).map(tr => ({class: tr.className, cells: Array.from(tr.cells).map(td => td.textContent)}))`))
	if err != nil {
		t.Fatalf("reading the results table: %v", err)
	}
	return rows
}

func jsString(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `\'`) + "'"
}

// runAndWait clicks Run tests in sel, waits for data-state and returns it
// with the time from the click to the results.
func runAndWait(t testing.TB, ctx context.Context, sel string, timeout time.Duration) (string, time.Duration) {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`delete document.querySelector(`+jsString(sel)+`).dataset.state`)); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(sel+` .ex-run`))); err != nil {
		t.Fatal(err)
	}
	state, err := chromedp.Run(ctx, chromedp.Poll[string](`document.querySelector(`+jsString(sel)+`).dataset.state`,
		chromedp.WithPollingInterval(10*time.Millisecond), chromedp.WithPollingTimeout(timeout)))
	if err != nil {
		t.Fatalf("waiting for the results: %v", err)
	}
	return state, time.Since(start)
}

// slowLimit is the page's time limit for a run in these tests: a run
// that is over the page's own limit (2 s, 10 s for the crash exercises)
// only because the machine is busy is not stopped. It stays below the
// tests' 60 s wait for the results, so an endless loop is still stopped.
const slowLimit = 45 * time.Second

// raiseLimits sets the page's minimum time limit (the runner's
// minLimitMs) to d; 0 restores the page's own limits. A page keeps it
// until it is reloaded.
func raiseLimits(t testing.TB, ctx context.Context, d time.Duration) {
	t.Helper()
	got, err := chromedp.Run(ctx, chromedp.Evaluate[int64](fmt.Sprintf(`kvlabExercises.runner.minLimitMs = %d, kvlabExercises.runner.limitFor('percentile')`, d.Milliseconds())))
	if want := max(d.Milliseconds(), 2000); err != nil || got != want {
		t.Fatalf("after setting the page's minimum time limit to %v, percentile's limit is %d ms (err %v), want %d", d, got, err, want)
	}
}

func setCode(t testing.TB, ctx context.Context, sel, code string) {
	t.Helper()
	q, _ := json.Marshal(code)
	if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`document.querySelector(`+jsString(sel+` .ex-editor`)+`).value = `+string(q))); err != nil {
		t.Fatal(err)
	}
}

// typedOffByOne is typed key by key; the editor's auto-indent adds tabs
// after each newline, which Go does not mind.
const typedOffByOne = "package main\n\nimport \"math\"\n\nfunc Percentile(sorted []int64, p float64) int64 {\nn := len(sorted)\nif n == 0 {\nreturn 0\n}\nrank := int(math.Ceil(p * float64(n) / 100))\nreturn sorted[min(max(rank, 0), n-1)]\n}\n"

func TestBrowserExercise(t *testing.T) {
	ctx := browser(t)
	url := startServer(t, staticDir(t, true))

	loadStart := time.Now()
	if err := chromedp.Do(ctx, chromedp.Navigate(url),
		chromedp.WaitVisible(chromedp.CSS(ex1+` .ex-editor`))); err != nil {
		t.Fatalf("loading the exercise: %v", err)
	}
	loadTime := time.Since(loadStart)
	// The page's own limit is 2 s; the runs below that are not the
	// endless loop get slowLimit, as a busy machine can take longer.
	if limit, err := chromedp.Run(ctx, chromedp.Evaluate[int](`kvlabExercises.runner.limitFor('percentile')`)); err != nil || limit != 2000 {
		t.Errorf("time limit of percentile = %d ms (err %v), want 2000", limit, err)
	}
	raiseLimits(t, ctx, slowLimit)

	// Before any attempt: the stub, and no solution button.
	hidden, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.querySelector('`+ex1+` .ex-show-solution').hidden`))
	if err != nil || !hidden {
		t.Errorf("Show solution hidden before an attempt = %v (err %v), want true", hidden, err)
	}
	title, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(ex1+` .ex-title`)))
	if !strings.Contains(title, "Percentile") {
		t.Errorf("title %q, want it to name Percentile", title)
	}

	// A wrong solution, typed.
	setCode(t, ctx, ex1, "")
	if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS(ex1+` .ex-editor`), typedOffByOne)); err != nil {
		t.Fatal(err)
	}
	state, firstRun := runAndWait(t, ctx, ex1, 60*time.Second)
	if state != "failed" {
		t.Fatalf("off-by-one: state %q, want failed", state)
	}
	rows := readTable(t, ctx, ex1)
	if len(rows) != len(calc.PercentileCases) {
		t.Fatalf("got %d rows, want %d", len(rows), len(calc.PercentileCases))
	}
	// A page of quick exercises warms no grader: the worker only grades
	// what the reader runs.
	if warmed, err := chromedp.Run(ctx, chromedp.Evaluate[int](`kvlabExercises.runner.warmed.length`)); err != nil || warmed != 0 {
		t.Errorf("warm-ups on a page of percentile exercises = %d (err %v), want 0", warmed, err)
	}
	if r := rows[0]; r.Class != "ex-fail" || r.Cells[1] != "1..100, p=50" || r.Cells[2] != "50" || r.Cells[3] != "51" || !strings.Contains(r.Cells[5], "rank-1") {
		t.Errorf("first row %+v, want a failing 1..100, p=50 with want 50, got 51 and a rank-1 hint", r)
	}
	hidden, _ = chromedp.Run(ctx, chromedp.Evaluate[bool](`document.querySelector('`+ex1+` .ex-show-solution').hidden`))
	if hidden {
		t.Error("Show solution still hidden after an attempt")
	}

	// The right solution.
	setCode(t, ctx, ex1, solution(t, "percentile"))
	state, laterRun := runAndWait(t, ctx, ex1, 60*time.Second)
	if state != "passed" {
		t.Fatalf("solution: state %q, want passed", state)
	}
	for i, r := range readTable(t, ctx, ex1) {
		if r.Class != "ex-pass" {
			t.Errorf("row %d %+v, want pass", i+1, r)
		}
	}

	// A loop that never ends is stopped at the page's own limit, and a
	// fresh worker takes over.
	raiseLimits(t, ctx, 0)
	setCode(t, ctx, ex1, endless)
	state, stopTime := runAndWait(t, ctx, ex1, 30*time.Second)
	raiseLimits(t, ctx, slowLimit)
	if state != "stopped" {
		t.Fatalf("endless loop: state %q, want stopped", state)
	}
	msg, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(ex1+` .ex-stopped`)))
	if !strings.Contains(msg, "stopped after 2 s: does your loop end?") {
		t.Errorf("stop message %q", msg)
	}
	restartStart := time.Now()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`kvlabExercises.runner.state === 'ready'`,
		chromedp.WithPollingInterval(10*time.Millisecond), chromedp.WithPollingTimeout(30*time.Second))); err != nil {
		t.Fatalf("waiting for the fresh worker: %v", err)
	}
	restart := time.Since(restartStart)
	setCode(t, ctx, ex1, solution(t, "percentile"))
	if state, _ := runAndWait(t, ctx, ex1, 60*time.Second); state != "passed" {
		t.Fatalf("solution after the restart: state %q, want passed", state)
	}

	// Code that blocks every goroutine stops the Go program; the page says
	// so and replaces the worker.
	setCode(t, ctx, ex1, deadlock)
	if state, _ := runAndWait(t, ctx, ex1, 60*time.Second); state != "error" {
		t.Fatalf("deadlock: state %q, want error", state)
	}
	msg, _ = chromedp.Run(ctx, chromedp.Text(chromedp.CSS(ex1+` .ex-error`)))
	if !strings.Contains(msg, "deadlock") {
		t.Errorf("deadlock message %q, want it to name the deadlock", msg)
	}
	setCode(t, ctx, ex1, solution(t, "percentile"))
	if state, _ := runAndWait(t, ctx, ex1, 60*time.Second); state != "passed" {
		t.Fatalf("solution after the deadlock: state %q, want passed", state)
	}

	// The second block on the page works independently.
	const ex2 = `.exercise[data-exercise=percentile-tests]`
	if state, _ := runAndWait(t, ctx, ex2, 60*time.Second); state != "failed" {
		t.Errorf("percentile-tests stub: state %q, want failed (survivors)", state)
	}
	survivors, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('`+ex2+` .ex-mutants tr.ex-fail').length`))
	if survivors == 0 {
		t.Error("percentile-tests stub: no surviving broken versions shown")
	}

	loadMs, _ := chromedp.Run(ctx, chromedp.Evaluate[[]float64](`kvlabExercises.runner.loadMs`))

	// The code survives a reload; Reset asks, and discards only on yes.
	if err := chromedp.Do(ctx, chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(ex1+` .ex-editor`))); err != nil {
		t.Fatal(err)
	}
	code, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('`+ex1+` .ex-editor').value`))
	if code != solution(t, "percentile") {
		t.Errorf("after reload the editor holds %q, want the last code run", code)
	}
	if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`window.confirm = () => false`), chromedp.Click(chromedp.CSS(ex1+` .ex-reset`))); err != nil {
		t.Fatal(err)
	}
	code, _ = chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('`+ex1+` .ex-editor').value`))
	if code != solution(t, "percentile") {
		t.Error("Reset discarded the code although the question was answered no")
	}
	if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`window.confirm = () => true`), chromedp.Click(chromedp.CSS(ex1+` .ex-reset`))); err != nil {
		t.Fatal(err)
	}
	code, _ = chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('`+ex1+` .ex-editor').value`))
	e, _ := lookupStub("percentile")
	if code != e {
		t.Errorf("after Reset the editor holds %q, want the stub", code)
	}

	t.Logf("browser: page to editor %v (worker loads: first, after the 2 s stop, after the deadlock: %.0f ms); Run tests to results: first %v, later %v; stop after %v; fresh worker ready %v after the stop",
		loadTime.Round(time.Millisecond), loadMs, firstRun.Round(time.Millisecond), laterRun.Round(time.Millisecond),
		stopTime.Round(time.Millisecond), restart.Round(time.Millisecond))
}

// TestBrowserMissingWasm: before `make wasm` the block says how to build.
func TestBrowserMissingWasm(t *testing.T) {
	ctx := browser(t)
	url := startServer(t, staticDir(t, false))
	if err := chromedp.Do(ctx, chromedp.Navigate(url), chromedp.WaitVisible(chromedp.CSS(ex1+` .ex-missing`))); err != nil {
		t.Fatalf("waiting for the missing-wasm message: %v", err)
	}
	text, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(ex1+` .ex-missing`)))
	if !strings.Contains(text, "make wasm") {
		t.Errorf("message %q, want it to say make wasm", text)
	}
}
