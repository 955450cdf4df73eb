package wasmtest

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	_ "kvlab/harness/mine" // registers -engine mine, which the button's lines run
	"kvlab/internal/browsertest"
)

// TestBrowserMeasureOnThisDisk presses "Measure on this disk" under the
// durable-ack editor, on a server bound to loopback: the model solution
// runs natively beside kv always and group and syncs once per Put; a
// store that never syncs shows zero; one that loops forever ends with the
// server's error, and the server answers the next run.
func TestBrowserMeasureOnThisDisk(t *testing.T) {
	ctx := browser(t)
	url := serveLesson(t, staticDir(t, true), crashLesson)
	if err := chromedp.Do(ctx, chromedp.Navigate(url),
		chromedp.WaitVisible(chromedp.CSS(exAck+` .ex-measure`))); err != nil {
		t.Fatalf("loading the exercise: %v", err)
	}
	if hidden, _ := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.querySelector('.exercise[data-exercise=atomic-replace] .ex-measure').hidden`)); !hidden {
		t.Errorf("atomic-replace shows Measure on this disk; its Save is not a store")
	}
	sol := solution(t, "durable-ack")
	putSync := "\tif err := s.log.Sync(); err != nil {\n\t\t// After a failed fdatasync Linux marks the pages clean: a retry\n\t\t// succeeds without writing them. The error must stick.\n\t\ts.err = err\n\t\treturn err\n\t}\n\ts.index[key] = value"
	putStart := "func (s *Store) Put(key, value string) error {\n"
	tests := []struct {
		name, code, state string
		want              []string
	}{
		{"the solution", sol, "done", []string{"1.00 syncs per Put on this disk (1000 for 1000 Puts: 1000 fdatasync, 0 directory fsync)",
			"mine", "mine-null", "the interpreter's own cost", "The interpreter's own cost (mine-null): ", "% of your store's ", "always", "group"}},
		{"no fdatasync", strings.Replace(sol, putSync, "\ts.index[key] = value", 1), "done", []string{"0.00 syncs per Put"}},
		{"an endless loop", strings.Replace(sol, putStart, putStart+"\tfor {\n\t}\n", 1), "error", []string{"was still running after 5s: a loop that never ends?"}},
	}
	for _, tt := range tests {
		setCode(t, ctx, exAck, tt.code)
		if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`delete document.querySelector('`+exAck+`').dataset.measure`),
			chromedp.Click(chromedp.CSS(exAck+` .ex-measure`))); err != nil {
			t.Fatal(err)
		}
		state, err := chromedp.Run(ctx, chromedp.Poll[string](`(s => s === 'running' ? null : s)(document.querySelector('`+exAck+`').dataset.measure)`,
			chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(150*time.Second)))
		if err != nil {
			t.Fatalf("%s: waiting for the measurement: %v", tt.name, err)
		}
		text, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(exAck+` .ex-measured`)))
		if state != tt.state {
			t.Errorf("%s: state %q, want %q; the page shows %q", tt.name, state, tt.state, text)
		}
		for _, w := range tt.want {
			if !strings.Contains(text, w) {
				t.Errorf("%s: the page shows %q, want it to contain %q", tt.name, text, w)
			}
		}
		if tt.name == "the solution" {
			t.Logf("browser: Measure on this disk, the solution: %s", text)
			browsertest.CheckText(t, ctx, "the measured solution")
		}
	}
}
