package lessons_test

// Lesson 8's active-benchmarking section: what the disk itself counted
// while the engines ran, checked on the disk-side cell's runs.

import (
	"math"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"kvlab/internal/server"
)

// The disk-side cell's claims, on a disk with a volatile write cache
// (where the kernel sends flushes): under always kv and pebble cost the
// disk one flush per Put and bbolt two; batch:64 one per 64 Puts; none
// next to none (bbolt syncs when its file grows: 15 fsync, fdatasync and
// ftruncate calls on bbolt.db in 8,000 Puts, counted with strace); kv's
// 64 KiB records reach the disk twice (zeros, then the record) and
// bbolt's more than that; 128-byte records cost far more than their own
// bytes (a 4 KiB page per flush).
//
// The counts are the whole device's, and other writers only ever add to
// them (at a load of 15 on this 2-core VM, shared with other builds and
// tests, bbolt's always run counted a median of 4.0 flushes per Put over
// three runs, kv's 1.3): so a claim that fails on the cell's run is
// judged on the least of three runs, the one other writers disturbed
// least. A claim that is false still fails: no other writer can take the
// engine's own flushes away.
func TestDiskSideCounts(t *testing.T) {
	rs := cellResults(t, "08-", "disk-side")
	if v, ok := lookupString(rs[0], "0.device_io.unavailable"); ok && v != "" {
		t.Skipf("no device counters here: %s", v)
	}
	if v, _ := lookupString(rs[0], "0.device_io.write_cache"); v == "write through" {
		t.Skip("a write-through disk: the kernel sends it no flushes")
	}
	disk, _ := lookupString(rs[0], "0.device_io.device")
	if n, ok := idleFlushes(disk, time.Second); ok && n > maxIdleFlushes {
		t.Skipf("the disk is shared with busy writers: %s completed %d flushes in an idle second (more than %d), which would be counted as the engines'; run this test on a quieter machine", disk, n, maxIdleFlushes)
	}
	dev := func(line int, run, field string) func([]any) float64 {
		return func(rs []any) float64 {
			path := "device_io." + field
			if run != "" {
				path = run + "." + path
			}
			return num(t, rs[line], path)
		}
	}
	bounds := []struct {
		what   string
		of     func([]any) float64
		lo, hi float64
	}{
		{"kv always: flushes per Put", dev(0, "0", "flushes_per_op"), 0.95, 1.3},
		{"bbolt always: flushes per Put", dev(0, "1", "flushes_per_op"), 1.9, 2.4},
		{"pebble always: flushes per Put", dev(0, "2", "flushes_per_op"), 0.95, 1.3},
		{"kv batch:64: flushes per 64 Puts", func(rs []any) float64 { return 64 * dev(1, "", "flushes_per_op")(rs) }, 0.95, 1.6},
		{"kv always, 64 KiB: device bytes per logical byte", dev(2, "0", "device_bytes_per_logical_byte"), 1.9, 2.5},
		{"bbolt always, 64 KiB: device bytes per logical byte", dev(2, "1", "device_bytes_per_logical_byte"), 2.5, 8},
		{"kv always, 128 B: device bytes per logical byte", dev(0, "0", "device_bytes_per_logical_byte"), 10, 1000},
		{"kv none: flushes per Put", dev(3, "0", "flushes_per_op"), 0, 0.01},
		{"bbolt none: flushes per Put", dev(3, "1", "flushes_per_op"), 0, 0.01},
		{"pebble none: flushes per Put", dev(3, "2", "flushes_per_op"), 0, 0.01},
	}
	runs := [][]any{rs}
	_, c := cellByID(t, "08-", "disk-side")
	for _, b := range bounds {
		in := func(v float64) bool { return v >= b.lo && v <= b.hi }
		least := func() float64 {
			v := math.Inf(1)
			for _, r := range runs {
				v = min(v, b.of(r))
			}
			return v
		}
		v := least()
		if !in(v) && len(runs) == 1 {
			t.Logf("%s: %.3f on the cell's run; running it twice more for the least of three", b.what, v)
			for range 2 {
				more, err := execLines(t, c.Lines, 1, server.DefaultLimits())
				if err != nil {
					t.Fatalf("cell disk-side: %v", err)
				}
				runs = append(runs, more)
			}
			v = least()
		}
		t.Logf("%s: %.3f", b.what, v)
		if !in(v) {
			t.Errorf("disk-side: %s is %.3f (the least of %d runs); the lesson's claim needs %g to %g", b.what, v, len(runs), b.lo, b.hi)
		}
	}
	// The text names where bbolt's two flushes come from.
	sec := flat(section(t, lessonByPrefix(t, "08-"), "Active benchmarking"))
	for _, want := range []string{"fdatasyncs, then writes its meta page and fdatasyncs again", "About 2: a bbolt commit writes its dirty pages and fdatasyncs"} {
		if !strings.Contains(sec, want) {
			t.Errorf("lesson 8's active-benchmarking section does not say %q", want)
		}
	}
}

// maxIdleFlushes is the most flushes other writers may make in a second
// for TestDiskSideCounts to judge the engines' counts: a quiet machine
// makes a few (the filesystem's journal commits every 5 s); this 2-core
// VM, shared with other builds and tests, made 300 a second at times.
const maxIdleFlushes = 20

// idleFlushes counts the flush requests disk (a whole-disk name in
// /proc/diskstats, e.g. "vda") completed over d while this test did
// nothing: other writers'. ok is false where they cannot be read.
func idleFlushes(disk string, d time.Duration) (n int64, ok bool) {
	read := func() (int64, bool) {
		b, err := os.ReadFile("/proc/diskstats")
		if err != nil {
			return 0, false
		}
		for _, line := range strings.Split(string(b), "\n") {
			f := strings.Fields(line)
			if len(f) >= 20 && f[2] == disk {
				v, err := strconv.ParseInt(f[19], 10, 64)
				return v, err == nil
			}
		}
		return 0, false
	}
	before, ok1 := read()
	time.Sleep(d)
	after, ok2 := read()
	return after - before, ok1 && ok2
}

// lookupString reads a string at a dotted path of a decoded result.
func lookupString(v any, path string) (string, bool) {
	cur := v
	for _, k := range strings.Split(path, ".") {
		switch c := cur.(type) {
		case []any:
			i := 0
			for _, ch := range k {
				if ch < '0' || ch > '9' {
					return "", false
				}
				i = i*10 + int(ch-'0')
			}
			if i >= len(c) {
				return "", false
			}
			cur = c[i]
		case map[string]any:
			cur = c[k]
		default:
			return "", false
		}
	}
	s, ok := cur.(string)
	return s, ok
}
