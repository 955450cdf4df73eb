package harness

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// TestSweepFixedDirs: a fixed-term directory whose process is gone (a
// labserver killed during the probe) is removed by the next probe; one of
// a live process, and anything else, stays.
func TestSweepFixedDirs(t *testing.T) {
	mem := t.TempDir()
	dead := filepath.Join(mem, fixedDirPrefix+"2147483600-1")
	live := filepath.Join(mem, fixedDirPrefix+strconv.Itoa(os.Getpid())+"-2")
	other := filepath.Join(mem, "kvlab-data-3")
	for _, d := range []string{dead, live, other} {
		if err := os.MkdirAll(filepath.Join(d, "m0"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	sweepFixedDirs(mem)
	if _, err := os.Stat(dead); !os.IsNotExist(err) {
		t.Errorf("%s: %v, want it removed (its process is gone)", dead, err)
	}
	for _, d := range []string{live, other} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s: %v, want it kept", d, err)
		}
	}
}
