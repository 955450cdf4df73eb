package grader

import (
	"fmt"
	"go/format"
	"strings"
	"testing"
)

// broken returns the solution with old replaced by new, failing t if old
// is not in it (the broken version would silently be the solution).
func broken(t *testing.T, solution, old, new string) string {
	t.Helper()
	if strings.Count(solution, old) != 1 {
		t.Fatalf("the solution holds %q %d times, want once", old, strings.Count(solution, old))
	}
	return strings.Replace(solution, old, new, 1)
}

// rowOf returns the row whose input starts with prefix.
func rowOf(t *testing.T, r Result, prefix string) Case {
	t.Helper()
	for _, c := range r.Cases {
		if strings.HasPrefix(c.Input, prefix) {
			return c
		}
	}
	t.Fatalf("no row %q in %+v", prefix, r.Cases)
	return Case{}
}

const (
	putWriteSync = `	if _, err := s.log.Write(encode(key, value)); err != nil {
		return err
	}
	if err := s.log.Sync(); err != nil {
		return err
	}
	s.index[key] = value`
	putSync = `	if err := s.log.Sync(); err != nil {
		return err
	}
	s.index[key] = value`
	openSyncDir = `		if err := fs.SyncDir(); err != nil {
			return nil, err
		}`
	openTruncate = `		if err := s.log.Truncate(int64(good)); err != nil {
			return nil, err
		}`
)

// brokenCase is a broken version of an exercise's solution and the row it
// must fail, with the words it must fail with.
type brokenCase struct {
	name, old, new string // the solution with old replaced by new
	row            string // the failing row's input prefix
	got, hint      string // substrings of its got and hint
}

// checkBroken runs each broken version of sol as the exercise name.
func checkBroken(t *testing.T, name, sol string, tests []brokenCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := broken(t, sol, tt.old, tt.new)
			if strings.Contains(tt.new, "fmt.") && !strings.Contains(src, "\t\"fmt\"\n") {
				src = broken(t, src, "import (\n", "import (\n\t\"fmt\"\n")
			}
			r := mustRun(t, name, src)
			if r.Passed {
				t.Fatal("passed; want a failure")
			}
			c := rowOf(t, r, tt.row)
			if c.Pass || !strings.Contains(c.Got, tt.got) || !strings.Contains(c.Hint, tt.hint) {
				t.Errorf("row %q:\n got  %q\n hint %q\nwant got containing %q and hint containing %q", c.Input, c.Got, c.Hint, tt.got, tt.hint)
			}
		})
	}
}

// TestDurableAckBrokenVersions: each plausible wrong store fails the row
// it should, naming the crash point and the rule it broke.
func TestDurableAckBrokenVersions(t *testing.T) {
	sol := durableAckExercise.Solution
	checkBroken(t, "durable-ack", sol, []brokenCase{
		{"no fdatasync", putSync, "\ts.index[key] = value", "power cut after each operation, prefix",
			"power cut after operation 3 (write log @0, 13 bytes): key k0 was acknowledged at operation 3 but is gone", "you acknowledged before its fdatasync"},
		{"fdatasync before the write (it covers the previous Put)", putWriteSync,
			"	if err := s.log.Sync(); err != nil {\n\t\treturn err\n\t}\n\tif _, err := s.log.Write(encode(key, value)); err != nil {\n\t\treturn err\n\t}\n\ts.index[key] = value",
			"power cut after each operation, prefix", "power cut after operation 4 (write log @0, 13 bytes): key k0 was acknowledged at operation 4 but is gone", "you acknowledged before its fdatasync"},
		{"no directory fsync after Create", openSyncDir, "", "power cut after each operation, prefix",
			"power cut after operation 3 (fdatasync log): key k0 was acknowledged at operation 3 but is gone", "log was created at operation 1 but the directory was never fsynced"},
		{"two fdatasyncs per Put", putSync, "\ts.log.Sync()\n" + putSync, "fdatasyncs and directory fsyncs per Put",
			"2.00 on average (24 for 12 Puts), at most 2", `Put("k0") synced 2 times`},
		{"Open empties the log", `	data, err := fs.ReadFile("log")
	if kvfs.IsNotExist(err) {`, `	data, err := fs.ReadFile("log")
	if true {`, "reopen after the Puts", "key k0 was acknowledged at operation 4 but is gone", "Open must read back every record"},
		{"Open refuses a torn tail", openTruncate, "\t\treturn nil, fmt.Errorf(\"log: torn record at %d\", good)", "power cut after each operation, prefix",
			"Open failed: log: torn record at", "Open must accept whatever a power cut leaves"},
	})
}

// TestDurableAckTraceNote: a failure comes with the operations up to the
// cut.
func TestDurableAckTraceNote(t *testing.T) {
	r := mustRun(t, "durable-ack", broken(t, durableAckExercise.Solution, openSyncDir, ""))
	want := "Operations up to the power cut: 1 `create log` · 2 `write log @0, 13 bytes` · 3 `fdatasync log`"
	if len(r.Notes) == 0 || r.Notes[0] != want {
		t.Errorf("notes %q, want first %q", r.Notes, want)
	}
}

// TestDurableAckSolutionSyncsOncePerPut: the solution's numbers, as the
// page shows them.
func TestDurableAckSolutionSyncsOncePerPut(t *testing.T) {
	r := mustRun(t, "durable-ack", durableAckExercise.Solution)
	if c := rowOf(t, r, "fdatasyncs"); c.Got != "1.00 on average (12 for 12 Puts), at most 1" {
		t.Errorf("syncs row got %q", c.Got)
	}
	if c := rowOf(t, r, "power cut after each operation, reorder"); c.Got != "all came back, at 27 cut points × 3 choices" {
		t.Errorf("reorder row got %q", c.Got)
	}
}

func TestDurableAckShapeErrors(t *testing.T) {
	tests := []struct{ name, old, new, msg string }{

		{"Open misnamed", "func Open(fs kvfs.FS)", "func OpenStore(fs kvfs.FS)", "your code must define func Open(fs kvfs.FS) (*Store, error)"},
		{"Get without ok", "func (s *Store) Get(key string) (string, bool) {\n\tv, ok := s.index[key]\n\treturn v, ok", "func (s *Store) Get(key string) string {\n\treturn s.index[key]", "and Get(key string) (string, bool)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Run("durable-ack", broken(t, durableAckExercise.Solution, tt.old, tt.new))
			if r.Error == nil || !strings.Contains(r.Error.Msg, tt.msg) || r.Error.Line != 0 {
				t.Errorf("error %+v, want one without a line containing %q", r.Error, tt.msg)
			}
		})
	}
}

// TestCrashSourcesAreGofmted: the editor starts with, and the solution
// shows, code as gofmt writes it (the crash exercises build theirs from
// pieces).
func TestCrashSourcesAreGofmted(t *testing.T) {
	for _, e := range []*Exercise{durableAckExercise, tornTailExercise, atomicReplaceExercise} {
		for kind, src := range map[string]string{"stub": e.Stub, "solution": e.Solution} {
			got, err := format.Source([]byte(src))
			if err != nil {
				t.Fatalf("%s %s: %v", e.Name, kind, err)
			}
			if string(got) != src {
				t.Errorf("%s %s is not gofmt-formatted:\n%s", e.Name, kind, firstLineDiff(string(got), src))
			}
		}
	}
}

// firstLineDiff shows the first line where a and b differ.
func firstLineDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range min(len(al), len(bl)) {
		if al[i] != bl[i] {
			return fmt.Sprintf("line %d: gofmt %q, source %q", i+1, al[i], bl[i])
		}
	}
	return fmt.Sprintf("%d lines vs %d", len(al), len(bl))
}

// TestDurableAckPackageLevelIndex: a store whose index outlives Open (a
// package-level map) would pass every power cut, as the grader reopens it
// in the same interpreter; the empty-disk row catches it even when Put
// never syncs.
func TestDurableAckPackageLevelIndex(t *testing.T) {
	src := broken(t, durableAckExercise.Solution, putSync, "\ts.index[key] = value")
	src = broken(t, src, "s := &Store{index: map[string]string{}}", "s := &Store{index: shared}")
	src = broken(t, src, "// Store is a log", "var shared = map[string]string{}\n\n// Store is a log")
	r := mustRun(t, "durable-ack", src)
	c := rowOf(t, r, "Open again, on a second and empty disk")
	if c.Pass || c.Got != "key k0 is there" || !strings.Contains(c.Hint, "Open must build the index from the disk alone") {
		t.Errorf("row %+v, want key k0 found on an empty disk and the hint", c)
	}
}

// TestStudentCannotTouchTheRecording: the FS a store is handed is an
// interface, so its fields, exported or not, are out of reach: the
// interpreter would let code set an unexported field of a struct it can
// name (fs.c.MaxOps = 0 ran when FS was a struct).
func TestStudentCannotTouchTheRecording(t *testing.T) {
	for _, stmt := range []string{"fs.After = nil", "fs.MaxOps = 0", "fs.c.MaxOps = 0"} {
		t.Run(stmt, func(t *testing.T) {
			src := broken(t, durableAckExercise.Solution, "\ts := &Store{index: map[string]string{}}\n", "\t"+stmt+"\n\ts := &Store{index: map[string]string{}}\n")
			r := Run("durable-ack", src)
			if r.Error == nil || r.Error.Line != 16 || !strings.Contains(r.Error.Msg, "undefined method") {
				t.Errorf("error %+v, want an undefined method at line 16", r.Error)
			}
		})
	}
}

// TestDurableAckRunawayStore: a store that writes without end is stopped
// by the FS's bounds with an error in the workload row, not by the
// page's time limit or its memory.
func TestDurableAckRunawayStore(t *testing.T) {
	src := broken(t, durableAckExercise.Solution, writeSyncPut, `	for {
		if _, err := s.log.Write(encode(key, value)); err != nil {
			return err
		}
	}
`)
	src = broken(t, src, "\ts.index[key] = value\n\treturn nil\n}", "}")
	r := mustRun(t, "durable-ack", src)
	if c := r.Cases[0]; c.Pass || !strings.Contains(c.Got, `Put("k0", "v0-") failed with no power cut: kvfs: too many filesystem operations`) {
		t.Errorf("workload row %+v, want Put(k0) stopped by the operation limit", c)
	}
}

// TestDurableAckSyncFromAGoroutine: a store that syncs from a goroutine of
// its own is graded like any other, its operations numbered in the order
// they ran, whatever the goroutines do after the workload (go test -race
// checks the recording). Whether each sync ran before its Put returned
// depends on the scheduler, so only the rows are checked.
func TestDurableAckSyncFromAGoroutine(t *testing.T) {
	src := broken(t, durableAckExercise.Solution, putSync, "\tgo s.log.Sync()\n\ts.index[key] = value")
	for range 3 {
		r := mustRun(t, "durable-ack", src)
		if len(r.Cases) != 6 {
			t.Fatalf("got %d rows, want 6: %+v", len(r.Cases), r.Cases)
		}
	}
}
