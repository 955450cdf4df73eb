package server

import (
	"regexp"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// In a browser, every error a person reaches on a server that serves
// others is the site's page: its top bar and stylesheet, a title and a
// sentence, no package prefix ("archive: ", "classroom: ") and no path of
// the server's machine, and it fits a 390 px phone. A code typed wrong
// is said on the join form as a person reads it, and /runs does not name
// the archive's file either.
func TestBrowserErrorPages(t *testing.T) {
	ctx := browser(t, 1280, 900)
	s := newServer(t, func(c *Config) { c.Token = "error-pages-token" })
	ts := startServer(t, s)
	dataDir := s.cfg.DataDir
	prefix := regexp.MustCompile(`\b(archive|classroom|server|runspage|runq|room|guard|web): `)
	type page struct {
		Topbar  bool   `json:"topbar"`
		Styled  bool   `json:"styled"`
		Title   string `json:"title"`
		Text    string `json:"text"`
		Back    bool   `json:"back"`
		Overrun bool   `json:"overrun"`
		Width   int    `json:"width"`
	}
	const read = `({
		topbar: !!document.querySelector('header.topbar a.brand[href="/"]') && document.querySelector('header.topbar').getBoundingClientRect().height > 0,
		styled: [...document.styleSheets].some((s) => (s.href || '').endsWith('/static/app.css') && s.cssRules.length > 0) && getComputedStyle(document.querySelector('header.topbar')).display === 'flex',
		title: (document.querySelector('main h1') || {}).textContent || '',
		text: document.body.innerText,
		back: !!document.querySelector('main a[href="/"]'),
		overrun: document.documentElement.scrollWidth > innerWidth + 1, width: innerWidth})`
	tests := []struct{ path, want string }{
		{"/no/such/page", "There is no page at this address"},
		{"/lessons/01-fixture/extra", "There is no page at this address"},
		{"/runs/999999", "Run 999999 is not in this server's archive"},
		{"/compare?a=999999&b=1000000", "is not in this server's archive"},
		{"/static/no-such-file.js", "There is no page at this address"},
		{"/room/zz", "Ask the presenter for the code"},
	}
	for _, width := range []int{1280, 390} {
		if width == 390 {
			if err := chromedp.Do(ctx, chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile, chromedp.EmulateScale(2))); err != nil {
				t.Fatal(err)
			}
		}
		for _, tt := range tests {
			if err := chromedp.Do(ctx, chromedp.Navigate(ts.URL+tt.path), chromedp.WaitReady(chromedp.CSS("body"))); err != nil {
				t.Fatalf("%s: %v", tt.path, err)
			}
			p, err := chromedp.Run(ctx, chromedp.Evaluate[page](read))
			if err != nil {
				t.Fatal(err)
			}
			if !p.Topbar || !p.Styled || p.Title == "" || !p.Back {
				t.Errorf("%s at %d px: top bar %v, stylesheet %v, title %q, link back %v; want the site's error page (%q)", tt.path, width, p.Topbar, p.Styled, p.Title, p.Back, p.Text)
			}
			if !strings.Contains(p.Text, tt.want) {
				t.Errorf("%s at %d px says %q, want %q", tt.path, width, p.Text, tt.want)
			}
			for _, bad := range []string{"404 page not found", dataDir, "kvlab.db"} {
				if strings.Contains(p.Text, bad) {
					t.Errorf("%s at %d px shows %q: %q", tt.path, width, bad, p.Text)
				}
			}
			if m := prefix.FindString(p.Text); m != "" {
				t.Errorf("%s at %d px shows the package prefix %q: %q", tt.path, width, m, p.Text)
			}
			// A phone widens its layout to fit what overflows.
			if p.Overrun || p.Width != width {
				t.Errorf("%s at %d px is laid out %d px wide (wider than the window: %v)", tt.path, width, p.Width, p.Overrun)
			}
		}
	}
	shot(t, ctx, "", "error-page-phone.png")
	// A code typed wrong: the join form again, saying why as a person reads it.
	if err := chromedp.Do(ctx, chromedp.Navigate(ts.URL+"/join?code=ABCDE-FGHJ0"), chromedp.WaitVisible(chromedp.CSS(".join-error"))); err != nil {
		t.Fatal(err)
	}
	if text, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('.join-error').textContent`)); !strings.Contains(text, "not a room code") || prefix.MatchString(text) {
		t.Errorf("/join with a wrong code says %q; want that it is not a room code, without a package prefix", text)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(ts.URL+"/runs"), chromedp.WaitReady(chromedp.CSS("main"))); err != nil {
		t.Fatal(err)
	}
	if text, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`)); strings.Contains(text, dataDir) || strings.Contains(text, "kvlab.db") {
		t.Errorf("/runs on a server with a token names the archive's file: %q", text)
	}
}
