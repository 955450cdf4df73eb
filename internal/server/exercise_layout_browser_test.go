package server

import (
	"testing"

	"github.com/chromedp/chromedp"
)

// What "Measure on this disk" shows sits inside the exercise's box with
// the same inset as the test results, not flush against its left border.
func TestBrowserMeasureResultInset(t *testing.T) {
	ctx := browser(t, 1280, 900)
	ts := startServer(t, newServer(t, nil))
	if err := chromedp.Do(ctx,
		chromedp.Navigate(ts.URL+"/lessons/01-fixture"),
		chromedp.WaitReady(chromedp.CSS(".exercise .ex-measured")),
	); err != nil {
		t.Fatal(err)
	}
	inset, err := chromedp.Run(ctx, chromedp.Evaluate[[]float64](`(() => {
		const ex = document.querySelector('.exercise'), m = ex.querySelector('.ex-measured'), r = ex.querySelector('.ex-results');
		const p = document.createElement('p'); p.textContent = 'measured'; m.replaceChildren(p);
		const q = document.createElement('p'); q.textContent = 'tested'; r.replaceChildren(q);
		return [p.getBoundingClientRect().left - ex.getBoundingClientRect().left, q.getBoundingClientRect().left - ex.getBoundingClientRect().left];
	})()`))
	if err != nil {
		t.Fatal(err)
	}
	if len(inset) != 2 || inset[0] < 10 || inset[0] != inset[1] {
		t.Errorf("the measured result starts %v px inside the exercise's box, the test results %v px; want the same inset, at least 10 px", inset[0], inset[1])
	}
}
