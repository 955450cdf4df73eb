package wasmtest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"kvlab/wasm/grader"
)

// TestBrowserCrashTimeline submits a durable-ack store that acknowledges
// before its fdatasync and reads what the page draws under the results:
// the timeline of the shrunk failing case (its operations, the power cut,
// what the cut kept) and the line of the code that issued the write whose
// promise broke, highlighted, legible in the light and the dark theme;
// the line's button selects it in the editor.
func TestBrowserCrashTimeline(t *testing.T) {
	ctx := browser(t)
	url := serveLesson(t, staticDir(t, true), crashLesson)
	if err := chromedp.Do(ctx, chromedp.Navigate(url), chromedp.WaitVisible(chromedp.CSS(exAck+` .ex-editor`))); err != nil {
		t.Fatalf("loading the exercise: %v", err)
	}
	raiseLimits(t, ctx, slowLimit)
	w := crashWrongs[0] // durable-ack without its fdatasync
	src := strings.Replace(solution(t, w.exercise), w.old, w.new, 1) + wrongSeed
	native := grader.Run(w.exercise, src)
	var tl *grader.Timeline
	row := 0
	for i, c := range native.Cases {
		if !c.Pass && c.Timeline != nil {
			tl, row = c.Timeline, i+1
			break
		}
	}
	if tl == nil || tl.Line == 0 {
		t.Fatalf("natively, no failing row with a timeline and a line: %+v", native.Cases)
	}
	line := strings.Split(src, "\n")[tl.Line-1]
	if !strings.Contains(line, "s.log.Write(encode(key, value))") {
		t.Fatalf("natively, line %d is %q, want the write of the record", tl.Line, line)
	}

	setCode(t, ctx, exAck, src)
	if state, _ := runAndWait(t, ctx, exAck, 60*time.Second); state != "failed" {
		t.Fatalf("state %q, want failed", state)
	}
	box := fmt.Sprintf(`%s .ex-timeline[data-row="%d"]`, exAck, row)
	type page struct {
		Blame    string   `json:"blame"`
		Mark     string   `json:"mark"`
		Steps    []string `json:"steps"`
		Cut      int      `json:"cut"`
		Blamed   string   `json:"blamed"`
		Contrast float64  `json:"contrast"`
	}
	read := `(() => {
		const box = document.querySelector('` + box + `');
		if (!box) return null;
		const mark = box.querySelector('.ex-blame-line');
		const lum = (c) => {
			const v = c.match(/[\d.]+/g).slice(0, 3).map((x) => { x = x / 255; return x <= 0.03928 ? x / 12.92 : ((x + 0.055) / 1.055) ** 2.4; });
			return 0.2126 * v[0] + 0.7152 * v[1] + 0.0722 * v[2];
		};
		// The mark's background over the page's: a translucent one is drawn on the box's.
		const cs = getComputedStyle(mark), fg = lum(cs.color);
		const bgc = cs.backgroundColor.startsWith('rgba(0, 0, 0, 0)') ? getComputedStyle(box).backgroundColor : cs.backgroundColor;
		const bg = lum(bgc);
		const steps = [...box.querySelectorAll('.ex-step')];
		return {
			blame: box.querySelector('.ex-blame') ? box.querySelector('.ex-blame').textContent : '',
			mark: mark ? mark.textContent : '',
			steps: steps.map((s) => s.className + ' | ' + s.textContent),
			cut: steps.findIndex((s) => s.classList.contains('ex-step-cut')),
			blamed: (box.querySelector('.ex-blame-step') || { textContent: '' }).textContent,
			contrast: (Math.max(fg, bg) + 0.05) / (Math.min(fg, bg) + 0.05),
		};
	})()`
	for _, theme := range []string{"light", "dark"} {
		if _, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.documentElement.dataset.theme = '`+theme+`'`)); err != nil {
			t.Fatal(err)
		}
		got, err := chromedp.Run(ctx, chromedp.Evaluate[*page](read))
		if err != nil || got == nil {
			t.Fatalf("%s: no timeline for row %d (%v)", theme, row, err)
		}
		if !strings.Contains(got.Mark, line) || !strings.HasPrefix(strings.TrimSpace(got.Mark), fmt.Sprint(tl.Line)) {
			t.Errorf("%s: highlighted line %q, want line %d, %q", theme, got.Mark, tl.Line, line)
		}
		if !strings.Contains(got.Blame, tl.BlameOp) || !strings.Contains(got.Blame, fmt.Sprintf("line %d", tl.Line)) {
			t.Errorf("%s: blame %q, want operation %q and line %d", theme, got.Blame, tl.BlameOp, tl.Line)
		}
		if got.Cut < 0 || len(got.Steps) != len(tl.Steps) {
			t.Errorf("%s: %d steps with the cut at %d, want the %d steps of the timeline: %q", theme, len(got.Steps), got.Cut, len(tl.Steps), got.Steps)
		}
		if !strings.Contains(got.Blamed, tl.BlameOp) || !strings.Contains(got.Blamed, "broke its promise") {
			t.Errorf("%s: blamed step %q, want %q marked", theme, got.Blamed, tl.BlameOp)
		}
		if got.Contrast < 4.5 {
			t.Errorf("%s: the highlighted line's text has a contrast of %.2f with its background, want at least 4.5", theme, got.Contrast)
		}
		if dir := os.Getenv("KVLAB_SHOTS"); dir != "" {
			png, _ := chromedp.Run(ctx, chromedp.Screenshot(chromedp.CSS(box)))
			os.WriteFile(filepath.Join(dir, "timeline-"+theme+".png"), png, 0o644)
		}
		t.Logf("%s: %d steps, highlighted %q, contrast %.1f", theme, len(got.Steps), got.Mark, got.Contrast)
	}
	// The line's button selects it in the editor.
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(box+` .ex-blame .ex-line-link`))); err != nil {
		t.Fatal(err)
	}
	sel, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(() => { const e = document.querySelector('`+exAck+` .ex-editor'); return e.value.slice(e.selectionStart, e.selectionEnd); })()`))
	if err != nil {
		t.Fatal(err)
	}
	if sel != line {
		t.Errorf("the line button selected %q, want %q", sel, line)
	}
}
