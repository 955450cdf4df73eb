package server

import (
	"fmt"
	"testing"

	"github.com/chromedp/chromedp"

	"kvlab/lessons"
)

// The contents entry marked as being read is the section whose heading
// is last above the reading line, scrolling down and back up: never the
// next section while the reader is still on the one before it.
func TestBrowserTOCFollowsTheReader(t *testing.T) {
	ctx := browser(t, 1280, 800)
	ts := startServer(t, newServer(t, func(c *Config) { c.Lessons = lessons.FS }))
	if err := chromedp.Do(ctx,
		chromedp.Navigate(ts.URL+"/lessons/07-crash-consistency"),
		chromedp.WaitVisible(chromedp.CSS(".toc a.active")),
	); err != nil {
		t.Fatal(err)
	}
	ids, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('.toc a[href^="#"]')].map((a) => decodeURIComponent(a.getAttribute('href').slice(1))).filter((id) => document.getElementById(id))`))
	if err != nil || len(ids) < 4 {
		t.Fatalf("contents entries %v (%v), want at least 4", ids, err)
	}
	// Down through the page, then back up: each time, heading i sits 60%
	// down the window, so the reader is at the end of section i-1.
	order := []int{}
	for i := 1; i < len(ids); i++ {
		order = append(order, i)
	}
	for i := len(ids) - 1; i >= 1; i-- {
		order = append(order, i)
	}
	for _, i := range order {
		got, err := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf(`new Promise((done) => {
			const el = document.getElementById(%q);
			window.scrollTo(0, el.getBoundingClientRect().top + scrollY - innerHeight * 0.6);
			setTimeout(() => requestAnimationFrame(() => requestAnimationFrame(() => {
				const a = document.querySelector('.toc a.active');
				done(a ? decodeURIComponent(a.getAttribute('href').slice(1)) : '');
			})), 150);
		})`, ids[i]), chromedp.EvalAwaitPromise))
		if err != nil {
			t.Fatal(err)
		}
		// Near the foot of the page the window cannot scroll far enough:
		// then any section up to i-1 that is above the line is right.
		at, _ := chromedp.Run(ctx, chromedp.Evaluate[float64](fmt.Sprintf(`document.getElementById(%q).getBoundingClientRect().top / innerHeight`, ids[i])))
		if at > 0.55 && got != ids[i-1] {
			t.Errorf("heading %q 60%% down the window: contents mark %q, want %q (the section being read)", ids[i], got, ids[i-1])
		}
	}
}
