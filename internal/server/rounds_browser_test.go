package server

import (
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// Repeat 5× says which round is running: the cell's state line goes
// "round 1 of 5 · running line 1 of 1" to "round 5 of 5 · …", from the
// server's started messages. A line of several runs of its own
// (-repeat 3) says which run is going, "run 2 of 3", from its progress,
// not "running line 1 of 1" for all of them.
func TestBrowserRepeatSaysTheRound(t *testing.T) {
	ctx := browser(t, 1280, 900)
	ts := startServer(t, newServer(t, nil))
	if err := chromedp.Do(ctx,
		chromedp.Navigate(ts.URL+"/lessons/01-fixture"),
		chromedp.WaitVisible(chromedp.CSS("#cell-always-run .repeat")),
	); err != nil {
		t.Fatal(err)
	}
	// Every text the state line shows, recorded as it changes.
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => {
		const cell = document.querySelector('#cell-always-run');
		cell.querySelector('.cell-src').value = 'bench -engine null -ops 2000';
		window.states = [];
		new MutationObserver(() => window.states.push(cell.querySelector('.cell-state').textContent))
			.observe(cell.querySelector('.cell-state'), {childList: true, characterData: true, subtree: true});
		return true;
	})()`)); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS("#cell-always-run .repeat")),
		chromedp.WaitVisible(chromedp.CSS("#cell-always-run.is-done")),
	); err != nil {
		t.Fatalf("Repeat 5×: %v", err)
	}
	states, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`window.states`))
	if err != nil {
		t.Fatal(err)
	}
	var rounds []string
	for _, s := range states {
		if strings.HasPrefix(s, "round ") && !slices.Contains(rounds, s) {
			rounds = append(rounds, s)
		}
	}
	want := []string{"round 1 of 5 · running line 1 of 1", "round 2 of 5 · running line 1 of 1", "round 3 of 5 · running line 1 of 1", "round 4 of 5 · running line 1 of 1", "round 5 of 5 · running line 1 of 1"}
	if !slices.Equal(rounds, want) {
		t.Errorf("the state line said %q; want each round in turn, %q", states, want)
	}
}

func TestBrowserRepeatLineSaysTheRun(t *testing.T) {
	ctx := browser(t, 1280, 900)
	ts := startServer(t, newServer(t, nil))
	if err := chromedp.Do(ctx,
		chromedp.Navigate(ts.URL+"/lessons/01-fixture"),
		chromedp.WaitVisible(chromedp.CSS("#cell-always-run .run")),
	); err != nil {
		t.Fatal(err)
	}
	// Long enough runs that each sends progress (about once a second):
	// paced, because a closed-loop null run on a quiet machine reaches the
	// run's byte cap before its first second.
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => {
		const cell = document.querySelector('#cell-always-run');
		cell.querySelector('.cell-src').value = 'bench -engine null -rate 2000 -duration 1500ms -repeat 3';
		window.states = [];
		new MutationObserver(() => window.states.push(cell.querySelector('.cell-state').textContent))
			.observe(cell.querySelector('.cell-state'), {childList: true, characterData: true, subtree: true});
		return true;
	})()`)); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS("#cell-always-run .run")),
		chromedp.WaitVisible(chromedp.CSS("#cell-always-run.is-done")),
	); err != nil {
		t.Fatalf("running a -repeat 3 line: %v", err)
	}
	states, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`window.states`))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"running line 1 of 1 · run 1 of 3", "running line 1 of 1 · run 2 of 3", "running line 1 of 1 · run 3 of 3"} {
		if !slices.Contains(states, want) {
			t.Errorf("the state line said %q; want %q among them", states, want)
		}
	}
}
