package harness

import (
	"context"
	"runtime"
	"testing"
	"time"
)

func TestCostOf(t *testing.T) {
	c := costOf([]int64{400, 100, 300, 200}, time.Millisecond)
	if c.Iterations != 4 || c.MeanNs != 250 || c.P50Ns != 200 || c.P99Ns != 400 || c.MaxNs != 400 || c.OpsPerSec != 4000 {
		t.Errorf("got %+v, want 4 iterations, mean 250, p50 200, p99 400, max 400, 4000 ops/s", c)
	}
	if c := costOf(nil, time.Second); c.Iterations != 0 || c.OpsPerSec != 0 {
		t.Errorf("empty: got %+v", c)
	}
}

func TestProbe(t *testing.T) {
	p, err := Probe(context.Background(), ProbeConfig{Dir: t.TempDir(), Iterations: 30, MaxTime: time.Second, WriteSize: 64})
	if err != nil {
		t.Fatal(err)
	}
	if p.Write.Iterations != 30 || p.WriteFdatasync.Iterations != 30 {
		t.Errorf("iterations %d and %d, want 30 and 30", p.Write.Iterations, p.WriteFdatasync.Iterations)
	}
	if p.WriteNs != p.Write.MeanNs {
		t.Errorf("write_ns %v, want write.mean_ns %v", p.WriteNs, p.Write.MeanNs)
	}
	if want := max(p.WriteFdatasync.MeanNs-p.Write.MeanNs, 0); p.FdatasyncNs != want {
		t.Errorf("fdatasync_ns %v, want %v", p.FdatasyncNs, want)
	}
	if p.Cores != runtime.NumCPU() || p.Go != runtime.Version() {
		t.Errorf("cores %d go %s, want %d %s", p.Cores, p.Go, runtime.NumCPU(), runtime.Version())
	}
	if runtime.GOOS == "linux" && (p.FS == "" || p.Kernel == "" || p.RAMBytes <= 0 || p.FreeBytes <= 0) {
		t.Errorf("on Linux want fs, kernel, RAM and free space; got %q %q %d %d", p.FS, p.Kernel, p.RAMBytes, p.FreeBytes)
	}
}

func TestProbeCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Probe(ctx, ProbeConfig{Dir: t.TempDir(), Iterations: 1000}); err == nil {
		t.Error("probe with a cancelled context: got nil error")
	}
}

func TestParseLoadAvg(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want float64
	}{
		{"0.52 0.58 0.59 1/467 12345\n", 0.52},
		{"11.25 9.10 6.02 3/500 99", 11.25},
		{"", 0},
		{"garbage", 0},
		{"-1 0 0", 0},
	} {
		if got := parseLoadAvg(tc.in); got != tc.want {
			t.Errorf("parseLoadAvg(%q): got %v, want %v", tc.in, got, tc.want)
		}
	}
}

// fakeDisk is a probeFile on a fake clock: a write costs writeNs, an
// fdatasync syncNs per byte written since the last one.
type fakeDisk struct {
	now             time.Duration
	dirty           int64
	writeNs, syncNs time.Duration
}

func (d *fakeDisk) write(b []byte) error {
	d.now += d.writeNs
	d.dirty += int64(len(b))
	return nil
}

func (d *fakeDisk) fdatasync() error {
	d.now += time.Duration(d.dirty) * d.syncNs
	d.dirty = 0
	return nil
}

// Each timed write+fdatasync flushes its own write only: the writes of the
// write-only measurement before it are flushed outside the timing.
func TestProbeTimesOneWritePerFlush(t *testing.T) {
	for _, n := range []int{1, 10, 200} {
		d := &fakeDisk{writeNs: 1000, syncNs: 100}
		w, wf, err := timeDisk(context.Background(), d, func() time.Duration { return d.now },
			ProbeConfig{Iterations: n, MaxTime: time.Hour, WriteSize: 128})
		if err != nil {
			t.Fatal(err)
		}
		if w.MeanNs != 1000 || w.MaxNs != 1000 {
			t.Errorf("%d iterations: write mean %v max %d, want 1000 and 1000", n, w.MeanNs, w.MaxNs)
		}
		if want := int64(1000 + 128*100); wf.MeanNs != float64(want) || wf.MaxNs != want {
			t.Errorf("%d iterations: write+fdatasync mean %v max %d, want %d and %d", n, wf.MeanNs, wf.MaxNs, want, want)
		}
	}
}
