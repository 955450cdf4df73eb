package grader

import (
	"fmt"
	"go/format"
	"os"
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
	if c.Pass || !strings.HasPrefix(c.Got, "key ") || !strings.HasSuffix(c.Got, " is there") || !strings.Contains(c.Hint, "Open must build the index from the disk alone") {
		t.Errorf("row %+v, want a key found on an empty disk and the hint", c)
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
			if r.Error == nil || r.Error.Line != 17 || !strings.Contains(r.Error.Msg, "undefined method") {
				t.Errorf("error %+v, want an undefined method at line 17", r.Error)
			}
		})
	}
}

// TestDurableAckRunawayStore: a store that writes without end is stopped
// by the FS's bounds with an error in the workload row, not by the
// page's time limit or its memory.
func TestDurableAckRunawayStore(t *testing.T) {
	src := broken(t, durableAckExercise.Solution, writeSyncPut, `	for {
		if _, err := s.log.Write([]byte(key)); err != nil {
			return err
		}
	}
`)
	src = broken(t, src, "\ts.index[key] = value\n\treturn nil\n}", "}")
	r := mustRun(t, "durable-ack", src)
	first := putText(drawWorkload(7)[0])
	if c := r.Cases[0]; c.Pass || !strings.Contains(c.Got, first+" failed with no power cut: kvfs: too many filesystem operations") {
		t.Errorf("workload row %+v, want %s stopped by the operation limit", c, first)
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
		if len(r.Cases) != 7 {
			t.Fatalf("got %d rows, want 7: %+v", len(r.Cases), r.Cases)
		}
	}
}

// TestMineTestdataIsTheSolution keeps the harness's copy of the
// durable-ack model answer, which its tests of -engine mine measure on
// the real disk, equal to the exercise's.
func TestMineTestdataIsTheSolution(t *testing.T) {
	const copyPath = "../../harness/mine/testdata/durable-ack.go.txt"
	b, err := os.ReadFile(copyPath)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != ackSolution {
		t.Errorf("%s differs from durable-ack's Solution: copy the Solution there again", copyPath)
	}
}
