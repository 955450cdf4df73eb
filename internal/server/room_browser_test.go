package server

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"kvlab/internal/browsertest"
	"kvlab/lessons"
)

// roomTab opens a page in its own browser context (its own storage: its own
// browser id) and watches it.
func roomTab(t *testing.T, parent context.Context, origin string) (context.Context, *browsertest.Watch) {
	t.Helper()
	ctx, cancel := chromedp.NewContext(parent, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("opening a tab: %v", err)
	}
	return ctx, browsertest.NewWatch(t, ctx, origin)
}

// roomWait polls a page expression until it is true; on failure it reports
// what what says the page shows.
func roomWait(t *testing.T, ctx context.Context, who, expr, what string) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(20*time.Second))); err != nil {
		got, _ := chromedp.Run(ctx, chromedp.Evaluate[string](what))
		t.Fatalf("%s: waiting for %s: %v; the page shows %q", who, expr, err, got)
	}
}

func pageText(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	got, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(document.querySelector(`+jsString(sel)+`) || {}).textContent || ''`))
	if err != nil {
		t.Fatalf("reading %s: %v", sel, err)
	}
	return got
}

func jsString(s string) string { return fmt.Sprintf("%q", s) }

// A presenter and two followers go through a class: the presenter starts
// a room from the lesson page, the followers join by code, a section
// change moves both, a run streams to both, a poll collects both
// predictions and shows each follower how far off they were, and a
// result shared from a second labserver (a student's own, another
// origin) lands on the first one's board with its conditions.
func TestBrowserRoomClass(t *testing.T) {
	const token = "room-test-token"
	root := browser(t, 1400, 1000)
	srv := newServer(t, func(c *Config) { c.Token = token })
	a := startServer(t, srv)
	b := startServer(t, newServer(t, nil))

	pres, pw := roomTab(t, root, a.URL)
	code := startRoom(t, pres, a.URL, token)
	barFitsOneLine(t, pres)
	var fs [2]context.Context
	var fw [2]*browsertest.Watch
	for i := range fs {
		fs[i], fw[i] = roomTab(t, root, a.URL)
		// The second follower reads in the dark theme, on a phone.
		joinRoom(t, fs[i], a.URL, code, i == 1)
	}

	// A section change moves both followers.
	if err := chromedp.Do(pres, chromedp.KeyEvent(kb.ArrowRight)); err != nil {
		t.Fatal(err)
	}
	for i, f := range fs {
		roomWait(t, f, fmt.Sprintf("follower %d", i+1), `document.querySelector('.room-section.current[data-section="1"] #cell-always-run') !== null`, `document.getElementById('room-where').textContent`)
	}

	// r runs the cell in view: both followers see its result stream in.
	if err := chromedp.Do(pres, chromedp.KeyEvent("r")); err != nil {
		t.Fatal(err)
	}
	const ran = `document.querySelector('#cell-always-run.is-done table.nums td.p99') !== null`
	roomWait(t, pres, "presenter", ran, `document.querySelector('#cell-always-run').textContent`)
	shot(t, pres, "#cell-always-run", "room-presenter-run.png")
	for i, f := range fs {
		roomWait(t, f, fmt.Sprintf("follower %d", i+1), ran, `document.querySelector('#cell-always-run').textContent`)
		if got := pageText(t, f, "#cell-always-run table.nums"); !strings.Contains(got, "always") || !strings.Contains(got, "none") {
			t.Errorf("follower %d: result table %q lacks the run's two lines", i+1, got)
		}
	}

	busy := pollAndMeasure(t, pres, fs)
	followerRuns(t, pres, fs[0])
	shareToBoard(t, root, b.URL, a.URL, code, fs[0])
	sharedWithoutHost(t, srv)
	pastClass(t, pres, a.URL, code, busy)
	for i, w := range fw {
		w.Check(t, fmt.Sprintf("follower %d", i+1))
	}
	pw.Check(t, "presenter")

	endClass(t, pres, fs[1], a.URL, code, token)
	// After the class its room is a 404, as it should be: the follower's
	// reload, and the presenter's page asking for the room's state; and
	// endClass's close with the run token was refused (403).
	for who, w := range map[string]*browsertest.Watch{"follower 2": fw[1], "presenter": pw} {
		for _, p := range w.Problems() {
			refusedClose := strings.Contains(p, "403") && strings.HasSuffix(p, "/api/rooms/"+code+"/close")
			if !refusedClose && (!strings.Contains(p, "404") || !strings.Contains(p, "/"+code)) {
				t.Errorf("%s, after the class: %s", who, p)
			}
		}
	}
}

// barFitsOneLine checks the presenter's bar keeps every control on one
// line on a 1366 px projector: a wrapped bar hides the top of each section.
func barFitsOneLine(t *testing.T, pres context.Context) {
	t.Helper()
	if err := chromedp.Do(pres, chromedp.EmulateViewport(1366, 900)); err != nil {
		t.Fatal(err)
	}
	spread, err := chromedp.Run(pres, chromedp.Evaluate[float64](`(() => {
		const tops = [...document.querySelectorAll('.room-bar > *')].filter((e) => e.offsetParent !== null && e.getBoundingClientRect().height > 0)
			.map((e) => { const r = e.getBoundingClientRect(); return r.top + r.height / 2; });
		return Math.max(...tops) - Math.min(...tops);
	})()`))
	if err != nil {
		t.Fatal(err)
	}
	if spread > 8 {
		t.Errorf("presenter bar at 1366 px: its controls' middles lie %.0f px apart, want one line", spread)
	}
	over, err := chromedp.Run(pres, chromedp.Evaluate[float64](`(() => { const b = document.querySelector('.room-bar'); return b.scrollWidth - b.clientWidth; })()`))
	if err != nil || over > 0 {
		t.Errorf("presenter bar at 1366 px: %v px wider than the window (%v), want every control visible", over, err)
	}
}

// startRoom starts a room on the fixture lesson from its page, as the
// token holder, and returns the room's code from the presenter's page.
func startRoom(t *testing.T, pres context.Context, origin, token string) string {
	t.Helper()
	return startRoomOn(t, pres, origin, token, "01-fixture")
}

// startRoomOn starts a room on the lesson slug, as startRoom does.
func startRoomOn(t *testing.T, pres context.Context, origin, token, slug string) string {
	t.Helper()
	if err := chromedp.Do(pres,
		chromedp.Navigate(origin+"/join"),
		chromedp.Evaluate[chromedp.Void](`localStorage.setItem('kvlab:token', `+jsString(token)+`)`),
		chromedp.Navigate(origin+"/lessons/"+slug),
		chromedp.WaitVisible(chromedp.CSS(".start-room")),
		chromedp.Click(chromedp.CSS(".start-room")),
		chromedp.WaitVisible(chromedp.CSS(`.room-present .room-section.current[data-section="0"]`)),
	); err != nil {
		t.Fatalf("starting a room from the lesson page: %v", err)
	}
	code, err := chromedp.Run(pres, chromedp.Evaluate[string](`document.body.dataset.code`))
	if err != nil || len(code) != 11 {
		t.Fatalf("got room code %q (%v), want XXXXX-XXXXX", code, err)
	}
	// q shows the join panel with the code and the QR code; Esc closes it.
	if err := chromedp.Do(pres, chromedp.KeyEvent("q"), chromedp.WaitVisible(chromedp.CSS("#join-panel .join-qr"))); err != nil {
		t.Fatalf("join panel: %v", err)
	}
	if got := pageText(t, pres, "#join-panel"); !strings.Contains(got, code) || !strings.Contains(got, origin+"/room/"+code) {
		t.Errorf("join panel says %q, want the code %s and its URL", got, code)
	}
	loaded, _ := chromedp.Run(pres, chromedp.Evaluate[bool](`document.querySelector('#join-panel .join-qr').naturalWidth > 0`))
	if !loaded {
		t.Errorf("the join panel's QR code did not load")
	}
	// The room is served at a loopback address: the panel says students'
	// devices cannot open it and how to serve on the network, in view
	// beside the QR code.
	local, err := chromedp.Run(pres, chromedp.Evaluate[string](`(() => {
		const n = document.querySelector('#join-panel .join-local');
		if (!n) return 'no word that the address is this machine\'s';
		const r = n.getBoundingClientRect(), q = document.querySelector('#join-panel .join-qr').getBoundingClientRect();
		if (!r.height || r.bottom > innerHeight + 1 || r.top < -1) return 'the note lies outside the window (' + Math.round(r.top) + '..' + Math.round(r.bottom) + ' of ' + innerHeight + ')';
		if (r.left < q.right && q.left < r.right && r.top < q.bottom && q.top < r.bottom) return 'the note overlaps the QR code';
		return n.textContent;
	})()`))
	if err != nil || !strings.Contains(local, "Students' devices cannot open this address") || !strings.Contains(local, "-addr 0.0.0.0:8080") {
		t.Errorf("join panel of a loopback room: %s (%v); want a visible note that students' devices cannot open it, with the -addr to serve on the network", local, err)
	}
	shot(t, pres, "", "room-join-panel.png")
	if err := chromedp.Do(pres, chromedp.KeyEvent(kb.Escape), chromedp.WaitNotVisible(chromedp.CSS("#join-panel"))); err != nil {
		t.Fatalf("Esc did not close the join panel: %v", err)
	}
	return code
}

// joinRoom joins as a follower through the join form, typing the code
// as a student might (lower case, no dash).
func joinRoom(t *testing.T, f context.Context, origin, code string, dark bool) {
	t.Helper()
	typed := strings.ToLower(strings.ReplaceAll(code, "-", ""))
	theme := "light"
	if dark {
		theme = "dark"
		// ... on a phone.
		if err := chromedp.Do(f, chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile, chromedp.EmulateScale(2))); err != nil {
			t.Fatal(err)
		}
	}
	if err := chromedp.Do(f,
		chromedp.Navigate(origin+"/join"),
		chromedp.Evaluate[chromedp.Void](`localStorage.setItem('kvlab:theme', '`+theme+`')`),
		chromedp.Reload(),
		chromedp.WaitVisible(chromedp.CSS("#join-code-input")),
		chromedp.SendKeys(chromedp.CSS("#join-code-input"), typed),
		chromedp.Submit(chromedp.CSS("#join-code-input")),
		chromedp.WaitVisible(chromedp.CSS(`.room-follow .room-section.current[data-section="0"]`)),
	); err != nil {
		t.Fatalf("joining room %s: %v", code, err)
	}
	roomWait(t, f, "follower", `(document.getElementById('conn') || {}).dataset.state === 'connected'`, `document.getElementById('conn').textContent`)
	if got, _ := chromedp.Run(f, chromedp.Evaluate[string](`location.pathname`)); got != "/room/"+code {
		t.Errorf("joining took the follower to %s, want /room/%s", got, code)
	}
}

// pollAndMeasure: p opens a poll on the quiz in view, both followers
// predict, the presenter's histogram counts both, r measures, and each
// follower sees how far off their own prediction was. It returns why
// the poll's run judged no prediction, "" when the machine was quiet.
func pollAndMeasure(t *testing.T, pres context.Context, fs [2]context.Context) (busy string) {
	t.Helper()
	if err := chromedp.Do(pres, chromedp.KeyEvent("p"), chromedp.WaitVisible(chromedp.CSS(`#quiz-count .room-poll .poll-measure`))); err != nil {
		t.Fatalf("opening a poll with p: %v", err)
	}
	browsertest.CheckText(t, pres, "presenter with a poll open")
	predictions := [2]string{"1000", "100"}
	for i, f := range fs {
		who := fmt.Sprintf("follower %d", i+1)
		if err := chromedp.Do(f,
			chromedp.WaitVisible(chromedp.CSS(`#quiz-count .poll-input`)),
			chromedp.SendKeys(chromedp.CSS(`#quiz-count .poll-input`), predictions[i]),
			chromedp.Click(chromedp.CSS(`#quiz-count .poll-form button[type=submit]`)),
		); err != nil {
			t.Fatalf("%s: predicting: %v", who, err)
		}
		roomWait(t, f, who, `(document.querySelector('#quiz-count .poll-msg') || {}).textContent.includes('Your prediction: `+predictions[i]+`')`, `document.querySelector('#quiz-count .room-poll').textContent`)
	}
	roomWait(t, pres, "presenter", `document.querySelector('#quiz-count .poll-count').textContent === '2'`, `document.querySelector('#quiz-count .room-poll').textContent`)
	bars, _ := chromedp.Run(pres, chromedp.Evaluate[int](`document.querySelectorAll('#quiz-count .pollchart rect.bar').length`))
	if bars != 10 {
		t.Errorf("presenter's histogram has %d bars, want 10", bars)
	}
	// r measures the open poll from any section, as its "Measure now (r)"
	// button says: here from the next section, which has no lab cell.
	if err := chromedp.Do(pres, chromedp.KeyEvent(kb.ArrowRight)); err != nil {
		t.Fatal(err)
	}
	roomWait(t, pres, "presenter", `document.querySelector('.room-section.current[data-section="2"]') !== null && document.querySelector('.room-section.current .cell') === null`, `document.getElementById('room-where').textContent`)
	if err := chromedp.Do(pres, chromedp.KeyEvent("r")); err != nil {
		t.Fatal(err)
	}
	roomWait(t, pres, "presenter", `document.querySelector('#quiz-count .pollchart .mark.measured') !== null`, `document.getElementById('room-status').textContent + ' | ' + document.querySelector('#quiz-count .room-poll').textContent`)
	if err := chromedp.Do(pres, chromedp.KeyEvent(kb.ArrowLeft)); err != nil {
		t.Fatal(err)
	}
	for i, f := range append([]context.Context{pres}, fs[:]...) {
		roomWait(t, f, fmt.Sprintf("tab %d", i), `document.querySelector('.room-section.current[data-section="1"]') !== null`, `document.getElementById('room-where').textContent`)
	}
	// With followers counted and the socket's light on, the bar is at
	// its widest.
	barFitsOneLine(t, pres)
	shot(t, pres, "#quiz-count", "room-presenter-poll.png")
	browsertest.CheckText(t, pres, "presenter after the measurement")
	// A run on a busy machine (this one's conditions) judges no
	// prediction: the verdict then says why instead of how far off.
	busy = pollBusy(t, fs[0])
	wants := [2]string{"You said 1000 puts, the disk said 500 puts: 2× too high.", "You said 100 puts, the disk said 500 puts: 5× too low."}
	if busy != "" {
		wants = [2]string{busyWords("1000", busy), busyWords("100", busy)}
	}
	for i, f := range fs {
		who := fmt.Sprintf("follower %d", i+1)
		roomWait(t, f, who, `document.querySelector('#quiz-count .poll-verdict') !== null`, `document.querySelector('#quiz-count .room-poll').textContent`)
		if got := pageText(t, f, "#quiz-count .poll-verdict"); got != wants[i] {
			t.Errorf("%s: got verdict %q, want %q", who, got, wants[i])
		}
		browsertest.CheckText(t, f, who+" after the measurement")
		if got, _ := chromedp.Run(f, chromedp.Evaluate[int](`document.querySelectorAll('#quiz-count .pollchart .mark').length`)); got != 2 {
			t.Errorf("%s: histogram marks %d values, want 2 (measured and theirs)", who, got)
		}
	}
	shot(t, fs[0], "#quiz-count", "room-follower-poll.png")
	shot(t, fs[1], "#quiz-count", "room-follower-poll-dark-phone.png")
	if busy == "" {
		busyVerdict(t, fs[0])
	}
	return busy
}

// pollBusy is the busy reason of the room's poll on quiz count, as the
// follower's page reads the room's state.
func pollBusy(t *testing.T, f context.Context) string {
	t.Helper()
	busy, err := chromedp.Run(f, chromedp.Evaluate[string](`(async () => {
		const api = await import('/static/room/api.js');
		return (await api.getState()).polls.find((p) => p.quiz === 'count').busy || '';
	})()`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("reading the poll's busy reason: %v", err)
	}
	return busy
}

// busyWords is a follower's verdict, having said said, on a poll whose
// run was measured on a busy machine (busy says why).
func busyWords(said, busy string) string {
	return "You said " + said + " puts, the disk said 500 puts, but the machine was busy (" + busy + "): a figure that judges no prediction. Measure again when it is quiet."
}

// injectedBusy is the busy reason the room's tests give a poll measured
// on a quiet machine, to draw it as a busy machine's.
const injectedBusy = "other programs held up to 40% of the processors just before 1 of 1 runs"

// busyVerdict: the same poll, had its run's conditions said the machine
// was busy (the server's side is TestPollAnswerIsQuizEvaluate's), tells
// the follower the figure and why it judges nothing, not how far off
// they were. Run when the machine was quiet: a busy one showed it live.
func busyVerdict(t *testing.T, f context.Context) {
	t.Helper()
	got, err := chromedp.Run(f, chromedp.Evaluate[string](`(async () => {
		const m = await import('/static/room/poll.js');
		const api = await import('/static/room/api.js');
		const p = (await api.getState()).polls.find((p) => p.quiz === 'count');
		m.showFollowerPoll(document.getElementById('quiz-count'), { ...p, busy: `+jsString(injectedBusy)+` });
		return document.querySelector('#quiz-count .poll-verdict').textContent;
	})()`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("drawing the poll as measured on a busy machine: %v", err)
	}
	if want := busyWords("1000", injectedBusy); got != want {
		t.Errorf("follower 1's verdict on a busy machine: got %q, want %q", got, want)
	}
	browsertest.CheckText(t, f, "follower 1 with a busy machine's figure")
}

// shareToBoard runs the probe cell on a second labserver, shares it with
// the room through the page's "share with room", and finds it on the
// room's board with its conditions.
func shareToBoard(t *testing.T, root context.Context, student, room, code string, board context.Context) {
	t.Helper()
	s, _ := roomTab(t, root, student)
	if err := chromedp.Do(s,
		chromedp.Navigate(student+"/lessons/01-fixture"),
		chromedp.WaitVisible(chromedp.CSS("#cell-cell-2 .run")),
		chromedp.Click(chromedp.CSS("#cell-cell-2 .run")),
		chromedp.WaitVisible(chromedp.CSS("#cell-cell-2.is-done .share-room")),
		chromedp.Click(chromedp.CSS("#cell-cell-2 .share-room")),
		chromedp.WaitVisible(chromedp.CSS("#cell-cell-2 .share-url")),
		chromedp.SendKeys(chromedp.CSS("#cell-cell-2 .share-url"), room),
		chromedp.SendKeys(chromedp.CSS("#cell-cell-2 .share-code"), code),
		chromedp.Click(chromedp.CSS("#cell-cell-2 .share-room-form button[type=submit]")),
		chromedp.WaitVisible(chromedp.CSS("#cell-cell-2 .share-send")),
		browsertest.Type("#cell-cell-2 .share-label", "test laptop"),
		chromedp.Click(chromedp.CSS("#cell-cell-2 .share-send")),
	); err != nil {
		t.Fatalf("sharing from the second labserver: %v", err)
	}
	// The page registers the room with its own server, reloads, and sends.
	wctx, cancel := context.WithTimeout(s, 20*time.Second)
	defer cancel()
	if err := chromedp.Do(wctx, chromedp.WaitVisible(chromedp.CSS("#cell-cell-2 .share-out.ok, #cell-cell-2 .share-out.bad"))); err != nil {
		got, _ := chromedp.Run(s, chromedp.Evaluate[string](`(document.querySelector('#cell-cell-2 .share-panel') || document.body).textContent`))
		t.Fatalf("student: no outcome of the share: %v; the page shows %q", err, got)
	}
	if got := pageText(t, s, "#cell-cell-2 .share-out"); !strings.Contains(got, "shared with room "+code) {
		t.Fatalf("student: the share says %q, want it shared with room %s", got, code)
	}
	// A refusal is shown with the room server's own error: here, a code
	// that names no room (the origin is allowed already: no reload).
	if err := chromedp.Do(s,
		chromedp.Click(chromedp.CSS("#cell-cell-2 .share-change")),
		chromedp.WaitVisible(chromedp.CSS("#cell-cell-2 .share-code")),
		chromedp.SetValue(chromedp.CSS("#cell-cell-2 .share-code"), "ABCDE-FGHJK"),
		chromedp.Click(chromedp.CSS("#cell-cell-2 .share-room-form button[type=submit]")),
		chromedp.WaitVisible(chromedp.CSS("#cell-cell-2 .share-send")),
		chromedp.Click(chromedp.CSS("#cell-cell-2 .share-send")),
		chromedp.WaitVisible(chromedp.CSS("#cell-cell-2 .share-out.bad")),
	); err != nil {
		t.Fatalf("student: sharing with a room that does not exist: %v", err)
	}
	if got := pageText(t, s, "#cell-cell-2 .share-out"); !strings.Contains(got, "refused") || !strings.Contains(got, "no open room with code ABCDE-FGHJK") {
		t.Errorf("student: a refused share says %q, want the room server's error", got)
	}
	fs, err := chromedp.Run(s, chromedp.Evaluate[string](`JSON.parse(localStorage.getItem('kvlab:results:01-fixture:cell-2')).lines[0].result.fs`))
	if err != nil || fs == "" {
		t.Fatalf("reading the shared probe's filesystem: %q, %v", fs, err)
	}
	if err := chromedp.Do(board,
		chromedp.Navigate(room+"/room/"+code+"/board?measure=fdatasync_p50"),
		chromedp.WaitVisible(chromedp.CSS("#board-table tbody tr")),
	); err != nil {
		t.Fatalf("the board: %v", err)
	}
	if n, _ := chromedp.Run(board, chromedp.Evaluate[int](`document.querySelectorAll('#board-figure svg g.point').length`)); n != 1 {
		t.Errorf("board draws %d points, want 1", n)
	}
	row := pageText(t, board, "#board-table tbody tr")
	for _, want := range []string{fs, "test laptop"} {
		if !strings.Contains(row, want) {
			t.Errorf("board row %q lacks %q", row, want)
		}
	}
	label := pageText(t, board, "#board-figure svg g.point text.cond")
	if !strings.Contains(label, fs) || !strings.Contains(label, "rotational") {
		t.Errorf("board point labelled %q, want its filesystem %s and whether it is rotational", label, fs)
	}
	shot(t, board, "", "room-board.png")
}

// pastClass finds the class in /classes (this machine needs no token)
// and its page shows the poll with both predictions and the measured
// value, and the board's point. A poll measured on a busy machine (busy
// says why; "" when it was quiet) says so beside its figure: live when
// the machine was busy, and when it was quiet, on the same page drawn
// again with the archive's poll carrying a busy reason.
func pastClass(t *testing.T, pres context.Context, origin, code, busy string) {
	t.Helper()
	if err := chromedp.Do(pres,
		chromedp.Navigate(origin+"/classes"),
		chromedp.WaitVisible(chromedp.CSS(".classes-table tbody tr")),
	); err != nil {
		t.Fatalf("the classes: %v", err)
	}
	shot(t, pres, "", "room-classes.png")
	if err := chromedp.Do(pres,
		chromedp.Click(chromedp.CSS(".classes-table tbody tr th a")),
		chromedp.WaitVisible(chromedp.CSS(`.class-poll[data-quiz="count"] .pollchart .mark.measured`)),
		chromedp.WaitVisible(chromedp.CSS(`.class-board figure[data-measure="fdatasync_p50"] g.point`)),
	); err != nil {
		t.Fatalf("the past class: %v", err)
	}
	if got := pageText(t, pres, ".class-block"); !strings.Contains(got, code) || !strings.Contains(got, "2 predictions") || !strings.Contains(got, "measured 500 puts") {
		t.Errorf("the past class says %q, want its code %s, 2 predictions and measured 500 puts", got, code)
	}
	shot(t, pres, "", "room-past-class.png")
	head := pageText(t, pres, `.class-poll[data-quiz="count"] .poll-head`)
	if busy == "" {
		if strings.Contains(head, "busy") {
			t.Errorf("the past class's poll, measured on a quiet machine, says %q", head)
		}
		busy = injectedBusy
		var err error
		head, err = chromedp.Run(pres, chromedp.Evaluate[string](`(async () => {
			const data = document.querySelector('.class-block .class-data');
			const d = JSON.parse(data.textContent);
			d.polls.find((p) => p.quiz === 'count').busy = `+jsString(busy)+`;
			data.textContent = JSON.stringify(d);
			await import('/static/room/classes.js?busy');
			return document.querySelector('.class-poll[data-quiz="count"] .poll-head').textContent;
		})()`, chromedp.EvalAwaitPromise))
		if err != nil {
			t.Fatalf("drawing the past class with a busy machine's poll: %v", err)
		}
	}
	if want := "measured 500 puts on a busy machine (" + busy + "): it judged no prediction"; !strings.Contains(head, want) {
		t.Errorf("the past class's poll says %q, want %q", head, want)
	}
	browsertest.CheckText(t, pres, "the past class, its poll measured on a busy machine")
}

// followerRuns: a follower has no Run button until the presenter allows
// runs; then its own run comes back to its page.
func followerRuns(t *testing.T, pres, f context.Context) {
	t.Helper()
	const runVisible = `getComputedStyle(document.querySelector('#cell-always-run .run')).display !== 'none'`
	if got, _ := chromedp.Run(f, chromedp.Evaluate[bool](runVisible)); got {
		t.Fatalf("follower: a Run button shows before the presenter allowed runs")
	}
	if err := chromedp.Do(pres, chromedp.Click(chromedp.CSS("#room-allow-runs"))); err != nil {
		t.Fatal(err)
	}
	roomWait(t, f, "follower", `document.body.classList.contains('runs-allowed') && `+runVisible, `document.body.className`)
	if err := chromedp.Do(f, chromedp.Click(chromedp.CSS("#cell-always-run .run"))); err != nil {
		t.Fatal(err)
	}
	const own = `window.kvlabRoom.views.get('always-run')`
	roomWait(t, f, "follower", own+`.who === 'your run · ' && `+own+`.run.finished && document.querySelector('#cell-always-run.is-done table.nums td.p99') !== null`, `document.querySelector('#cell-always-run').textContent`)
}

// endClass: when the presenter ends the class, a follower's page says
// so, and the code then answers with a page that says the room is gone.
func endClass(t *testing.T, pres, f context.Context, origin, code, token string) {
	t.Helper()
	// The run token no longer closes a room; the secret the presenter's browser keeps does.
	if err := chromedp.Do(pres, chromedp.Evaluate[chromedp.Void](`fetch('/api/rooms/`+code+`/close', {method: 'POST', headers: {'Content-Type': 'application/json'}, body: JSON.stringify({token: `+jsString(token)+`})}).then((r) => { window.closeWithToken = r.status; })`)); err != nil {
		t.Fatal(err)
	}
	if refused, err := chromedp.Run(pres, chromedp.Poll[int](`window.closeWithToken || 0`, chromedp.WithPollingTimeout(10*time.Second))); err != nil || refused != 403 {
		t.Fatalf("closing the room with the run token: %d (%v), want 403", refused, err)
	}
	if err := chromedp.Do(pres, chromedp.Evaluate[chromedp.Void](`fetch('/api/rooms/`+code+`/close', {method: 'POST', headers: {'Content-Type': 'application/json'}, body: JSON.stringify({presenter: localStorage.getItem('kvlab:presenter:`+code+`')})})`)); err != nil {
		t.Fatal(err)
	}
	roomWait(t, f, "follower", `document.body.classList.contains('room-ended') && document.getElementById('room-status').textContent.includes('ended this class')`, `document.getElementById('room-status').textContent`)
	if err := chromedp.Do(f, chromedp.Navigate(origin+"/room/"+code), chromedp.WaitVisible(chromedp.CSS(".error-detail"))); err != nil {
		t.Fatal(err)
	}
	if got := pageText(t, f, ".error-detail"); !strings.Contains(got, "no open room with code "+code) {
		t.Errorf("an ended room's page says %q, want that no room is open with its code", got)
	}
}

// sharedWithoutHost: the room keeps the shared probe without the
// student's host name and directory (the page leaves them out, and the
// room's server removes them too).
func sharedWithoutHost(t *testing.T, s *Server) {
	t.Helper()
	rooms, err := s.arch.Rooms(context.Background(), 1)
	if err != nil || len(rooms) != 1 {
		t.Fatalf("the room in the archive: %v, %v", rooms, err)
	}
	es, err := s.arch.BoardEntries(context.Background(), rooms[0].ID)
	if err != nil || len(es) != 1 {
		t.Fatalf("the board in the archive: %d entries, %v; want 1", len(es), err)
	}
	res, err := s.arch.BoardResult(context.Background(), rooms[0].ID, es[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	var probe map[string]any
	if err := json.Unmarshal(res, &probe); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"host", "dir"} {
		if v, ok := probe[k]; ok {
			t.Errorf("the room keeps the shared probe's %s = %v", k, v)
		}
	}
	if probe["fs"] == nil || probe["kind"] != "probe" {
		t.Errorf("the shared probe lost its conditions: %v", probe)
	}
}

// A presenter's page with a wrong token says what the server said, the
// projector stays where the room is, and the token is forgotten so the
// next action asks for it again.
func TestBrowserRoomPresenterWrongToken(t *testing.T) {
	root := browser(t, 1280, 900)
	s := newServer(t, func(c *Config) { c.Token = pagesToken })
	a := startServer(t, s)
	var created struct {
		Code string `json:"code"`
	}
	if st := roomCall(t, s, "POST", "/api/rooms", map[string]string{"lesson": "01-fixture"}, &created); st != 201 {
		t.Fatalf("POST /api/rooms: got %d", st)
	}
	pres, w := roomTab(t, root, a.URL)
	// The run token is right; the room's presenter secret is not.
	if err := chromedp.Do(pres,
		chromedp.Navigate(a.URL+"/join"),
		chromedp.Evaluate[chromedp.Void](`localStorage.setItem('kvlab:token', `+jsString(pagesToken)+`); localStorage.setItem('kvlab:presenter:`+created.Code+`', 'not-the-secret')`),
		chromedp.Navigate(a.URL+"/present/"+created.Code),
		chromedp.WaitVisible(chromedp.CSS(`.room-section.current[data-section="0"]`)),
		chromedp.KeyEvent(kb.ArrowRight),
	); err != nil {
		t.Fatal(err)
	}
	roomWait(t, pres, "presenter", `!document.getElementById('room-status').hidden`, `document.body.textContent`)
	if got := pageText(t, pres, "#room-status"); !strings.Contains(got, "Moving the room") || !strings.Contains(got, "presenter secret") {
		t.Errorf("the banner says %q, want the server's refusal naming the presenter secret", got)
	}
	if got := pageText(t, pres, ".room-section.current h1"); got != "A fixture lesson" {
		t.Errorf("the projector shows %q, want section 0, where the room still is", got)
	}
	if kept, _ := chromedp.Run(pres, chromedp.Evaluate[bool](`localStorage.getItem('kvlab:presenter:`+created.Code+`') !== null`)); kept {
		t.Errorf("the refused presenter secret is still kept")
	}
	for _, p := range w.Problems() { // the refusal itself is a 403
		if !strings.Contains(p, "403") {
			t.Errorf("presenter: %s", p)
		}
	}
}

// A follower has no Run button: the follower's page of a real lesson
// never tells them to press Run or that a cell stays locked until they
// answer; it says the presenter runs it. The presenter's page keeps the
// lesson's own words, where they are true.
func TestBrowserFollowerIsNotToldToRun(t *testing.T) {
	const token = "follower-text-token"
	root := browser(t, 1280, 900)
	a := startServer(t, newServer(t, func(c *Config) {
		c.Token = token
		c.Lessons = lessons.FS
	}))
	pres, pw := roomTab(t, root, a.URL)
	code := startRoomOn(t, pres, a.URL, token, "01-mean-hides-the-tail")
	f, fw := roomTab(t, root, a.URL)
	joinRoom(t, f, a.URL, code, false)
	solo := regexp.MustCompile(`Press Run|Shift\+Enter in the cell|stays locked|[Bb]efore you run`)
	const text = `document.querySelector('main').textContent.replace(/\s+/g, ' ')`
	followerText, err := chromedp.Run(f, chromedp.Evaluate[string](text))
	if err != nil {
		t.Fatal(err)
	}
	if m := solo.FindString(followerText); m != "" {
		t.Errorf("the follower's page says %q", m)
	}
	if !strings.Contains(followerText, "The presenter runs it") {
		t.Errorf("the follower's page does not say the presenter runs the cell")
	}
	if presText, _ := chromedp.Run(pres, chromedp.Evaluate[string](text)); !solo.MatchString(presText) {
		t.Errorf("the presenter's page lost the lesson's words on pressing Run: the test shows nothing")
	}
	pw.Check(t, "presenter")
	fw.Check(t, "follower "+code)
}
