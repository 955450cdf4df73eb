package static

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"kvlab/internal/browsertest"
)

// On a 390 px phone a result table wider than its box scrolls inside it
// with a cue: its right edge fades while there is more to the right, and
// not once scrolled to the end; a table that fits does not fade.
func TestBrowserNarrowTablesShowMore(t *testing.T) {
	ctx := browsertest.Start(t, 390, 844, 2*time.Minute)
	mux := http.NewServeMux()
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(FS)))
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) { http.ServeFile(w, r, "testdata/results.html") })
	mux.HandleFunc("GET /results.json", func(w http.ResponseWriter, r *http.Request) { http.ServeFile(w, r, "testdata/results.json") })
	ts := httptest.NewServer(mux)
	defer ts.Close()
	// A headless window is never narrower than about 500 px: the phone's
	// 390 is emulated, as a phone lays the page out.
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile, chromedp.EmulateScale(2)),
		chromedp.Navigate(ts.URL+"/"), chromedp.WaitVisible(chromedp.CSS(`body[data-rendered="yes"]`))); err != nil {
		t.Fatal(err)
	}
	if w, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`innerWidth`)); w != 390 {
		t.Fatalf("the page is laid out %d px wide, want 390", w)
	}
	type wrap struct {
		Over  bool   `json:"over"`
		Start string `json:"start"`
		End   string `json:"end"`
	}
	got, err := chromedp.Run(ctx, chromedp.Evaluate[[]wrap](`new Promise((done) => {
		// A table of the shape a -sync policies cell draws, with its MODEL
		// columns: wider than a phone.
		const wide = document.createElement('div');
		wide.className = 'table-wrap';
		wide.innerHTML = '<table class="nums"><thead><tr>' + ['line', 'ops/s', 'p50', 'p90', 'p99', 'p99.9', 'max', 'fsyncs', 'model ops/s', 'model p99'].map((c) => '<th>' + c + '</th>').join('') +
			'</tr></thead><tbody><tr><th>bench -engine kv -sync batch:64</th>' + '<td>12345.6</td>'.repeat(9) + '</tr></tbody></table>';
		document.querySelector('#out').append(wide);
		const ws = [...document.querySelectorAll('.table-wrap')].filter((w) => w.offsetParent !== null);
		const fade = (w) => getComputedStyle(w).getPropertyValue('--more-right').trim();
		const frames = (fn) => requestAnimationFrame(() => requestAnimationFrame(() => setTimeout(fn, 50)));
		frames(() => {
			const start = ws.map(fade);
			ws.forEach((w) => { w.scrollLeft = w.scrollWidth; });
			// Any overflow, a pixel too, hides part of a column: it scrolls.
			frames(() => done(ws.map((w, i) => ({ over: w.scrollWidth > w.clientWidth, start: start[i], end: fade(w) }))));
		});
	})`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	over := 0
	for i, w := range got {
		if w.Over {
			over++
			if w.Start == "0px" || w.Start == "" || w.End != "0px" {
				t.Errorf("table %d scrolls: fade %q at its start, %q at its end; want a fade, then none", i, w.Start, w.End)
			}
		} else if w.Start != "0px" && w.Start != "" {
			t.Errorf("table %d fits its box but fades (%q)", i, w.Start)
		}
	}
	if over == 0 {
		t.Errorf("no table scrolls at 390 px (%+v): the test shows nothing", got)
	}
}
