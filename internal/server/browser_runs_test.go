package server

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"kvlab/internal/browsertest"
)

// TestBrowserRunsPage: /runs shows each run's result, a repeated cell's
// median above its rounds, specs that wrap between flags and never at a
// flag's hyphens, a layout that fits a 390 px phone, and links to /join
// and /classes.
func TestBrowserRunsPage(t *testing.T) {
	const longSpec = "bench -engine null -sync none -ops 300 -value-size 64 -dishonest-throughput-from-samples"
	ctx := browser(t, 1280, 900)
	ts := startServer(t, newServer(t, nil))
	const cell = "#cell-always-run"
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	// The fixture's two-line cell repeated 5 times: its lines' rounds
	// interleave, two groups of five.
	if err := chromedp.Do(wctx,
		chromedp.Navigate(ts.URL+"/lessons/01-fixture"),
		chromedp.WaitVisible(chromedp.CSS(cell+" .repeat")),
		chromedp.Click(chromedp.CSS(cell+" .repeat")),
		chromedp.WaitVisible(chromedp.CSS(cell+".is-done")),
		chromedp.WaitReady(chromedp.CSS(cell+" a.compare-link")),
	); err != nil {
		t.Fatalf("repeating the cell: %v", err)
	}
	// The first runs of the cell on this server: nothing before a change to
	// compare them with, so no link to a compare page that would refuse it.
	time.Sleep(time.Second)
	// Neither line's: the other line of the same cell, run beside it, is
	// not the runs before a change. The two lines are offered side by
	// side instead, each by its group of five runs.
	offered, _ := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('`+cell+` a.compare-link')].filter((a) => a.offsetParent !== null).map((a) => a.getAttribute('href') + ' ' + a.textContent)`))
	if len(offered) != 1 || !regexp.MustCompile(`^/compare\?a=\d+(,\d+){4}&b=\d+(,\d+){4} compare line 1 \(5 runs\) with line 2 \(5 runs\)$`).MatchString(offered[0]) {
		t.Errorf("the cell's first groups offer %q; want only its two lines compared, group of five against group of five (nothing before a change to compare with)", offered)
	} else {
		if err := chromedp.Do(ctx, chromedp.Navigate(ts.URL+strings.Fields(offered[0])[0]), chromedp.WaitVisible(chromedp.CSS("table.compare-table"))); err != nil {
			t.Fatalf("opening the two lines' compare page: %v", err)
		}
		if from, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('.compare-groups').innerText`)); strings.Count(from, "5 samples") != 2 {
			t.Errorf("the two lines' compare page says %q; want two groups of 5 samples", from)
		}
		if err := chromedp.Do(ctx, chromedp.Navigate(ts.URL+"/lessons/01-fixture"), chromedp.WaitVisible(chromedp.CSS(cell+" .run"))); err != nil {
			t.Fatal(err)
		}
	}
	if err := chromedp.Do(wctx,
		// and a line with long hyphenated flags, once
		browsertest.Type(cell+" textarea", longSpec),
		chromedp.Click(chromedp.CSS(cell+" .run")),
		chromedp.WaitVisible(chromedp.CSS(cell+".is-done")),
		chromedp.Navigate(ts.URL+"/runs"),
		chromedp.WaitVisible(chromedp.CSS("table.runs-table")),
	); err != nil {
		t.Fatalf("repeating the cell and opening /runs: %v", err)
	}
	type row struct {
		Median bool   `json:"median"`
		ID     string `json:"id"`
		Result string `json:"result"`
		Spec   string `json:"spec"`
		Rounds string `json:"rounds"`
		// Compare is the row's link to the compare page, if any.
		Compare string `json:"compare"`
	}
	rows, err := chromedp.Run(ctx, chromedp.Evaluate[[]row](`Array.from(document.querySelectorAll('table.runs-table tbody tr')).map(tr => ({
		median: tr.classList.contains('median-row'), id: tr.querySelector('th').textContent.trim(),
		result: (tr.querySelector('td.result') || {}).textContent || '', spec: (tr.querySelector('td.spec') || {}).textContent || '',
		rounds: (tr.querySelector('td.rounds') || {}).textContent || '',
		compare: (tr.querySelector('a[href^="/compare"]') || {href: ''}).href}))`))
	if err != nil {
		t.Fatal(err)
	}
	// Every run shows its result; each median row is the median of the
	// rounds it lists (five: the middle value, which the rounding keeps).
	result := regexp.MustCompile(`^(\d+) ops/s, p99 ([0-9.]+ (?:ns|µs|ms|s))$`)
	byID := map[string]row{}
	for _, r := range rows {
		if !r.Median {
			byID[r.ID] = r
			if !result.MatchString(r.Result) {
				t.Errorf("run %s: result %q, want ops/s and p99", r.ID, r.Result)
			}
		}
	}
	medians := 0
	for _, r := range rows {
		if !r.Median {
			continue
		}
		medians++
		ids := regexp.MustCompile(`#\d+`).FindAllString(r.Rounds, -1)
		var ops []int
		var p99s []string
		for _, id := range ids {
			m := result.FindStringSubmatch(byID[id].Result)
			if m == nil {
				t.Fatalf("median row %q lists %s, which shows %q", r.Rounds, id, byID[id].Result)
			}
			n, _ := strconv.Atoi(m[1])
			ops = append(ops, n)
			p99s = append(p99s, m[2])
		}
		if len(ids) != 5 {
			t.Errorf("median row %q: %d rounds, want the repeat's 5", r.Rounds, len(ids))
			continue
		}
		slices.Sort(ops)
		m := result.FindStringSubmatch(r.Result)
		if m == nil || m[1] != strconv.Itoa(ops[2]) || !slices.Contains(p99s, m[2]) {
			t.Errorf("median row of %v: %q, want %d ops/s (the middle of %v) and one of the rounds' p99s %v", ids, r.Result, ops[2], ops, p99s)
		}
	}
	if medians != 2 {
		t.Errorf("got %d median rows, want one per line of the repeated cell (2)", medians)
	}
	// The cell's first runs have nothing before a change to compare them
	// with: neither a median row nor the first run's permalink offers a
	// compare page, which would only refuse (TestBrowserArchive sees one
	// offered where it works).
	for _, r := range rows {
		if r.Compare != "" {
			t.Errorf("/runs row %s %q offers %s, but the cell has no runs before a change to compare with", r.ID, r.Rounds, r.Compare)
		}
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(ts.URL+"/runs/1"), chromedp.WaitVisible(chromedp.CSS(".run-result"))); err != nil {
		t.Fatalf("opening /runs/1: %v", err)
	}
	if href, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`(document.querySelector('main a[href^="/compare"]') || {href: ''}).href`)); href != "" {
		t.Errorf("/runs/1, the cell's first run, offers %s", href)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(ts.URL+"/runs"), chromedp.WaitVisible(chromedp.CSS("table.runs-table"))); err != nil {
		t.Fatal(err)
	}
	if len(byID) != 11 {
		t.Errorf("got %d runs, want 11 (2 lines x 5 rounds, and one more)", len(byID))
	}

	checkLayout := func(where string) {
		t.Helper()
		type layout struct {
			Split    []string `json:"split"`
			Wide     bool     `json:"wide"`
			Clipped  []string `json:"clipped"`
			Links    []string `json:"links"`
			Width    int      `json:"width"`
			Overflow bool     `json:"overflow"`
		}
		l, err := chromedp.Run(ctx, chromedp.Evaluate[layout](`(() => {
			const split = [], clipped = [];
			for (const code of document.querySelectorAll('table.runs-table td.spec code')) {
				// Each flag on one line: its characters' boxes share one top.
				const walk = document.createTreeWalker(code, NodeFilter.SHOW_TEXT);
				for (let n; (n = walk.nextNode());) {
					for (const m of n.data.matchAll(/-[a-z][a-z0-9-]*/g)) {
						const r = document.createRange(); r.setStart(n, m.index); r.setEnd(n, m.index + m[0].length);
						if (new Set(Array.from(r.getClientRects()).map(x => Math.round(x.top))).size > 1) split.push(m[0]);
					}
				}
				const b = code.getBoundingClientRect();
				if (b.right > innerWidth + 1 || b.left < -1) clipped.push(code.textContent);
			}
			const wrap = document.querySelector('.table-wrap');
			return {split, clipped, wide: document.documentElement.scrollWidth > innerWidth + 1, width: innerWidth,
				overflow: wrap.scrollWidth > wrap.clientWidth + 1,
				links: Array.from(document.querySelectorAll('main a')).map(a => a.getAttribute('href')).filter(h => h === '/join' || h === '/classes')};
		})()`))
		if err != nil {
			t.Fatal(err)
		}
		if len(l.Split) > 0 || l.Wide || len(l.Clipped) > 0 || l.Overflow {
			t.Errorf("%s (%d px): flags split across lines %q, page wider than the window %v, specs clipped %q, table scrolls sideways %v; want none",
				where, l.Width, l.Split, l.Wide, l.Clipped, l.Overflow)
		}
		if !slices.Contains(l.Links, "/join") || !slices.Contains(l.Links, "/classes") {
			t.Errorf("%s: links %q, want /join and /classes", where, l.Links)
		}
	}
	// A narrow desktop column: the spec must wrap, between flags.
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(800, 900), chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS("table.runs-table"))); err != nil {
		t.Fatal(err)
	}
	checkLayout("/runs at 800 px")
	shot(t, ctx, "", "runs-800.png")
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile, chromedp.EmulateScale(2)),
		chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS("table.runs-table"))); err != nil {
		t.Fatal(err)
	}
	if w, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`innerWidth`)); w != 390 {
		t.Errorf("/runs on a 390 px phone is laid out %d px wide (a mobile browser widens the page to fit what overflows)", w)
	}
	checkLayout("/runs on a phone")
	shot(t, ctx, "", "runs-phone.png")
	browsertest.CheckText(t, ctx, "/runs")

	// The index links to them too.
	if err := chromedp.Do(ctx, chromedp.Navigate(ts.URL+"/"), chromedp.WaitVisible(chromedp.CSS(".lesson-card"))); err != nil {
		t.Fatal(err)
	}
	for _, href := range []string{"/join", "/classes", "/runs"} {
		if n, _ := chromedp.Run(ctx, chromedp.Evaluate[int](fmt.Sprintf(`document.querySelectorAll('main a[href=%q]').length`, href))); n == 0 {
			t.Errorf("the index has no link to %s", href)
		}
	}
}
