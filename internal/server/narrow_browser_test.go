package server

import (
	"fmt"
	"io/fs"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"kvlab/lessons"
)

// narrowLayout is what narrowLayoutJS reports of the page in the
// window: its inline code (words broken across lines), its cells
// (wrapped, scrolled, with or without a cue) and its tables.
type narrowLayout struct {
	Width  int      `json:"width"`
	Codes  int      `json:"codes"`
	Split  []string `json:"split"`
	Cells  int      `json:"cells"`
	Wrap   []string `json:"wrap"`
	Scroll int      `json:"scroll"`
	NoCue  []string `json:"nocue"`
	// Tables: how many, how many scroll inside their box, those that
	// scroll with no cue and those that run past the window; Wide
	// says the page itself is wider than the window.
	Tables      int      `json:"tables"`
	TableScroll int      `json:"tscroll"`
	TableNoCue  []string `json:"tnocue"`
	TableClip   []string `json:"tclip"`
	Wide        bool     `json:"wide"`
}

// narrowLayoutJS measures the page as narrowLayout says, two frames
// after it is laid out.
const narrowLayoutJS = `new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(() => {
	const out = {width: innerWidth, codes: 0, split: [], cells: 0, wrap: [], scroll: 0, nocue: [], tables: 0, tscroll: 0, tnocue: [], tclip: [], wide: document.documentElement.scrollWidth > innerWidth + 1};
	// A table wider than its box scrolls inside it (a lesson's own
	// table is its own box) with its right edge faded while there
	// is more; no column runs past the window.
	for (const table of document.querySelectorAll('main table')) {
		if (table.offsetParent === null) continue;
		out.tables++;
		const box = table.closest('.table-wrap') || table, name = (table.querySelector('th') || table).textContent.trim().slice(0, 40);
		if (box.scrollWidth > box.clientWidth + 1) {
			out.tscroll++;
			const cue = getComputedStyle(box).getPropertyValue('--more-right').trim();
			if (cue === '' || cue === '0px') out.tnocue.push(name);
		}
		if (box.getBoundingClientRect().right > innerWidth + 1) out.tclip.push(name);
	}
	for (const code of document.querySelectorAll('main code')) {
		if (code.closest('pre')) continue;
		out.codes++;
		// A word's characters share one line: their boxes one top.
		const walk = document.createTreeWalker(code, NodeFilter.SHOW_TEXT);
		for (let n; (n = walk.nextNode());) {
			for (const m of n.data.matchAll(/\S+/g)) {
				const r = document.createRange(); r.setStart(n, m.index); r.setEnd(n, m.index + m[0].length);
				if (new Set(Array.from(r.getClientRects()).filter((x) => x.width > 0).map((x) => Math.round(x.top))).size > 1) out.split.push(m[0] + ' (in ' + code.textContent + ')');
			}
		}
	}
	for (const src of document.querySelectorAll('.cell-src')) {
		out.cells++;
		// No soft wrap: the box is as tall as its lines, one per line.
		const cs = getComputedStyle(src);
		const lines = src.value.split('\n').length;
		const lh = parseFloat(cs.lineHeight), pad = parseFloat(cs.paddingTop) + parseFloat(cs.paddingBottom);
		if (cs.whiteSpace !== 'pre' || src.scrollHeight > pad + lh * Math.max(lines, src.rows) + lh / 2) out.wrap.push(src.value);
		if (src.scrollWidth > src.clientWidth + 1) {
			out.scroll++;
			const cue = cs.getPropertyValue('--more-right').trim();
			if (cue === '' || cue === '0px') out.nocue.push(src.value);
		}
	}
	done(out);
})))`

// On a 390 px phone no command is broken inside a word: every inline
// code of every lesson (a command such as `bench -engine kv -sync
// batch:16`, a flag such as `-value-size`, a path) wraps only between
// its words, and a lesson's cells never wrap a line: a line wider than
// the cell scrolls inside it, with its right edge faded while there is
// more to see. A lesson's table wider than the phone scrolls inside its
// box with the same fade, and no page is wider than the phone.
func TestBrowserNarrowCommandsKeepWhole(t *testing.T) {
	ctx := browser(t, 390, 844)
	ts := startServer(t, newServer(t, func(c *Config) { c.Lessons = lessons.FS }))
	mds, err := fs.Glob(lessons.FS, "*.md")
	if err != nil || len(mds) == 0 {
		t.Fatalf("no lessons (%v)", err)
	}
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile, chromedp.EmulateScale(2))); err != nil {
		t.Fatal(err)
	}
	codes, scrolled, tables, tablesScrolled := 0, 0, 0, 0
	for _, md := range mds {
		slug := strings.TrimSuffix(md, ".md")
		if err := chromedp.Do(ctx, chromedp.Navigate(ts.URL+"/lessons/"+slug), chromedp.WaitVisible(chromedp.CSS("main"))); err != nil {
			t.Fatal(err)
		}
		l, err := chromedp.Run(ctx, chromedp.Evaluate[narrowLayout](narrowLayoutJS, chromedp.EvalAwaitPromise))
		if err != nil {
			t.Fatal(err)
		}
		if l.Width != 390 {
			t.Fatalf("%s is laid out %d px wide, want 390", slug, l.Width)
		}
		codes += l.Codes
		scrolled += l.Scroll
		if len(l.Split) > 0 {
			t.Errorf("%s at 390 px: words of inline code broken across lines: %q", slug, l.Split)
		}
		if len(l.Wrap) > 0 {
			t.Errorf("%s at 390 px: cells whose lines wrap: %q", slug, l.Wrap)
		}
		if len(l.NoCue) > 0 {
			t.Errorf("%s at 390 px: cells wider than the phone with no fade at their right edge: %q", slug, l.NoCue)
		}
		tables += l.Tables
		tablesScrolled += l.TableScroll
		if len(l.TableNoCue) > 0 || len(l.TableClip) > 0 || l.Wide {
			t.Errorf("%s at 390 px: tables that scroll with no fade at their right edge %q, tables past the window's edge %q, page wider than the window %v; want none", slug, l.TableNoCue, l.TableClip, l.Wide)
		}
		if slug == "04-the-fsync-tax" {
			shot(t, ctx, "#cell-methods", "narrow-lesson4.png")
		}
	}
	if tables == 0 || tablesScrolled == 0 {
		t.Errorf("checked %d tables, %d of them wider than the phone; want some of each (the test shows nothing)", tables, tablesScrolled)
	}
	if codes < 100 || scrolled == 0 {
		t.Errorf("checked %d inline codes and %d cells wider than the phone; want 100 or more, and some cell that scrolls (the test shows nothing)", codes, scrolled)
	}
}

// Every page that is not a lesson, on a 390 px phone: the index, /runs,
// a run's page, a comparison, /join, /classes and an error page are no
// wider than the phone, their tables scroll inside their box with a cue,
// and their commands keep each word whole.
func TestBrowserEveryPageAt390(t *testing.T) {
	ctx := browser(t, 390, 844)
	s := newServer(t, nil)
	ids := addBeforeAfterRuns(t, s)
	ts := startServer(t, s)
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile, chromedp.EmulateScale(2))); err != nil {
		t.Fatal(err)
	}
	group := func(ids []int64) string {
		var s []string
		for _, id := range ids {
			s = append(s, fmt.Sprint(id))
		}
		return strings.Join(s, ",")
	}
	pages := []struct{ path, ready string }{
		{"/", ".lesson-card"},
		{"/runs", "table.runs-table"},
		{fmt.Sprintf("/runs/%d", ids[9]), ".run-result table.nums"},
		{"/compare?a=" + group(ids[:5]) + "&b=" + group(ids[5:]), "table.compare-table"},
		{"/join", "main form"},
		{"/classes", "main"},
		{"/runs/999999", ".error-page main"},
	}
	tables := 0
	for _, p := range pages {
		if err := chromedp.Do(ctx, chromedp.Navigate(ts.URL+p.path), chromedp.WaitVisible(chromedp.CSS(p.ready))); err != nil {
			t.Fatalf("%s: %v", p.path, err)
		}
		l, err := chromedp.Run(ctx, chromedp.Evaluate[narrowLayout](narrowLayoutJS, chromedp.EvalAwaitPromise))
		if err != nil {
			t.Fatal(err)
		}
		if l.Width != 390 {
			t.Fatalf("%s is laid out %d px wide, want 390", p.path, l.Width)
		}
		tables += l.Tables
		if l.Wide || len(l.Split) > 0 || len(l.TableNoCue) > 0 || len(l.TableClip) > 0 {
			t.Errorf("%s at 390 px: page wider than the window %v, words broken across lines %q, tables that scroll with no fade %q, tables past the window's edge %q; want none",
				p.path, l.Wide, l.Split, l.TableNoCue, l.TableClip)
		}
	}
	if tables < 3 {
		t.Errorf("saw %d tables on these pages, want /runs', the run's and the comparison's at least (the test shows nothing)", tables)
	}
}
