package server

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"kvlab/internal/browsertest"
)

// TestBrowserQuizLabelsAndOffWords: a screen reader names every quiz's
// input by its question (read from Chromium's accessibility tree, not from
// the markup), and a wrong answer's distance reads as a factor of at least
// 1 with its direction.
func TestBrowserQuizLabelsAndOffWords(t *testing.T) {
	ctx := browser(t, 1280, 900)
	ts := startServer(t, newServer(t, nil))
	if err := chromedp.Do(ctx, chromedp.Navigate(ts.URL+"/lessons/01-fixture"), chromedp.WaitVisible(chromedp.CSS("#quiz-count input"))); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ sel, name, desc string }{
		{"#quiz-count input[name=answer]", "How many puts did the first line measure?", "puts"},
		{"#quiz-tail input[name=answer]", "How many times larger than p50 is p99 in the second line?", "x"},
		{"#quiz-path fieldset", "Does the null engine’s p99 stay below one millisecond?", ""},
	} {
		name, desc, err := browsertest.AX(ctx, tt.sel)
		if err != nil || name != tt.name || desc != tt.desc {
			t.Errorf("%s in the accessibility tree: name %q, description %q (%v); want %q, %q", tt.sel, name, desc, err, tt.name, tt.desc)
		}
	}

	if err := chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS("#cell-always-run .run")),
		chromedp.WaitVisible(chromedp.CSS("#cell-always-run.is-done")),
	); err != nil {
		t.Fatalf("running the cell: %v", err)
	}
	// The first line measured 500 puts.
	for _, tt := range []struct{ answer, off string }{
		{"10", "50× too low"},
		{"1950", "3.9× too high"},
		{"520", "4% above the measured value"},
	} {
		if err := chromedp.Do(ctx,
			chromedp.Evaluate[chromedp.Void](`document.querySelector('#quiz-count .quiz-feedback').replaceChildren()`),
			chromedp.SetValue(chromedp.CSS("#quiz-count input[name=answer]"), tt.answer),
			chromedp.Click(chromedp.CSS("#quiz-count .check")),
			chromedp.WaitVisible(chromedp.CSS("#quiz-count .verdict")),
		); err != nil {
			t.Fatalf("answering %s: %v", tt.answer, err)
		}
		off, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#quiz-count .verdict tr.off")))
		if want := "off by\t" + tt.off; strings.TrimSpace(off) != want {
			t.Errorf("answer %s against 500 puts: %q, want %q", tt.answer, off, want)
		}
	}
	browsertest.CheckText(t, ctx, "the fixture lesson after three answers")
}
