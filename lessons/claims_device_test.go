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
// The counts are the whole device's raw counts, and other writers only
// ever add to them: no other writer can take an engine's own flushes or
// bytes away. So each claim is judged on the least of several runs of
// its line, the one other writers disturbed least, and a claim that
// misses on the cell's run has its line run again, up to diskSideReruns
// more times until one run meets it: at half size, shorter windows for
// other writers to leave quiet, except the none line, whose few
// flushes (bbolt's file growing) are a count per run, not per Put, and
// would double per Put in a run of half the Puts. Other writers on this
// 2-core VM are bursty: over six rounds of the first line at load 12–18
// the disk counted 0 to 700 flushes a second of theirs, changing within
// seconds, so bbolt's raw count read 2.00, 2.63, 3.00, 3.11, 4.86 and
// 2.98 flushes per Put, and no same-round figure was steadier (bbolt ÷
// kv read 1.22 to 3.47; the counts net of the idle baseline taken just
// before each run, 0 to 3.8 for kv and bbolt). Shorter runs, more of
// them, find a quiet window: the least is then the engine's own count.
// Where the idle second shows a steady writer (more than maxIdleFlushes
// a second) no run is quiet and the test skips. A false claim still
// fails: bbolt at 4 flushes per Put reads 4 or more on every run, and at
// 1 reads about 1 on any quiet run.
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
	// dev reads one line's result: a run of an -engine list (run "0",
	// "1", ...) or a single run (run "").
	dev := func(run, field string) func(any) float64 {
		return func(r any) float64 {
			path := "device_io." + field
			if run != "" {
				path = run + "." + path
			}
			return num(t, r, path)
		}
	}
	bounds := []struct {
		what   string
		line   int
		of     func(any) float64
		lo, hi float64
	}{
		{"kv always: flushes per Put", 0, dev("0", "flushes_per_op"), 0.95, 1.3},
		{"bbolt always: flushes per Put", 0, dev("1", "flushes_per_op"), 1.9, 2.4},
		{"pebble always: flushes per Put", 0, dev("2", "flushes_per_op"), 0.95, 1.3},
		{"kv batch:64: flushes per 64 Puts", 1, func(r any) float64 { return 64 * dev("", "flushes_per_op")(r) }, 0.95, 1.6},
		{"kv always, 64 KiB: device bytes per logical byte", 2, dev("0", "device_bytes_per_logical_byte"), 1.9, 2.5},
		{"bbolt always, 64 KiB: device bytes per logical byte", 2, dev("1", "device_bytes_per_logical_byte"), 2.5, 8},
		{"kv always, 128 B: device bytes per logical byte", 0, dev("0", "device_bytes_per_logical_byte"), 10, 1000},
		{"kv none: flushes per Put", noneLine, dev("0", "flushes_per_op"), 0, 0.01},
		{"bbolt none: flushes per Put", noneLine, dev("1", "flushes_per_op"), 0, 0.01},
		{"pebble none: flushes per Put", noneLine, dev("2", "flushes_per_op"), 0, 0.01},
	}
	// runs[i] holds every run of line i: the cell's, then any reruns.
	_, c := cellByID(t, "08-", "disk-side")
	runs := make([][]any, len(c.Lines))
	for i := range c.Lines {
		runs[i] = []any{rs[i]}
	}
	for _, b := range bounds {
		in := func(v float64) bool { return v >= b.lo && v <= b.hi }
		least := func() float64 {
			v := math.Inf(1)
			for _, r := range runs[b.line] {
				v = min(v, b.of(r))
			}
			return v
		}
		v := least()
		for k := 0; !in(v) && k < diskSideReruns; k++ {
			scale := 0.5
			if b.line == noneLine {
				scale = 1
			}
			t.Logf("%s: %.3f, the least of %d runs; running line %d again (size ×%g)", b.what, v, len(runs[b.line]), b.line, scale)
			more, err := execLines(t, c.Lines[b.line:b.line+1], scale, server.DefaultLimits())
			if err != nil {
				t.Fatalf("cell disk-side, line %d: %v", b.line, err)
			}
			runs[b.line] = append(runs[b.line], more[0])
			v = least()
		}
		t.Logf("%s: %.3f", b.what, v)
		if !in(v) {
			t.Errorf("disk-side: %s is %.3f (the least of %d runs); the lesson's claim needs %g to %g", b.what, v, len(runs[b.line]), b.lo, b.hi)
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

// diskSideReruns is how many more runs of a line TestDiskSideCounts makes
// when its claim misses, looking for a window other writers left quiet.
const diskSideReruns = 7

// noneLine is the disk-side cell's -sync none line.
const noneLine = 3

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
