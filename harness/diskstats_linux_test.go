package harness

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Pages an earlier run left dirty are written back before the idle
// baseline (settle), not during it: 8 MiB written without a sync reach
// the device while settle runs, and a bench result says how long that
// took.
func TestSettleWritesBackTheBacklog(t *testing.T) {
	dir := t.TempDir()
	w := watchDevice(dir)
	if w.unavailable != "" {
		t.Skipf("no device under %s: %s", dir, w.unavailable)
	}
	const size = 8 << 20
	if err := os.WriteFile(filepath.Join(dir, "backlog"), make([]byte, size), 0o644); err != nil {
		t.Fatal(err)
	}
	before, _ := w.sample()
	w.settle()
	after, _ := w.sample()
	if w.unavailable != "" {
		t.Fatal(w.unavailable)
	}
	if got := (after.counters.sectorsWritten - before.counters.sectorsWritten) * 512; got < size || w.writtenBackFor <= 0 {
		t.Errorf("settle wrote %d bytes to the device in %v, want the 8 MiB backlog (%d) written back", got, w.writtenBackFor, size)
	}

	r := bench(t, "bench -engine kv -sync none -workload fillrandom -ops 50 -warmup 0 -dir "+dir)
	if d := r.DeviceIO; d == nil || d.WritebackMs == nil || d.IdleMs <= 0 {
		t.Errorf("device_io %+v: want writeback_ms beside the idle baseline", d)
	}
}

// A probe line (probe -methods grades a quiz) carries the conditions a
// bench result does: the device's counts over the probe with the idle
// baseline before it, and other programs' share of the processors then,
// so the judge can tell a busy machine's probe from a quiet one's.
func TestProbeLineCarriesItsConditions(t *testing.T) {
	if w := watchDevice(t.TempDir()); w.unavailable != "" {
		t.Skipf("no device under the test's directory: %s", w.unavailable)
	}
	p := execAs[ProbeResult](t, "probe -ops 20 -duration 50ms")
	if d := p.DeviceIO; d == nil || d.IdleMs <= 0 || d.IdleWriteBytes == nil || d.FlushRequests == nil && d.FlushMissing == "" {
		t.Errorf("device_io %+v: want the probe's counts and the idle baseline before it", d)
	}
	if c := p.CPUUse; c == nil || c.IdleMs <= 0 || c.IdleBusyFraction == nil || c.IntervalMs <= 0 {
		t.Errorf("cpu_use %+v: want the processors' time over the probe and the baseline's", c)
	}
}

// The idle baseline is taken before the store opens: a store's own
// background flushes are its cost, counted in its timed region, not
// another program's in the baseline (which would also call a quiet
// machine busy). The store here flushes without pause from Open to
// Close; another program would have to flush half as often to fail
// this, and then a baseline taken without any store says so and the
// test skips.
func TestBaselineLeavesOutTheStoresBackgroundWork(t *testing.T) {
	dir := t.TempDir()
	if w := watchDevice(dir); w.unavailable != "" {
		t.Skipf("no device under %s: %s", dir, w.unavailable)
	}
	r := bench(t, "bench -engine testbgflush -sync none -workload fillrandom -duration 300ms -dir "+dir)
	d := r.DeviceIO
	if d == nil || d.FlushRequests == nil || d.IdleFlushRequests == nil {
		t.Skipf("no flush counts: %+v", d)
	}
	idle, region := *d.IdleFlushRequests, *d.FlushRequests
	if 2*idle < region {
		return
	}
	w := watchDevice(dir)
	w.baseline(300*time.Millisecond, time.Sleep)
	if others := w.idle1.counters.flushes - w.idle0.counters.flushes; 2*others >= region {
		t.Skipf("the disk is shared with busy writers: %d flushes in 300 ms without any store", others)
	}
	t.Errorf("the baseline counted %d flushes against the timed region's %d: the store's own background flushes are in it", idle, region)
}
