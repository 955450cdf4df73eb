package browsertest

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// The text check must find each kind of junk a bug leaves on a page, and
// stay quiet on the course's own words for them in code and on hidden
// elements.
func TestBrowserCheckText(t *testing.T) {
	ctx := Start(t, 800, 600, 2*time.Minute)
	pages := map[string]string{
		"/clean": `<p>Run <code>bench -engine null</code>; <kbd>NaN</kbd> <pre>undefined</pre>
<p>The instrument’s own ceiling &amp; more: a nullable nothing, an undefinedness.</p>
<p>The null engine’s ceiling, the null rows, one null-engine op.</p>
<p>mine-null · own</p>
<p hidden>null</p><div style="display:none">undefined</div>
<textarea>x = null</textarea>`,
		"/junk": `<p>Measure now <span>nullnull</span></p><p>p99: undefined ms</p><p>the null run</p><p>off by NaN×</p><p>yours-null</p>
<h2>The instrument&amp;rsquo;s own ceiling</h2>
<input aria-label="Your answer &amp;ndash; null">`,
	}
	mux := http.NewServeMux()
	for path, body := range pages {
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			w.Write([]byte(`<!doctype html><meta charset="utf-8"><title>t</title><link rel="icon" href="data:,">` + body))
		})
	}
	ts := httptest.NewServer(mux)
	defer ts.Close()

	if err := chromedp.Do(ctx, chromedp.Navigate(ts.URL+"/clean")); err != nil {
		t.Fatal(err)
	}
	if got, err := junkText(ctx); err != nil || len(got) != 0 {
		t.Errorf("a clean page: got %q, %v; want nothing", got, err)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(ts.URL+"/junk")); err != nil {
		t.Fatal(err)
	}
	got, err := junkText(ctx)
	if err != nil {
		t.Fatal(err)
	}
	all := strings.Join(got, "\n")
	for _, want := range []string{`<span>: "nullnull"`, `"p99: undefined ms"`, `"the null run"`, `"off by NaN×"`, `"yours-null"`, `"The instrument&rsquo;s own ceiling"`, `<input aria-label>: "Your answer &ndash; null"`} {
		if !strings.Contains(all, want) {
			t.Errorf("a page with junk: no %s in\n%s", want, all)
		}
	}
	if len(got) != 8 {
		t.Errorf("a page with junk: got %d findings, want 8 (two in the aria-label):\n%s", len(got), all)
	}
}
