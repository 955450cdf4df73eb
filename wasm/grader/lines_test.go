package grader

import (
	"strings"
	"testing"

	"kvlab/gohost"
)

// opCall is the call each kind of operation is issued by.
var opCall = map[string]string{
	"create": ".Create(", "write": ".Write(", "fdatasync": ".Sync()", "fsync-dir": ".SyncDir()",
	"rename": ".Rename(", "truncate": ".Truncate(", "remove": ".Remove(",
}

// TestOpLines records the model solutions and checks that every
// operation carries the line of the student's code that issued it: the
// line holds the call of its kind.
func TestOpLines(t *testing.T) {
	for _, src := range []string{ackSolution, tornSolution, strings.Replace(ackSolution, "package main\n", "// A comment first, so the lines move.\npackage main\n\n", 1)} {
		p, ce := load(src, gohost.StorePrelude)
		if ce != nil {
			t.Fatal(ce)
		}
		rec, err := record(p, drawWorkload(3))
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(src, "\n")
		for _, op := range rec.ops {
			if op.Line < 1 || op.Line > len(lines) {
				t.Fatalf("%s: line %d, want a line of the source", op, op.Line)
			}
			if got := lines[op.Line-1]; !strings.Contains(got, opCall[op.Kind]) {
				t.Errorf("%s: line %d is %q, want the call %s", op, op.Line, got, opCall[op.Kind])
			}
		}
	}
}

// TestMarkLinesKeepsPositions checks that the rewrite moves no line and
// no statement within its line: a compile error in a marked statement
// is reported where the student wrote it.
func TestMarkLinesKeepsPositions(t *testing.T) {
	src := strings.Replace(ackSolution, "\tif err := s.log.Sync(); err != nil {", "\tif err := s.log.Sync(); err != nil && undefinedName {", 1)
	_, ce := load(src, gohost.StorePrelude)
	if ce == nil {
		t.Fatal("no error for an undefined name")
	}
	want := 0
	for i, l := range strings.Split(src, "\n") {
		if strings.Contains(l, "undefinedName") {
			want = i + 1
			if col := strings.Index(l, "undefinedName") + 1; ce.Line != want || ce.Col != col {
				t.Errorf("error at %d:%d (%s), want %d:%d", ce.Line, ce.Col, ce.Msg, want, col)
			}
		}
	}
}
