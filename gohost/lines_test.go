package gohost

import (
	"strings"
	"testing"
)

// TestMarkLines checks where the rewrite puts the line calls: after a
// block's "{" for the first statement (an else-if's condition belongs to
// the if), and after a case's ":".
func TestMarkLines(t *testing.T) {
	marked := markLines("package main\nfunc f(x interface{ Sync() error }) {\n\tif true {\n\t} else if x.Sync() != nil {\n\t}\n\tswitch {\n\tcase true: x.Sync()\n\t}\n}\n", 0)
	for _, want := range []string{"func f(x interface{ Sync() error }) { kvlabAtLine(4);\n", "case true: kvlabAtLine(7); x.Sync()"} {
		if !strings.Contains(marked, want) {
			t.Errorf("marked:\n%s\nwant %q in it", marked, want)
		}
	}
}
