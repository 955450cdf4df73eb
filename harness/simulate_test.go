package harness

import (
	"context"
	"encoding/json"
	"os"
	"testing"
	"time"
)

// simulateDisk is harnesstest.SimulateDiskBytes, which this package's
// own tests cannot import: kv on a fresh simulated disk until restore.
func simulateDisk(flush, perMiB time.Duration) (restore func()) {
	old := SimulatedDisk.Swap(&DiskSimulation{Flush: flush, PerMiB: perMiB})
	return func() { SimulatedDisk.Store(old) }
}

// TestSimulateDiskCostsItsFlush runs kv on the simulated disk: every
// commit fdatasync takes at least the simulated flush, nothing reaches the
// real directory, and the store reads back what it wrote (the read path
// works on the in-memory files too).
func TestSimulateDiskCostsItsFlush(t *testing.T) {
	const flush = 2 * time.Millisecond
	defer simulateDisk(flush, 0)()
	dir := t.TempDir()
	for _, line := range []string{
		"bench -engine kv -sync always -workload fillrandom -ops 40 -warmup 0",
		"bench -engine kv -sync none -workload readrandom -keys 200 -ops 200 -warmup 0",
	} {
		raw, err := Exec(context.Background(), line, Env{Dir: dir})
		if err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		var r struct {
			Fsyncs      int64   `json:"fsyncs"`
			FsyncMeanNs float64 `json:"fsync_mean_ns"`
			Ops         int64   `json:"ops"`
		}
		if err := json.Unmarshal(raw, &r); err != nil {
			t.Fatal(err)
		}
		if r.Fsyncs > 0 && r.FsyncMeanNs < float64(flush) {
			t.Errorf("%s: fsync mean %v ns, want at least the simulated %v", line, r.FsyncMeanNs, flush)
		}
		if r.Ops == 0 {
			t.Errorf("%s: no ops", line)
		}
	}
	left, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 0 {
		t.Errorf("the simulated disk left %d entries in the real directory", len(left))
	}
	d := &SimulatedDisk.Load().files
	d.mu.Lock()
	n := len(d.files)
	d.mu.Unlock()
	if n == 0 {
		t.Errorf("no file on the simulated disk: the store did not open on it")
	}
}

// TestMemDiskFiles checks the simulated disk's files behave as files:
// writes past the end grow with zeros, reads past the end give io.EOF,
// rename and remove change the listing.
func TestMemDiskFiles(t *testing.T) {
	d := new(memDisk)
	if err := d.MkdirAll("/a/b", 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := d.OpenFile("/a/b/x", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("hi"), 4); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 8)
	n, err := f.ReadAt(buf, 0)
	if n != 6 || err == nil || string(buf[:6]) != "\x00\x00\x00\x00hi" {
		t.Errorf("ReadAt: got %d %q %v, want 6 zero-padded bytes and io.EOF", n, buf[:n], err)
	}
	if err := f.Truncate(5); err != nil {
		t.Fatal(err)
	}
	if sz, _ := f.Size(); sz != 5 {
		t.Errorf("size after Truncate(5): got %d", sz)
	}
	if err := d.Rename("/a/b/x", "/a/b/y"); err != nil {
		t.Fatal(err)
	}
	names, err := d.List("/a/b")
	if err != nil || len(names) != 1 || names[0] != "y" {
		t.Errorf("List after rename: got %v %v, want [y]", names, err)
	}
	if _, err := d.OpenFile("/a/b/x", os.O_RDWR, 0); !os.IsNotExist(err) {
		t.Errorf("opening the old name: got %v, want not exist", err)
	}
	if err := d.Remove("/a/b/y"); err != nil {
		t.Fatal(err)
	}
	if names, _ := d.List("/a/b"); len(names) != 0 {
		t.Errorf("List after remove: got %v", names)
	}
}
