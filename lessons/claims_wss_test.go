package lessons_test

import (
	"strings"
	"testing"
)

// Lesson 8, "Data larger than memory": with the store's pages dropped,
// device reads per Get grow with the working set, to a little under 1
// on the largest; the median Get moves from a memory copy to a device
// read, and the quizzes' answers are the ones computed independently.
// Timings as the median of three runs if the first disagrees.
func TestDataLargerThanMemory(t *testing.T) {
	l := lessonByPrefix(t, "08-")
	sec := section(t, l, "Data larger than memory")
	for _, want := range []string{"working set", "hit ratio", "-cache cold", "device reads per Get", "p50", "p99"} {
		if !strings.Contains(sec, want) {
			t.Errorf("the section does not mention %q", want)
		}
	}
	rs := cellResults(t, "08-", "wss")
	if len(rs) != 3 {
		t.Fatalf("wss cell: %d results, want 3", len(rs))
	}
	first, _ := rs[0].(map[string]any)
	if c, _ := first["cache"].(map[string]any); c == nil || c["unavailable"] != nil {
		t.Skipf("eviction is not available here: %v", first["cache"])
	}
	if dev, _ := first["device_io"].(map[string]any); dev == nil || dev["unavailable"] != nil {
		t.Skip("the device's counters are not available here")
	}
	for _, id := range []string{"wss-reads-per-get", "wss-p50-ratio"} {
		if err := compareIndependently(quizByID(t, l, id), rs); err != nil {
			t.Error(err)
		}
	}
	// Margins below 1 when the relations hold: the largest working set
	// makes at least 3x the reads per Get of the smallest, and between
	// half a read and 1.2 reads per Get; its median Get at least 3x the
	// smallest's.
	margins := func(rs []any) []float64 {
		small, large := num(t, rs[0], "amplification.read"), num(t, rs[2], "amplification.read")
		return []float64{
			3 * small / max(large, 1e-9),
			max(0.5/max(large, 1e-9), large/1.2),
			3 * num(t, rs[0], "latency.get.p50_ns") / num(t, rs[2], "latency.get.p50_ns"),
		}
	}
	m := medianOfRuns(t, "08-", "wss", margins, func(v float64) bool { return v < 1 })
	if m[0] >= 1 {
		t.Errorf("reads per Get on the largest working set under 3x the smallest's (margin %.2f); the section says they grow with it", m[0])
	}
	if m[1] >= 1 {
		t.Errorf("reads per Get on the largest working set outside 0.5-1.2 (margin %.2f); the section says a little under 1", m[1])
	}
	if m[2] >= 1 {
		t.Errorf("the largest working set's median Get under 3x the smallest's (margin %.2f); the section says it moves to a device read", m[2])
	}
}
