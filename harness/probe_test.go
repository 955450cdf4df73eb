package harness

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"kvlab/engine"
)

func TestCostOfSummarizesSamples(t *testing.T) {
	c := costOf([]int64{400, 100, 300, 200}, time.Millisecond)
	if c.Iterations != 4 || c.MeanNs != 250 || c.P50Ns != 200 || c.P99Ns != 400 || c.MaxNs != 400 || c.OpsPerSec != 4000 {
		t.Errorf("got %+v, want 4 iterations, mean 250, p50 200, p99 400, max 400, 4000 ops/s", c)
	}
	if c := costOf(nil, time.Second); c.Iterations != 0 || c.OpsPerSec != 0 {
		t.Errorf("empty: got %+v", c)
	}
}

func TestProbeDerivesWriteAndFdatasyncCosts(t *testing.T) {
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
	if p.WriteFdatasyncOverwrite.Iterations != 30 {
		t.Errorf("overwrite iterations %d, want 30", p.WriteFdatasyncOverwrite.Iterations)
	}
	if want := max(p.WriteFdatasyncOverwrite.MeanNs-p.Write.MeanNs, 0); p.FdatasyncOverwriteNs != want {
		t.Errorf("fdatasync_overwrite_ns %v, want %v", p.FdatasyncOverwriteNs, want)
	}
	if p.SyncCall != engine.SyncCall || p.SyncCall == "" {
		t.Errorf("sync_call %q, want the engine's %q", p.SyncCall, engine.SyncCall)
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

func TestParseLoadAvgReadsOneMinuteLoad(t *testing.T) {
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

// flushCost's loop times the whole commit: the write of the batch's
// bytes and the fdatasync after it (a write after a flush is not the
// cheap write the Puts make, so T_write does not hold it).
func TestTimeFlushesTimesTheCommit(t *testing.T) {
	d := &fakeDisk{writeNs: 5000, syncNs: 10}
	c, err := timeFlushes(context.Background(), d, func() time.Duration { return d.now }, 0, nil, make([]byte, 1000), 7, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(5000 + 1000*10); c.Iterations != 7 || c.MeanNs != float64(want) || c.MaxNs != want {
		t.Errorf("got %d commits, mean %v, max %d; want 7, each %d (a 5 µs write and 1000 bytes flushed at 10 ns)", c.Iterations, c.MeanNs, c.MaxNs, want)
	}
	// A commit larger than the write buffer: the whole buffers went to
	// the OS between Puts (T_put's cost), untimed; the commit's own write
	// and the flush of every byte are timed.
	d = &fakeDisk{writeNs: 5000, syncNs: 10}
	c, err = timeFlushes(context.Background(), d, func() time.Duration { return d.now }, 0, make([]byte, 3000), make([]byte, 1000), 7, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(5000 + 4000*10); c.Iterations != 7 || c.MeanNs != float64(want) {
		t.Errorf("with 3000 bytes written before: got %d commits, mean %v; want 7, each %d (one 5 µs write timed, 4000 bytes flushed at 10 ns)", c.Iterations, c.MeanNs, want)
	}
}

// commitWrites splits a commit as the engine's write buffer does: whole
// buffers before, the rest (1 to wbuf bytes) in the commit's write.
func TestCommitWrites(t *testing.T) {
	for _, c := range []struct{ size, pre, tail int64 }{
		{0, 0, 0}, {163, 0, 163}, {65536, 0, 65536}, {65537, 65536, 1}, {1024 * 163, 131072, 1024*163 - 131072},
	} {
		if pre, tail := commitWrites(c.size, 65536); pre != c.pre || tail != c.tail {
			t.Errorf("commitWrites(%d): %d + %d, want %d + %d", c.size, pre, tail, c.pre, c.tail)
		}
	}
}

// The probe's timings each write in a scratch file of their own
// (scratchFile) and leave nothing behind; a -dir that cannot hold one is
// an error that names it.
func TestProbeScratchFilesLeaveNothing(t *testing.T) {
	ctx := context.Background()
	cfg := ProbeConfig{Iterations: 3, WriteSize: 128, MaxTime: time.Second}
	for _, tt := range []struct {
		name string
		time func(dir string) (ProbeCost, error)
	}{
		{"measureDisk", func(dir string) (ProbeCost, error) {
			_, _, wo, err := measureDisk(ctx, dir, cfg)
			return wo, err
		}},
		{"fillCost", func(dir string) (ProbeCost, error) { return fillCost(ctx, dir, 4096, 0, 3, time.Second) }},
		{"flushCost", func(dir string) (ProbeCost, error) { return flushCost(ctx, dir, 4096, 0, 3, time.Second) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			c, err := tt.time(dir)
			if err != nil || c.Iterations != 3 {
				t.Fatalf("got %+v, %v; want 3 timed iterations", c, err)
			}
			if left, _ := os.ReadDir(dir); len(left) != 0 {
				t.Errorf("left %d entries in -dir, want none (first: %s)", len(left), left[0].Name())
			}
			missing := filepath.Join(dir, "missing")
			if _, err := tt.time(missing); err == nil || !strings.Contains(err.Error(), "-dir "+missing) {
				t.Errorf("in a missing -dir: got %v, want an error naming it", err)
			}
		})
	}
}
