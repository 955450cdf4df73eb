package lessons_test

import (
	"strings"
	"testing"
)

// Lesson 8, "Reads that miss memory": -cache cold evicts the store's files
// (0% resident when it worked), the device counts reads on the cold line
// and none on the warm one, the median Get barely moves, and the tail
// (p95) is where the misses are. Each relation the section states, on the
// cell's own run (timings as the median of three runs if the first
// disagrees).
func TestColdReadsMissMemory(t *testing.T) {
	l := lessonByPrefix(t, "08-")
	sec := section(t, l, "Reads that miss memory")
	for _, want := range []string{"-cache cold", "posix_fadvise", "mincore", "readahead", "median barely moves"} {
		if !strings.Contains(sec, want) {
			t.Errorf("the section does not mention %q", want)
		}
	}
	quizByID(t, l, "cold-p50")
	quizByID(t, l, "cold-p95")

	rs := cellResults(t, "08-", "cold")
	if len(rs) != 2 {
		t.Fatalf("cold cell: %d results, want 2 (warm, cold)", len(rs))
	}
	warm, cold := rs[0].(map[string]any), rs[1].(map[string]any)
	if _, ok := warm["cache"]; ok {
		t.Errorf("the warm line carries a cache object: %v", warm["cache"])
	}
	c, _ := cold["cache"].(map[string]any)
	if c == nil {
		t.Fatalf("the cold line carries no cache object")
	}
	if why, _ := c["unavailable"].(string); why != "" {
		t.Skipf("eviction is not available here: %s", why)
	}
	if res := num(t, cold, "cache.resident_after"); res > 0.05 {
		t.Errorf("cold line: %.1f%% of the store's pages still resident after eviction; the lesson says about 0%%", 100*res)
	}
	gets := num(t, cold, "ops")
	if dev, _ := cold["device_io"].(map[string]any); dev != nil && dev["unavailable"] == nil {
		// Readahead brings many records per read, but each of the
		// store's pages must come from the device once.
		if r := num(t, cold, "device_io.read_requests"); r < gets/100 {
			t.Errorf("cold line: %v device reads for %v Gets; the lesson says thousands", r, gets)
		}
		// Net of the idle baseline: another program reading the disk
		// (a build beside the test) counted 210 whole-device reads.
		reads, ok := lookup(warm, "device_io.net_read_requests")
		if !ok {
			reads = num(t, warm, "device_io.read_requests")
		}
		if reads > gets/100 {
			t.Errorf("warm line: %v device reads (net of the idle baseline) for %v Gets; the lesson says none", reads, gets)
		}
	}

	// Each relation as a margin that is below 1 when it holds: the cold
	// p50 under 2x the warm one, the cold p95 over 4x the warm one.
	margins := func(rs []any) []float64 {
		w, c := rs[0], rs[1]
		p50 := num(t, c, "latency.get.p50_ns") / num(t, w, "latency.get.p50_ns")
		p95 := num(t, c, "latency.get.p95_ns") / num(t, w, "latency.get.p95_ns")
		return []float64{p50 / 2, 4 / p95}
	}
	marginsHold(t, "08-", "cold", margins, "the median barely moves (cold p50 under 2x warm)", "the tail is where the misses are (cold p95 over 4x warm)")
}
