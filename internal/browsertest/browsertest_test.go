package browsertest

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// The watch is what lets the end-to-end test say "no console errors and no
// requests to other hosts", so it must see each kind of problem, and must
// stay quiet on a page that has none.
func TestBrowserWatch(t *testing.T) {
	ctx := Start(t, 800, 600, 2*time.Minute)
	mux := http.NewServeMux()
	mux.HandleFunc("/clean", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte(`<!doctype html><title>clean</title><link rel="icon" href="data:,"><p>fine</p><script>console.log("just a log")</script>`))
	})
	mux.HandleFunc("/bad", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte(`<!doctype html><title>bad</title><link rel="icon" href="data:,">
<img src="/missing.png">
<script>
console.error("a console error");
fetch("http://127.0.0.2:9/elsewhere").catch(() => {});
setTimeout(() => { throw new Error("an uncaught one"); }, 0);
</script>`))
	})
	ts := httptest.NewServer(mux)
	defer ts.Close()
	w := NewWatch(t, ctx, ts.URL)

	if err := chromedp.Do(ctx, chromedp.Navigate(ts.URL+"/clean"), chromedp.WaitVisible(chromedp.CSS("p"))); err != nil {
		t.Fatal(err)
	}
	if p := w.Problems(); len(p) != 0 {
		t.Errorf("a clean page: got %q, want no problems", p)
	}
	if w.Requests() == 0 {
		t.Error("a clean page: the watch saw no request")
	}

	if err := chromedp.Do(ctx, chromedp.Navigate(ts.URL+"/bad")); err != nil {
		t.Fatal(err)
	}
	wants := []string{"console.error: a console error", "request to another host: http://127.0.0.2:9/elsewhere",
		"uncaught exception", "an uncaught one", "404"}
	var seen []string
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		seen = append(seen, w.Problems()...)
		all := strings.Join(seen, "\n")
		missing := 0
		for _, s := range wants {
			if !strings.Contains(all, s) {
				missing++
			}
		}
		if missing == 0 {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Errorf("a bad page: the watch reported\n%s\nwant each of %q", strings.Join(seen, "\n"), wants)
}
