package server

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"kvlab/internal/browsertest"
)

// The archive in a real browser: a cell's result links to its permalink,
// which shows the same table, charts and conditions; "Repeat 5×" builds a
// group, and after a change to the cell a second group, which the cell
// links to the compare page.
func TestBrowserArchive(t *testing.T) {
	ctx := browser(t, 1280, 900)
	s := newServer(t, nil)
	ts := startServer(t, s)
	watch := browsertest.NewWatch(t, ctx, ts.URL)
	const cell = "#cell-always-run"
	wait := func(what string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		wctx, cancel := context.WithTimeout(ctx, 90*time.Second)
		defer cancel()
		if err := chromedp.Do(wctx, actions...); err != nil {
			state, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`(document.querySelector('`+cell+` .cell-out') || document.body).innerText.slice(0, 600)`))
			t.Fatalf("%s: %v (page says %q)", what, err, state)
		}
	}

	// Run the cell: each line's result links to its permalink.
	wait("running the cell",
		chromedp.Navigate(ts.URL+"/lessons/01-fixture"),
		chromedp.WaitVisible(chromedp.CSS(cell+" .run")),
		chromedp.Click(chromedp.CSS(cell+" .run")),
		chromedp.WaitVisible(chromedp.CSS(cell+".is-done")),
		chromedp.WaitVisible(chromedp.CSS(cell+" .cell-links a.permalink")),
	)
	links, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll('`+cell+` a.permalink')).map(a => a.href)`))
	if err != nil || len(links) != 2 {
		t.Fatalf("got permalinks %v (%v), want one per line of the cell", links, err)
	}
	cellTable, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(cell+" table.nums")))

	// The quiz on the cell is graded from the server's record of that run.
	wait("checking the quiz",
		chromedp.SetValue(chromedp.CSS("#quiz-count input[name=answer]"), "500"),
		chromedp.Click(chromedp.CSS("#quiz-count .check")),
		chromedp.WaitVisible(chromedp.CSS("#quiz-count .verdict.ok")),
	)

	// The permalink shows what the cell showed.
	wait("opening the permalink",
		chromedp.Navigate(links[0]),
		chromedp.WaitVisible(chromedp.CSS(".run-result table.nums td.p99")),
	)
	type page struct {
		Table  string `json:"table"`
		Charts int    `json:"charts"`
		Cond   string `json:"cond"`
		JSON   string `json:"json"`
		TSV    string `json:"tsv"`
		From   string `json:"from"`
	}
	got, err := chromedp.Run(ctx, chromedp.Evaluate[page](`({
		table: document.querySelector('.run-result table.nums').innerText,
		charts: document.querySelectorAll('.run-result figure.chart svg').length,
		cond: (document.querySelector('.run-result .conditions') || {}).innerText || '',
		json: document.querySelector('.exports a[href$=".json"]').getAttribute('href'),
		tsv: document.querySelector('.exports a[href$=".tsv"]').getAttribute('href'),
		from: document.querySelector('.run-meta a').getAttribute('href')})`))
	if err != nil {
		t.Fatal(err)
	}
	if got.Charts < 2 || !strings.Contains(got.Cond, "Conditions") || got.From != "/lessons/01-fixture#cell-always-run" ||
		!strings.HasSuffix(got.JSON, ".json") || !strings.HasSuffix(got.TSV, ".tsv") || !strings.Contains(strings.ToLower(got.Table), "p99") {
		t.Errorf("the permalink shows %+v, want the cell's table, its charts and conditions, a link back and the exports", got)
	}
	// The figures of the permalink's row (after its label) are the cell's first row's.
	if rows := strings.Split(got.Table, "\n"); len(rows) != 2 || !strings.Contains(cellTable, rows[1][strings.Index(rows[1], "\t"):]) {
		t.Errorf("the permalink's table %q does not match the cell's first line in %q", got.Table, cellTable)
	}
	shot(t, ctx, ".run-result", "permalink.png")

	// Repeat 5× twice, with a change of the cell between: two groups.
	for _, spec := range []string{"bench -engine null -sync always -ops 400", "bench -engine null -sync none -ops 400"} {
		wait("repeating "+spec,
			chromedp.Navigate(ts.URL+"/lessons/01-fixture"),
			chromedp.WaitVisible(chromedp.CSS(cell+" textarea")),
			browsertest.Type(cell+" textarea", spec),
			chromedp.Click(chromedp.CSS(cell+" .repeat")),
			chromedp.WaitVisible(chromedp.CSS(cell+".is-done")),
			chromedp.WaitReady(chromedp.CSS(cell+" a.compare-link")),
		)
	}
	wait("the second group's compare link", chromedp.WaitVisible(chromedp.CSS(cell+" a.compare-link")))
	rows, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('`+cell+` table.nums tbody tr').length`))
	if rows != 5 {
		t.Errorf("the repeated cell shows %d rows, want one per round (5)", rows)
	}
	href, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('`+cell+` a.compare-link').getAttribute('href')`))
	if !strings.Contains(href, "a=") || strings.Count(href, ",") != 8 {
		kept, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`localStorage.getItem('kvlab:results:01-fixture:always-run')`))
		t.Fatalf("the compare link is %q, want both groups of 5 runs by id (kept: %.600s)", href, kept)
	}
	wait("opening the compare page",
		chromedp.Click(chromedp.CSS(cell+" a.compare-link")),
		chromedp.WaitVisible(chromedp.CSS("table.compare-table")),
	)
	cmp, err := chromedp.Run(ctx, chromedp.Evaluate[page](`({
		table: document.querySelector('table.compare-table').innerText,
		from: document.querySelector('.compare-groups').innerText})`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(cmp.Table, "ops/s") || !strings.Contains(cmp.Table, "put p99") || !strings.Contains(cmp.From, "5 samples") ||
		!strings.Contains(cmp.From, "sync: always → none") {
		t.Errorf("the compare page shows %q / %q, want ops/s and put p99 rows for two groups of 5 and what changed", cmp.Table, cmp.From)
	}
	shot(t, ctx, "", "compare.png")

	// On /runs, the second group's median row offers the same comparison,
	// and it opens.
	wait("opening /runs", chromedp.Navigate(ts.URL+"/runs"), chromedp.WaitVisible(chromedp.CSS("table.runs-table")))
	offered, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('tr.median-row a[href^="/compare"]').length`))
	if offered == 0 {
		t.Errorf("no median row of /runs offers a compare page, though the second group has runs before its change")
	} else {
		wait("opening a median row's compare page",
			chromedp.Click(chromedp.CSS(`tr.median-row a[href^="/compare"]`)),
			chromedp.WaitVisible(chromedp.CSS("table.compare-table")))
	}

	// A phone in dark mode reads the compare page without sideways scrolling of the page.
	if err := chromedp.Do(ctx,
		chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile, chromedp.EmulateScale(2)),
		chromedp.Evaluate[chromedp.Void](`localStorage.setItem('kvlab:theme', 'dark')`),
		chromedp.Reload(),
		chromedp.WaitVisible(chromedp.CSS("table.compare-table")),
	); err != nil {
		t.Fatal(err)
	}
	if theme, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.documentElement.dataset.theme`)); theme != "dark" {
		t.Errorf("the compare page's theme is %q, want dark", theme)
	}
	wide, _ := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.documentElement.scrollWidth > window.innerWidth + 1`))
	if wide {
		t.Errorf("the compare page is wider than a 390 px phone")
	}
	shot(t, ctx, "", "compare-phone.png")
	watch.Check(t, "the archive pages")
}
