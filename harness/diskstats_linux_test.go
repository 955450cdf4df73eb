package harness

import (
	"os"
	"path/filepath"
	"testing"
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
