// Package browsertest starts headless Chromium for kvlab's browser tests and
// watches what the page does: console errors, uncaught exceptions, failed
// loads, and requests to any host but the one under test.
//
// Every browser test uses it, so they all start Chromium the same way: the
// binary at /usr/bin/chromium (`apt-get install chromium`), headless, with
// a fresh profile and with the browser's own background traffic (updates,
// sync, QUIC probing) turned off, so that a request the page did not make
// cannot show up in the watch.
package browsertest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// ChromiumPath is where the tests look for the browser.
const ChromiumPath = "/usr/bin/chromium"

// RequireEnv, when set to 1 (.ci/run sets it), makes a test that would
// skip for a missing tool (Chromium, Node) fail instead, so CI cannot pass
// without running the browser and worker tests.
const RequireEnv = "KVLAB_REQUIRE_TOOLS"

// Missing skips the test because a tool it needs is not installed, or
// fails it when RequireEnv is set. why names the tool and how to install it.
func Missing(t testing.TB, why string) {
	t.Helper()
	if os.Getenv(RequireEnv) == "1" {
		t.Fatalf("%s, and %s=1", why, RequireEnv)
	}
	t.Skip("skipping: " + why)
}

// Start launches headless Chromium with a window of width x height and
// returns a context for chromedp. The browser is closed when the test
// ends. Without Chromium the test is skipped (see Missing).
// The context also ends after limit, a guard against a hung browser,
// not a speed requirement.
func Start(t testing.TB, width, height int, limit time.Duration) context.Context {
	t.Helper()
	if _, err := os.Stat(ChromiumPath); err != nil {
		Missing(t, ChromiumPath+" is not installed (apt-get install chromium)")
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(ChromiumPath),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-quic", true),
		chromedp.WindowSize(width, height),
		chromedp.UserDataDir(t.TempDir()),
		// Chromium makes its singleton's socket directory
		// (org.chromium.Chromium.*) under TMPDIR and leaves it there:
		// a directory of the test's own, removed when it ends.
		chromedp.Env("TMPDIR=" + t.TempDir()),
	}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelC := chromedp.NewContext(actx)
	ctx, cancelT := context.WithTimeout(ctx, limit)
	t.Cleanup(func() { cancelT(); cancelC(); cancelA() })
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting %s: %v", ChromiumPath, err)
	}
	return ctx
}

// Watch records, from now on, everything on the page in ctx that a
// finished page should not do: a console.error or console.assert, an
// uncaught exception or promise rejection, an error in the browser's log
// (a failed load, a 404, a blocked script), and a request to any origin
// but origin (data: and blob: URLs stay on the page and are allowed).
// It is safe for concurrent use.
type Watch struct {
	origin string     // host:port of the server under test
	mu     sync.Mutex // guards probs and reqs
	probs  []string   // problems not yet reported
	reqs   int        // requests seen
}

// NewWatch starts watching the page in ctx. origin is scheme://host:port
// of the server under test; its websocket (ws://host:port) counts as the
// same origin.
func NewWatch(t testing.TB, ctx context.Context, origin string) *Watch {
	t.Helper()
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		t.Fatalf("watch: origin %q is not scheme://host:port", origin)
	}
	w := &Watch{origin: u.Host}
	if err := chromedp.Listen(ctx, w.event); err != nil {
		t.Fatalf("watch: %v", err)
	}
	return w
}

func (w *Watch) event(ev any) {
	var p string
	switch e := ev.(type) {
	case *runtime.EventConsoleAPICalled:
		if e.Type == runtime.ConsoleAPICalledTypeError || e.Type == runtime.ConsoleAPICalledTypeAssert {
			var args []string
			for _, a := range e.Args {
				args = append(args, remoteText(a))
			}
			p = fmt.Sprintf("console.%s: %s", e.Type, strings.Join(args, " "))
		}
	case *runtime.EventExceptionThrown:
		d := e.ExceptionDetails
		text := d.Text
		if d.Exception != nil {
			text += " " + remoteText(d.Exception)
		}
		p = fmt.Sprintf("uncaught exception at %s:%d: %s", d.URL, d.LineNumber+1, text)
	case *log.EventEntryAdded:
		if e.Entry.Level == log.EntryLevelError {
			p = fmt.Sprintf("browser log (%s): %s %s", e.Entry.Source, e.Entry.Text, e.Entry.URL)
		}
	case *network.EventRequestWillBeSent:
		w.mu.Lock()
		w.reqs++
		w.mu.Unlock()
		if !w.sameOrigin(e.Request.URL) {
			p = "request to another host: " + e.Request.URL
		}
	case *network.EventWebSocketCreated:
		if !w.sameOrigin(e.URL) {
			p = "websocket to another host: " + e.URL
		}
	}
	if p != "" {
		w.mu.Lock()
		w.probs = append(w.probs, p)
		w.mu.Unlock()
	}
}

func (w *Watch) sameOrigin(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil {
		return false
	}
	switch u.Scheme {
	case "data", "blob", "about":
		return true
	case "http", "ws":
		return u.Host == w.origin
	}
	return false
}

// remoteText is what the DevTools console would print for an argument.
func remoteText(o *runtime.RemoteObject) string {
	if o == nil {
		return ""
	}
	if len(o.Value) > 0 {
		var s string
		if json.Unmarshal(o.Value, &s) == nil {
			return s
		}
		return string(o.Value)
	}
	return o.Description
}

// Requests is how many requests the page has made since the watch began:
// a check that the watch sees the page at all.
func (w *Watch) Requests() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.reqs
}

// Problems returns what the page did wrong so far, and forgets it.
func (w *Watch) Problems() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	p := w.probs
	w.probs = nil
	return p
}

// Check fails the test for every problem seen since the last call; where
// says what the page was doing.
func (w *Watch) Check(t testing.TB, where string) {
	t.Helper()
	for _, p := range w.Problems() {
		t.Errorf("%s: %s", where, p)
	}
}

// Shot scrolls the element sel (when sel is not "") to the top of the
// window, captures the window as a PNG and writes it as name into each
// directory in dirs.
func Shot(t testing.TB, ctx context.Context, sel, name string, dirs ...string) {
	t.Helper()
	if sel != "" {
		if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`document.querySelector(`+jsQuote(sel)+`).scrollIntoView({block: "start"}); window.scrollBy(0, -70)`)); err != nil {
			t.Fatalf("screenshot %s: scrolling to %s: %v", name, sel, err)
		}
	}
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	for _, d := range dirs {
		if d == "" {
			continue
		}
		if err := os.WriteFile(filepath.Join(d, name), png, 0o644); err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
	}
}

// Buffer is a bytes.Buffer that a server under test (a goroutine, or a
// child process's output copier) and the test can share.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Type replaces the text of the textarea or input sel with text and tells
// the page, as typing would (an input event), so edits are noticed and
// kept.
func Type(sel, text string) chromedp.Action[chromedp.Void] {
	return chromedp.Steps(
		chromedp.SetValue(chromedp.CSS(sel), text),
		chromedp.Evaluate[chromedp.Void](`document.querySelector(`+jsQuote(sel)+`).dispatchEvent(new Event('input'))`),
	)
}

// jsQuote is s as a JavaScript string literal.
func jsQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
