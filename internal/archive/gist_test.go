package archive

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"
)

// benchJSON is a bench result with the given throughput and put p99.
func benchJSON(ops float64, p99 int64) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"kind":"bench","ops_per_sec":%g,"latency":{"put":{"count":100,"p99_ns":%d}}}`, ops, p99))
}

func TestGist(t *testing.T) {
	tests := []struct {
		name   string
		result string
		want   string
	}{
		{"bench", string(benchJSON(48213.4, 1200000)), "48213 ops/s, p99 1.20 ms"},
		{"array", "[" + string(benchJSON(100, 5000)) + "," + string(benchJSON(200, 6000)) + "]", "2 results; first: 100 ops/s, p99 5.0 µs"},
		{"model", `{"kind":"model","predicted_ops_per_sec":242424}`, "predicts 242424 ops/s"},
		{"unreadable", `{"kind":"nope"}`, "?"},
	}
	for _, tt := range tests {
		r := Run{Result: json.RawMessage(tt.result)}
		if got := r.Gist().Text; got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, got, tt.want)
		}
	}
}

// TestRepeats: the rounds of a repeated cell group line by line, also
// interleaved; another browser, another cell or a pause longer than
// MaxJobGap starts another job.
func TestRepeats(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	var runs []Run
	at := t0
	add := func(browser, cell string, line int, spec string, ops float64, p99 int64, pause time.Duration) {
		at = at.Add(pause)
		r := Run{ID: int64(len(runs) + 1), Source: "cell", Lesson: "l", Cell: cell, Browser: browser, Line: line, Own: true,
			Spec: spec, Started: at, Ended: at.Add(100 * time.Millisecond), Result: benchJSON(ops, p99)}
		at = r.Ended.Add(5 * time.Millisecond)
		runs = append(runs, r)
	}
	// 1-10: a two-line cell repeated 5 times, its lines interleaved.
	for i := range 5 {
		add("b1", "c", 0, "bench -sync always", float64(100+10*i), int64(1000*(5-i)), 0)
		add("b1", "c", 1, "bench -sync none", float64(900+i), 7000, 0)
	}
	// 11: the same line again ten seconds later: a job of its own.
	add("b1", "c", 0, "bench -sync always", 1, 1, 10*time.Second)
	// 12-13: another browser at once after it: not the same job.
	add("b2", "c", 0, "bench -sync always", 1, 1, 0)
	add("b2", "c", 0, "bench -sync always", 3, 5, 0)
	// 14: another cell of b2's right after it: not grouped with 12-13.
	add("b2", "d", 0, "bench -sync always", 1, 1, 0)

	slices.Reverse(runs) // as List returns them, newest first
	got := Repeats(runs)
	want := []struct {
		ids    []int64
		median string
	}{
		{[]int64{1, 3, 5, 7, 9}, "120 ops/s, p99 3.0 µs"},
		{[]int64{2, 4, 6, 8, 10}, "902 ops/s, p99 7.0 µs"},
		{[]int64{12, 13}, "2 ops/s, p99 3 ns"}, // an even count: the mean of the middle two
	}
	if len(got) != len(want) {
		t.Fatalf("got %d repeats %+v, want %d", len(got), got, len(want))
	}
	for i, w := range want {
		if !slices.Equal(got[i].IDs, w.ids) || got[i].Median == nil || got[i].Median.Text != w.median {
			t.Errorf("repeat %d: got ids %v median %+v, want %v median %q", i, got[i].IDs, got[i].Median, w.ids, w.median)
		}
	}
}
