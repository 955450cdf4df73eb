package browsertest

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

func TestBrowserAX(t *testing.T) {
	ctx := Start(t, 800, 600, 2*time.Minute)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte(`<!doctype html><meta charset="utf-8"><title>t</title><link rel="icon" href="data:,">
<p id="q">How many puts?</p><p id="d">Press Esc, then Tab.</p>
<input id="named" aria-labelledby="q" aria-describedby="d">
<label>Your answer <input id="plain"></label>
<input id="dangling" aria-labelledby="nowhere">`))
	}))
	defer ts.Close()
	if err := chromedp.Do(ctx, chromedp.Navigate(ts.URL)); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ sel, name, desc string }{
		{"#named", "How many puts?", "Press Esc, then Tab."},
		{"#plain", "Your answer", ""},
		{"#dangling", "", ""},
	} {
		name, desc, err := AX(ctx, tt.sel)
		if err != nil || name != tt.name || desc != tt.desc {
			t.Errorf("%s: got name %q, description %q, %v; want %q, %q", tt.sel, name, desc, err, tt.name, tt.desc)
		}
	}
}
