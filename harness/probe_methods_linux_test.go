package harness

import (
	"context"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A filesystem that refuses O_DIRECT (EINVAL from open(2), as ext4 gives
// for a misaligned request and filesystems without direct I/O give for
// the flag) gets refused rows with the error; a method whose writes fail
// gets refused rows with the write's error; the rest are measured.
func TestProbeMethodsReportsRefusals(t *testing.T) {
	methods := syncMethods()
	open := func(path string, flags int, perm uint32) (int, error) {
		switch {
		case flags&unix.O_DIRECT != 0:
			return -1, unix.EINVAL
		case flags&unix.O_DSYNC != 0:
			// Opened read-only: every write fails with EBADF.
			fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CREAT, perm)
			return fd, err
		}
		return unix.Open(path, flags, perm)
	}
	rows, err := probeMethods(context.Background(), t.TempDir(), quickMethods, methods, open)
	if err != nil {
		t.Fatal(err)
	}
	refused := checkRows(t, rows, methods)
	if len(refused) != 8 {
		t.Fatalf("%d refused rows, want 8 (O_DSYNC and O_DIRECT, both placements, both sizes)", len(refused))
	}
	for _, r := range refused {
		var want string
		switch {
		case r.Method == "O_DIRECT|O_DSYNC write":
			want = "open: invalid argument"
		case r.Method == "O_DSYNC write" && r.Placement == "overwrite":
			want = "preparing the region to overwrite: bad file descriptor"
		case r.Method == "O_DSYNC write":
			want = "write " // "write 128 B at offset 0: bad file descriptor"
		default:
			t.Errorf("%s %s refused: %s; only O_DSYNC and O_DIRECT should be", r.Method, r.Placement, r.Refused)
			continue
		}
		if !strings.Contains(r.Refused, want) || !strings.Contains(r.Refused, map[bool]string{true: "invalid argument", false: "bad file descriptor"}[strings.HasPrefix(r.Method, "O_DIRECT")]) {
			t.Errorf("%s %s: refused %q, want it to contain %q and the error", r.Method, r.Placement, r.Refused, want)
		}
	}
}

// On a real filesystem without direct I/O the O_DIRECT rows are refused
// with the kernel's error. tmpfs accepts O_DIRECT since Linux 6.6; ramfs
// still refuses it, so the test mounts one where it may (root, a
// kernel and container that allow mount(2)) and skips otherwise.
func TestProbeMethodsRefusedByRamfs(t *testing.T) {
	dir := t.TempDir()
	if err := unix.Mount("ramfs", dir, "ramfs", 0, ""); err != nil {
		t.Skipf("cannot mount a ramfs here (%v): the refusal is covered by TestProbeMethodsReportsRefusals", err)
	}
	defer unix.Unmount(dir, 0)
	rows, err := ProbeMethods(context.Background(), dir, quickMethods)
	if err != nil {
		t.Fatal(err)
	}
	refused := checkRows(t, rows, syncMethods())
	if len(refused) != 4 {
		t.Errorf("%d refused rows on ramfs, want 4 (O_DIRECT, both placements, both sizes)", len(refused))
	}
	for _, r := range refused {
		if r.Method != "O_DIRECT|O_DSYNC write" || r.Refused != "open: invalid argument" {
			t.Errorf("%s %s refused %q, want only O_DIRECT, with open: invalid argument", r.Method, r.Placement, r.Refused)
		}
	}
}

// The rows are timed in interleaved blocks, not one after another: with
// 16 iterations in 8 rounds, every row has made its first block before
// any row makes its third, so a drifting disk drifts under all of them.
func TestProbeMethodsInterleaves(t *testing.T) {
	var calls []string
	method := func(name string) syncMethod {
		return syncMethod{name: name, sync: func(fd int) error {
			calls = append(calls, name)
			return nil
		}}
	}
	cfg := ProbeConfig{Iterations: 16, MaxTime: time.Hour}
	rows, err := probeMethods(context.Background(), t.TempDir(), cfg, []syncMethod{method("a"), method("b")}, unix.Open)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 8 || len(calls) != 8*16 {
		t.Fatalf("%d rows, %d syncs; want 8 rows (2 methods x 2 placements x 2 sizes) of 16", len(rows), len(calls))
	}
	// Round one: each of the 8 rows makes a block of 2.
	if first := strings.Join(calls[:16], ""); first != "aaaabbbbaaaabbbb" {
		t.Errorf("the first 16 syncs ran %q, want a block of 2 from every row in turn (aaaabbbbaaaabbbb); one row after another runs a's 16 first", first)
	}
	for _, r := range rows {
		if r.Refused != "" || r.Iterations != 16 {
			t.Errorf("%s %s %d B: %d iterations, refused %q; want 16", r.Method, r.Placement, r.WriteSize, r.Iterations, r.Refused)
		}
	}
}
