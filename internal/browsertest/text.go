package browsertest

import (
	"context"
	"testing"

	"github.com/chromedp/chromedp"
)

// junkJS lists the text a page shows (or names to a screen reader) that
// only a bug can put there: "null", "undefined" or "NaN" as words (also
// run together, "nullnull": two missing values concatenated), and an
// HTML entity shown as its source ("&rsquo;": escaped twice). It reads
// visible text nodes, the document's title and the attributes a user or
// a screen reader meets (aria-label, title, placeholder, alt), and skips
// code (code, pre, kbd, samp, textarea) where such words are the course's
// subject: `-engine null`. In prose, "null" may name the course's null
// engine: followed by engine, row(s) or ceiling ("the null engine", "the
// null rows", "null-engine op"), and "mine-null" is an engine's name (a
// reader's store on a filesystem that keeps nothing). Each finding is
// "where: text around it".
const junkJS = `(() => {
	const bad = /\b(?:(?<!mine-)null(?![ -](?:engine|rows?|ceiling)\b)|undefined|NaN)+\b|&(?:[A-Za-z][A-Za-z0-9]*|#[0-9]+|#x[0-9A-Fa-f]+);/g;
	const code = 'code, pre, kbd, samp, textarea, script, style, template';
	const out = [];
	const look = (where, s) => {
		for (const m of s.matchAll(bad)) {
			out.push(where + ': ' + JSON.stringify(s.slice(Math.max(0, m.index - 30), m.index + m[0].length + 30)));
		}
	};
	look('title', document.title);
	const walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
	for (let n; (n = walk.nextNode());) {
		const el = n.parentElement;
		if (!el || el.closest(code) || !el.checkVisibility({visibilityProperty: true})) continue;
		look('<' + el.localName + (el.id ? '#' + el.id : '') + (el.className && typeof el.className === 'string' ? '.' + el.className.trim().split(/\s+/).join('.') : '') + '>', n.data);
	}
	for (const el of document.body.querySelectorAll('[aria-label], [title], [placeholder], [alt]')) {
		if (el.closest(code) && el.localName !== 'textarea') continue;
		for (const a of ['aria-label', 'title', 'placeholder', 'alt']) {
			if (el.hasAttribute(a)) look('<' + el.localName + ' ' + a + '>', el.getAttribute(a));
		}
	}
	return out;
})()`

// CheckText fails the test for each piece of junk text (see junkJS:
// "null", "undefined", "NaN", a raw "&rsquo;") the page in ctx shows now;
// where says which page. Run it on every page a walk visits, after the
// page has settled.
func CheckText(t testing.TB, ctx context.Context, where string) {
	t.Helper()
	found, err := junkText(ctx)
	if err != nil {
		t.Errorf("%s: reading the page's text: %v", where, err)
		return
	}
	for _, f := range found {
		t.Errorf("%s: shows %s", where, f)
	}
}

// junkText runs junkJS on the page in ctx.
func junkText(ctx context.Context) ([]string, error) {
	return chromedp.Run(ctx, chromedp.Evaluate[[]string](junkJS))
}
