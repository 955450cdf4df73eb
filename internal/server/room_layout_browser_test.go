package server

import (
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// overlapJS reports, as text, every pair of the poll's chart texts whose
// boxes overlap, and every line of the poll box's foot (the disk's
// answer, the measuring note) that lies under a fixed element of the
// page (the bar, the key hints); "" when there is none.
const overlapJS = `(() => {
	const out = [];
	const hit = (a, b) => a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
	const box = document.querySelector('#quiz-count .room-poll');
	if (!box) return 'no poll box';
	const texts = [...box.querySelectorAll('.pollchart text')].filter((t) => t.textContent.trim() !== '');
	for (let i = 0; i < texts.length; i++) for (let j = i + 1; j < texts.length; j++) {
		const a = texts[i].getBoundingClientRect(), b = texts[j].getBoundingClientRect();
		if (a.width && b.width && hit(a, b)) out.push('"' + texts[i].textContent + '" overlaps "' + texts[j].textContent + '"');
	}
	const fixed = [...document.querySelectorAll('body *')].filter((e) => { const p = getComputedStyle(e).position; return (p === 'fixed' || p === 'sticky') && e.offsetParent !== null || (p === 'fixed' && e.getBoundingClientRect().height > 0); })
		.filter((e) => !e.closest('.room-poll') && getComputedStyle(e).visibility !== 'hidden' && e.getBoundingClientRect().height > 0 && !e.hidden);
	for (const line of box.querySelectorAll('.poll-verdict, .poll-note')) {
		const r = line.getBoundingClientRect();
		if (r.bottom > innerHeight + 1 || r.top < -1) { out.push('"' + line.textContent + '" is outside the window (' + Math.round(r.top) + '..' + Math.round(r.bottom) + ' of ' + innerHeight + ')'); continue; }
		for (const f of fixed) if (hit(r, f.getBoundingClientRect())) out.push('"' + line.textContent + '" is under the fixed ' + f.className);
	}
	return out.join('; ');
})()`

// On the projector (1280×720 and 1920×1080) the poll's conclusion is
// brought above the fixed key hints, and no label of its histogram
// overlaps another; on a follower's 390 px phone the prediction box
// shows its whole placeholder.
func TestBrowserRoomProjectorLayout(t *testing.T) {
	const token = "room-layout-token"
	root := browser(t, 1280, 720)
	a := startServer(t, newServer(t, func(c *Config) { c.Token = token }))
	pres, pw := roomTab(t, root, a.URL)
	code := startRoom(t, pres, a.URL, token)
	if err := chromedp.Do(pres, chromedp.EmulateViewport(1280, 720)); err != nil {
		t.Fatal(err)
	}
	f, fw := roomTab(t, root, a.URL)
	joinRoom(t, f, a.URL, code, true)
	if err := chromedp.Do(pres, chromedp.KeyEvent(kb.ArrowRight)); err != nil {
		t.Fatal(err)
	}
	roomWait(t, pres, "presenter", `document.querySelector('.room-section.current #cell-always-run') !== null`, `document.getElementById('room-where').textContent`)
	if err := chromedp.Do(pres, chromedp.KeyEvent("p"), chromedp.WaitVisible(chromedp.CSS(`#quiz-count .room-poll .poll-measure`))); err != nil {
		t.Fatalf("opening a poll with p: %v", err)
	}

	// The follower's prediction box holds its placeholder whole.
	roomWait(t, f, "follower", `document.querySelector('#quiz-count .poll-input') !== null`, `document.querySelector('#quiz-count').textContent`)
	cut, err := chromedp.Run(f, chromedp.Evaluate[string](`(() => {
		const i = document.querySelector('#quiz-count .poll-input'), cs = getComputedStyle(i);
		const c = document.createElement('canvas').getContext('2d');
		c.font = cs.fontSize + ' ' + cs.fontFamily;
		const need = c.measureText(i.placeholder).width, room = i.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight);
		return need > room ? 'the placeholder "' + i.placeholder + '" needs ' + need.toFixed(0) + ' px, the box has ' + room.toFixed(0) : '';
	})()`))
	if err != nil || cut != "" {
		t.Errorf("follower's prediction box on a 390 px phone: %s %v", cut, err)
	}
	if err := chromedp.Do(f,
		chromedp.SendKeys(chromedp.CSS(`#quiz-count .poll-input`), "450"),
		chromedp.Click(chromedp.CSS(`#quiz-count .poll-form button[type=submit]`)),
	); err != nil {
		t.Fatalf("follower predicting: %v", err)
	}
	roomWait(t, pres, "presenter", `document.querySelector('#quiz-count .poll-count').textContent === '1'`, `document.querySelector('#quiz-count .room-poll').textContent`)

	// r measures; the disk's answer lands in view, above the key hints.
	if err := chromedp.Do(pres, chromedp.KeyEvent("r")); err != nil {
		t.Fatal(err)
	}
	roomWait(t, pres, "presenter", `document.querySelector('#quiz-count .poll-verdict') !== null`, `document.querySelector('#quiz-count .room-poll').textContent`)
	var problems string
	deadline := time.Now().Add(10 * time.Second) // the scroll is smooth: give it time to end
	for {
		problems, err = chromedp.Run(pres, chromedp.Evaluate[string](overlapJS))
		if err != nil {
			t.Fatal(err)
		}
		if problems == "" || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if problems != "" {
		t.Errorf("presenter at 1280×720 after the measurement: %s", problems)
	}
	// At 1920×1080, the same poll brought into view as the page does.
	if err := chromedp.Do(pres, chromedp.EmulateViewport(1920, 1080),
		chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, 0); document.querySelector('#quiz-count .poll-verdict').scrollIntoView({block: 'nearest'})`)); err != nil {
		t.Fatal(err)
	}
	if problems, _ := chromedp.Run(pres, chromedp.Evaluate[string](overlapJS)); problems != "" {
		t.Errorf("presenter at 1920×1080: %s", problems)
	}
	roomWait(t, f, "follower", `document.querySelector('#quiz-count .poll-verdict') !== null`, `document.querySelector('#quiz-count .room-poll').textContent`)
	if problems, _ := chromedp.Run(f, chromedp.Evaluate[string](`(() => { document.querySelector('#quiz-count .poll-verdict').scrollIntoView({block: 'nearest'}); return `+overlapJS+`; })()`)); problems != "" {
		t.Errorf("follower on a 390 px phone: %s", problems)
	}
	pw.Check(t, "presenter")
	fw.Check(t, fmt.Sprintf("follower %s", code))
}
