package harness

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// TestReopenWorkload: -workload reopen on kv reports one open and close of
// a store whose files were dropped from the page cache (cache.mode cold),
// the index's bytes per key (the 16-byte key included: more than 16, at
// most 64) and the floor of that open, with open_vs_floor their ratio;
// the table says what was measured. An engine without files of its own
// is refused. (Pebble's reopen, without kv's figures, runs in make bench:
// the peers are not registered in this package's tests.)
func TestReopenWorkload(t *testing.T) {
	raw, err := Exec(context.Background(), "bench -engine kv -sync none -workload reopen -keys 30000 -repeat 2 -format json", Env{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	var rs []*BenchResult
	if err := json.Unmarshal(raw, &rs); err != nil {
		t.Fatal(err)
	}
	if len(rs) != 2 {
		t.Fatalf("got %d results, want 2", len(rs))
	}
	for _, r := range rs {
		if r.Workload != "reopen" || r.OpenSeconds <= 0 || r.CloseSeconds <= 0 || r.Cache == nil || r.Cache.Mode != "cold" {
			t.Errorf("%s: open %v s, close %v s, cache %+v; want both > 0 and a cold cache", r.Engine, r.OpenSeconds, r.CloseSeconds, r.Cache)
		}
	}
	kv := rs[0]
	if kv.IndexBytesPerKey <= 16 || kv.IndexBytesPerKey > 64 {
		t.Errorf("kv: index_bytes_per_key %.1f, want more than the 16-byte key and at most 64", kv.IndexBytesPerKey)
	}
	f := kv.OpenFloor
	if f == nil || f.FloorSeconds <= 0 || f.HintBytes < 30000*(19+16) || math.Abs(f.FloorSeconds-f.ReadSeconds-f.BuildSeconds) > 1e-9 ||
		math.Abs(f.OpenVsFloor-kv.OpenSeconds/f.FloorSeconds) > 1e-9 {
		t.Errorf("kv: open_floor %+v (open %v s), want floor = read + build > 0, every hint entry read, open_vs_floor = open / floor", f, kv.OpenSeconds)
	}
	if line := reopenLine(kv); !strings.Contains(line, "open = ") || !strings.Contains(line, "bytes per key") {
		t.Errorf("kv's table line %q: want the floor ratio and the bytes per key", line)
	}
	if s := reopenMedians(rs); strings.Contains(s, "\n") || !strings.Contains(s, "reopen kv (median of 2)") {
		t.Errorf("the medians %q: want one line for kv's two runs", s)
	}

	_, err = Exec(context.Background(), "bench -engine null -workload reopen", Env{Dir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "allowed: kv, bbolt, pebble, sqlite") {
		t.Errorf("reopen on null: got %v, want an error naming the engines it applies to", err)
	}
}
