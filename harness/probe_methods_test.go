//go:build unix

package harness

import (
	"context"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// quickMethods is a probe config small enough for a test.
var quickMethods = ProbeConfig{Iterations: 20, MaxTime: 200 * time.Millisecond}

// checkRows checks that rows has a row for every method, placement and
// size, each either measured (ordered percentiles) or refused with the
// error, and returns the refused ones.
func checkRows(t *testing.T, rows []SyncMethodCost, methods []syncMethod) (refused []SyncMethodCost) {
	t.Helper()
	if want := len(methods) * 2 * len(methodSizes); len(rows) != want {
		t.Fatalf("%d rows, want %d (methods x append/overwrite x sizes)", len(rows), want)
	}
	for i, r := range rows {
		m := methods[i/2%len(methods)]
		wantPlace := []string{"append", "overwrite"}[i%2]
		wantSize := alignUp(methodSizes[i/(2*len(methods))], m.align)
		if r.Method != m.name || r.Placement != wantPlace || r.WriteSize != wantSize {
			t.Errorf("row %d: %s %s %d B, want %s %s %d B", i, r.Method, r.Placement, r.WriteSize, m.name, wantPlace, wantSize)
		}
		switch {
		case r.Refused != "":
			if r.Iterations != 0 || r.P50Ns != 0 {
				t.Errorf("row %d (%s %s): refused (%s) but carries figures %+v", i, r.Method, r.Placement, r.Refused, r.ProbeCost)
			}
			refused = append(refused, r)
		case r.Iterations == 0 || !(0 < r.P50Ns && r.P50Ns <= r.P99Ns && r.P99Ns <= r.MaxNs) || r.OpsPerSec <= 0:
			t.Errorf("row %d (%s %s %d B): %+v, want iterations and 0 < p50 <= p99 <= max", i, r.Method, r.Placement, r.WriteSize, r.ProbeCost)
		}
	}
	return refused
}

// On a real directory every method of this OS is measured or refused by
// the OS with its error; on Linux only O_DIRECT may be refused. tmpfs is
// tried too: before Linux 6.6 it refuses O_DIRECT, from 6.6 it accepts
// it; either way the run completes.
func TestProbeMethodsOnRealFilesystems(t *testing.T) {
	dirs := []string{t.TempDir()}
	if fs, _, _ := fsAndDevice("/dev/shm"); fs == "tmpfs" {
		shm, err := os.MkdirTemp("/dev/shm", "kvlab-test-")
		if err == nil {
			defer os.RemoveAll(shm)
			dirs = append(dirs, shm)
		}
	}
	for _, dir := range dirs {
		rows, err := ProbeMethods(context.Background(), dir, quickMethods)
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		for _, r := range checkRows(t, rows, syncMethods()) {
			t.Logf("%s: %s %s refused: %s", dir, r.Method, r.Placement, r.Refused)
			if runtime.GOOS == "linux" && r.Method != "O_DIRECT|O_DSYNC write" {
				t.Errorf("%s: %s %s refused (%s): only O_DIRECT may be refused on Linux", dir, r.Method, r.Placement, r.Refused)
			}
		}
	}
}

// The table prints a refused row with its error and each note once.
func TestMethodsTable(t *testing.T) {
	rows := []SyncMethodCost{
		{Method: "write+fdatasync", Placement: "append", WriteSize: 128, ProbeCost: ProbeCost{Iterations: 10, P50Ns: 200_000, P99Ns: 300_000, MaxNs: 400_000, OpsPerSec: 5000}},
		{Method: "O_DIRECT|O_DSYNC write", Placement: "append", WriteSize: 4096, Refused: "open: invalid argument", Note: "aligned"},
		{Method: "O_DIRECT|O_DSYNC write", Placement: "overwrite", WriteSize: 4096, Note: "aligned", ProbeCost: ProbeCost{Iterations: 10, P50Ns: 100_000, P99Ns: 100_000, MaxNs: 100_000, OpsPerSec: 9000}},
		{Method: "O_DIRECT|O_DSYNC write", Placement: "overwrite", WriteSize: 8192, Note: "aligned", ProbeCost: ProbeCost{Iterations: 10, P50Ns: 100_000, P99Ns: 100_000, MaxNs: 100_000, OpsPerSec: 9000}},
	}
	var b strings.Builder
	if err := writeMethodsTable(&b, rows); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"write+fdatasync     append    128 B  200.0 µs  300.0 µs  400.0 µs   5000",
		"O_DIRECT|O_DSYNC write     append  4.0 KiB   refused",
		"  O_DIRECT|O_DSYNC write, append, 4.0 KiB refused: open: invalid argument\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if n := strings.Count(out, "O_DIRECT|O_DSYNC write: aligned"); n != 1 {
		t.Errorf("note printed %d times, want once:\n%s", n, out)
	}
	b.Reset()
	writeMethodsTable(&b, nil)
	if b.Len() != 0 {
		t.Errorf("no rows printed %q, want nothing", b.String())
	}
}
