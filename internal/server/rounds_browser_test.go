package server

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
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

// A line of several runs the presenter runs in a room (-repeat 3): a
// follower's cell says which run is going, "run 2 of 3", as the lesson
// page does, not "running line 1 of 1" for all of them.
func TestBrowserFollowerSeesTheRun(t *testing.T) {
	const token = "rounds-token"
	root := browser(t, 1280, 900)
	a := startServer(t, newServer(t, func(c *Config) { c.Token = token }))
	pres, pw := roomTab(t, root, a.URL)
	code := startRoom(t, pres, a.URL, token)
	f, fw := roomTab(t, root, a.URL)
	joinRoom(t, f, a.URL, code, false)
	if err := chromedp.Do(pres, chromedp.KeyEvent(kb.ArrowRight)); err != nil {
		t.Fatal(err)
	}
	roomWait(t, f, "follower", `document.querySelector('.room-section.current #cell-always-run') !== null`, `document.getElementById('room-where').textContent`)
	// Every text the follower's state line shows, recorded as it changes.
	if _, err := chromedp.Run(f, chromedp.Evaluate[bool](`(() => {
		const st = document.querySelector('#cell-always-run .cell-state');
		window.states = [];
		new MutationObserver(() => window.states.push(st.textContent)).observe(st, {childList: true, characterData: true, subtree: true});
		return true;
	})()`)); err != nil {
		t.Fatal(err)
	}
	// Paced, so that each run sends progress (about once a second).
	if _, err := chromedp.Run(pres, chromedp.Evaluate[bool](`(document.querySelector('#cell-always-run .cell-src').value = 'bench -engine null -rate 2000 -duration 1500ms -repeat 3', true)`)); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(pres, chromedp.KeyEvent("r")); err != nil {
		t.Fatal(err)
	}
	roomWait(t, pres, "presenter", `document.querySelector('#cell-always-run').classList.contains('is-done')`, `document.querySelector('#cell-always-run .cell-state').textContent`)
	roomWait(t, f, "follower", `document.querySelector('#cell-always-run').classList.contains('is-done')`, `document.querySelector('#cell-always-run .cell-state').textContent`)
	states, err := chromedp.Run(f, chromedp.Evaluate[[]string](`window.states`))
	if err != nil {
		t.Fatal(err)
	}
	for run := 1; run <= 3; run++ {
		want := fmt.Sprintf("running line 1 of 1 · run %d of 3", run)
		if !slices.ContainsFunc(states, func(s string) bool { return strings.Contains(s, want) }) {
			t.Errorf("the follower's state line said %q; want %q among them", states, want)
		}
	}
	pw.Check(t, "presenter")
	fw.Check(t, "follower "+code)
}
