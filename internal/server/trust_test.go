package server

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"kvlab/internal/browsertest"
)

// hostileLesson is an author-mode lesson that tries every way Markdown
// has to put script on a student's page.
const hostileLesson = `---
title: A hostile lesson
summary: Tries to run script.
order: 1
---

# A hostile lesson

<script>window.kvlabPwned = 'script tag'</script>

Text with <img src="/static/favicon.svg" onload="window.kvlabPwned = 'event handler'"> inline HTML
and a [link](javascript:window.kvlabPwned='link') and <a href="javascript:void(0)" onclick="window.kvlabPwned='a'">another</a>.

<iframe src="https://example.org/"></iframe>

` + "```lab\nbench -engine null -ops 100\n```\n" + `
` + "```quiz\nid: q\nquestion: Is it <b onmouseover=\"window.kvlabPwned='question'\">safe</b>?\nrun: bench -engine null -ops 50\nanswer: 1\nchoices: yes | no\nexplain: Safe <img src=/static/favicon.svg onload=\"window.kvlabPwned='explain'\"> and [a link](javascript:window.kvlabPwned='explain-link').\n```\n"

func hostileServer(t *testing.T) *Server {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "01-hostile.md"), []byte(hostileLesson), 0o644); err != nil {
		t.Fatal(err)
	}
	fsys, err := lessonsFS(dir)
	if err != nil {
		t.Fatal(err)
	}
	return newServer(t, func(c *Config) { c.Lessons, c.Reload = fsys, true })
}

// In author mode a lesson's raw HTML, event handlers and javascript: links
// do not reach the page. Before, they were rendered as written.
func TestLessonHTMLIsNotRendered(t *testing.T) {
	s := hostileServer(t)
	page := get(t, s, "/lessons/01-hostile").Body.String()
	for _, bad := range []string{"<script>window", "onload=", "onclick=", "onmouseover=", "javascript:", "<iframe"} {
		if strings.Contains(page, bad) {
			t.Errorf("the page contains %q", bad)
		}
	}
	if !strings.Contains(page, "raw HTML omitted") {
		t.Errorf("the page does not say raw HTML was left out")
	}
}

// Every response carries the Content-Security-Policy.
func TestCSPOnEveryRoute(t *testing.T) {
	s := newServer(t, nil)
	for _, path := range []string{"/", "/lessons/01-fixture", "/lessons/nope", "/static/app.js", "/static/chroma.css", "/nope", "/api/quiz/queue?ticket=x",
		"/api/rooms/ABCDE-FGHJK", "/api/rooms/ABCDE-FGHJK/board?measure=p99", "/room/ABCDE-FGHJK/qr.svg", "/api/share-target"} {
		csp := get(t, s, path).Header().Get("Content-Security-Policy")
		for _, want := range []string{"default-src 'self'", "script-src 'self' 'wasm-unsafe-eval'", "object-src 'none'", "frame-ancestors 'none'"} {
			if !strings.Contains(csp, want) {
				t.Errorf("%s: Content-Security-Policy %q lacks %q", path, csp, want)
			}
		}
		for _, d := range strings.Split(csp, ";") {
			if d = strings.TrimSpace(d); strings.HasPrefix(d, "script-src ") && (strings.Contains(d, "'unsafe-inline'") || strings.Contains(d, "'unsafe-eval'")) {
				t.Errorf("%s: %q allows inline script or eval", path, d)
			}
		}
	}
	r := httpPost(t, s, "/api/quiz", `{}`)
	if r.Header().Get("Content-Security-Policy") == "" {
		t.Errorf("POST /api/quiz: no Content-Security-Policy")
	}
}

func httpPost(t *testing.T, s http.Handler, path, body string) *httptest.ResponseRecorder {
	t.Helper()
	w := httptest.NewRecorder()
	r, _ := http.NewRequest("POST", "http://localhost"+path, strings.NewReader(body))
	s.ServeHTTP(w, r)
	return w
}

// In a real browser, a hostile lesson runs none of its script, the page
// still works under the policy (its scripts load, a cell runs, a quiz is
// checked and explained), and script injected into the page after it
// loaded is blocked by the policy.
func TestBrowserHostileLessonRunsNoScript(t *testing.T) {
	ctx := browser(t, 1280, 900)
	s := hostileServer(t)
	ts := startServer(t, s)
	watch := browsertest.NewWatch(t, ctx, ts.URL)
	if err := chromedp.Do(ctx,
		chromedp.Navigate(ts.URL+"/lessons/01-hostile"),
		chromedp.WaitVisible(chromedp.CSS(".cell .run")),
		chromedp.Click(chromedp.CSS(".cell .run")),
		chromedp.WaitVisible(chromedp.CSS(".cell.is-done table.nums")),
		chromedp.Click(chromedp.CSS(".quiz input[type=radio]")),
		chromedp.Click(chromedp.CSS(".quiz .check")),
		chromedp.WaitVisible(chromedp.CSS(".quiz .explain")),
	); err != nil {
		t.Fatalf("using the hostile lesson's page: %v", err)
	}
	chromedp.Run(ctx, chromedp.Evaluate[bool](`document.querySelectorAll('img, a').forEach(e => { e.dispatchEvent(new MouseEvent('mouseover')); }); true`))
	theme, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.documentElement.dataset.theme || ''`))
	if theme == "" {
		t.Errorf("theme.js did not run under the policy")
	}
	pwned, err := chromedp.Run(ctx, chromedp.Evaluate[string](`String(window.kvlabPwned)`))
	if err != nil || pwned != "undefined" {
		t.Errorf("window.kvlabPwned = %q (%v): the lesson ran script", pwned, err)
	}
	explain, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('.quiz .explain').innerHTML`))
	if strings.Contains(explain, "javascript:") || strings.Contains(explain, "onload") {
		t.Errorf("the explanation holds %q", explain)
	}
	watch.Check(t, "the hostile lesson's page")
	// Script put into the page after it loaded is the policy's to stop.
	chromedp.Run(ctx, chromedp.Evaluate[bool](`document.body.insertAdjacentHTML('beforeend', '<img src="/static/favicon.svg" onload="window.kvlabPwned = 1">'); true`))
	time.Sleep(500 * time.Millisecond)
	if pwned, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`String(window.kvlabPwned)`)); pwned != "undefined" {
		t.Errorf("an injected event handler ran (window.kvlabPwned = %s): the policy does not forbid inline script", pwned)
	}
	var blocked bool
	for _, p := range watch.Problems() {
		blocked = blocked || strings.Contains(p, "Content Security Policy")
	}
	if !blocked {
		t.Errorf("the browser logged no Content Security Policy violation for the injected handler")
	}
}
