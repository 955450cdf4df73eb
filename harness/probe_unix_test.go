//go:build unix

package harness

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// The overwrite case writes into space that is allocated before the clock
// starts: zeroFill leaves a file of the full size whose blocks exist (not
// a hole, which a write would still have to allocate), and the probe's
// writes stay inside it, wrapping to its start, so the file never grows.
func TestProbeOverwriteStaysInAllocatedSpace(t *testing.T) {
	cfg := ProbeConfig{Iterations: 100, WriteSize: 96}
	region := overwriteRegion(cfg)
	if region != 9600 {
		t.Fatalf("overwriteRegion: got %d, want 100 writes of 96 B = 9600", region)
	}
	if got := overwriteRegion(ProbeConfig{Iterations: 1 << 30, WriteSize: 1 << 20}); got != maxOverwriteRegion {
		t.Errorf("overwriteRegion of 2^30 1 MiB writes: got %d, want the cap %d", got, maxOverwriteRegion)
	}
	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := zeroFill(f, region); err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		t.Fatal(err)
	}
	if st.Size != region || st.Blocks*512 < region {
		t.Errorf("after zeroFill: size %d, %d bytes allocated; want size %d, all of it allocated", st.Size, st.Blocks*512, region)
	}
	pf := &osProbeFile{fd: int(f.Fd()), dir: "test", overwrite: region}
	buf := make([]byte, cfg.WriteSize)
	for range 250 { // two and a half times round
		if err := pf.write(buf); err != nil {
			t.Fatal(err)
		}
	}
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		t.Fatal(err)
	}
	if st.Size != region {
		t.Errorf("after 250 overwrites: size %d, want %d (the file must not grow)", st.Size, region)
	}
}
