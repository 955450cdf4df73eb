package server

import (
	"os"
	"regexp"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestBrowserBoardRemove: the board page shows a remove button only in
// the presenter's browser (here: the browser that keeps the room's
// presenter secret, on a server with a token), and removing an entry
// takes it off the board; a follower's browser has no such button.
func TestBrowserBoardRemove(t *testing.T) {
	root := browser(t, 1280, 900)
	s := newServer(t, func(c *Config) { c.Token = "run-tok" })
	ts := startServer(t, s)
	code, secret := openRoomSecret(t, ts)
	bench, err := os.ReadFile("../classroom/testdata/bench.json")
	if err != nil {
		t.Fatal(err)
	}
	if st, m := post(t, ts, "POST", "/api/rooms/"+code+"/share", `{"result":`+string(bench)+`,"label":"prank"}`); st != 201 {
		t.Fatalf("share: %d %v", st, m)
	}
	board := ts.URL + "/room/" + code + "/board?measure=always_ops_per_sec"
	const shown = `document.body.dataset.points === "1"`

	follower, _ := roomTab(t, root, ts.URL)
	if err := chromedp.Do(follower, chromedp.Navigate(board)); err != nil {
		t.Fatal(err)
	}
	roomWait(t, follower, "follower", shown, `document.body.textContent`)
	if n, _ := chromedp.Run(follower, chromedp.Evaluate[int](`document.querySelectorAll('.board-remove').length`)); n != 0 {
		t.Errorf("a follower's board shows %d remove buttons, want none", n)
	}
	// Shared times read as on every other page (UTC, 2026-12-04 23:41:45),
	// not in the browser's locale ("11:44:42 PM").
	if at, _ := chromedp.Run(follower, chromedp.Evaluate[string](`document.querySelector('#board-table tbody td.minor').textContent`)); !regexp.MustCompile(`^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$`).MatchString(at) {
		t.Errorf("the board's shared time reads %q, want 2026-12-04 23:41:45", at)
	}

	pres, _ := roomTab(t, root, ts.URL)
	if err := chromedp.Do(pres,
		chromedp.Navigate(ts.URL+"/join"),
		chromedp.Evaluate[chromedp.Void](`localStorage.setItem('kvlab:presenter:`+code+`', `+jsString(secret)+`)`),
		chromedp.Navigate(board),
	); err != nil {
		t.Fatal(err)
	}
	roomWait(t, pres, "presenter", shown+` && document.querySelector('.board-remove') !== null`, `document.body.textContent`)
	// The header band spans every column, the remove buttons' too.
	if cols, _ := chromedp.Run(pres, chromedp.Evaluate[string](`(() => { const t = document.getElementById('board-table');
		const head = t.querySelector('thead tr').getBoundingClientRect(), row = t.querySelector('tbody tr').getBoundingClientRect();
		return t.querySelector('thead tr').children.length + ' ' + t.querySelector('tbody tr').children.length + ' ' + Math.round(row.right - head.right); })()`)); cols != "9 9 0" {
		t.Errorf("presenter's board: header cells, row cells and how far the row reaches past the header: %q, want \"9 9 0\"", cols)
	}
	if err := chromedp.Do(pres,
		chromedp.Evaluate[chromedp.Void](`window.confirm = () => true`),
		chromedp.Click(chromedp.CSS(".board-remove")),
	); err != nil {
		t.Fatal(err)
	}
	roomWait(t, pres, "presenter", `document.body.dataset.points === "0"`, `document.getElementById('board-status').textContent`)
	// The empty board says how points get there once.
	if n, _ := chromedp.Run(pres, chromedp.Evaluate[int](`document.querySelector('main').textContent.split('share with room').length - 1`)); n != 1 {
		t.Errorf("the empty board says \"share with room\" %d times, want once", n)
	}
	if _, b := post(t, ts, "GET", "/api/rooms/"+code+"/board?measure=always_ops_per_sec", ""); len(b["points"].([]any)) != 0 {
		t.Errorf("the board after the presenter's removal: %v, want no points", b)
	}
}
