package grader

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFaultModelStated checks that the crash exercises' instructions,
// this package's doc and lesson 7's text state the cases of ext4 the
// fault model leaves out, and where it is harsher.
func TestFaultModelStated(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	lessons, _ := filepath.Glob("../../lessons/07-*.md")
	if len(lessons) != 1 {
		t.Fatalf("lesson 7: %v", lessons)
	}
	lesson, err := os.ReadFile(lessons[0])
	if err != nil {
		t.Fatal(err)
	}
	flat := func(s string) string { return strings.Join(strings.Fields(strings.ReplaceAll(s, "//", "")), " ") }
	texts := map[string]string{
		"durable-ack's instructions": durableAckExercise.Instructions,
		"torn-tail's instructions":   tornTailExercise.Instructions,
		"the package doc":            flat(string(doc)),
		"lesson 7":                   flat(string(lesson)),
	}
	for name, text := range texts {
		for _, want := range [][]string{
			{"leaves out"},
			{"SyncDir`, `Rename`", "directory fsync, a rename"}, // failures of names' operations
			{"twice in", "more than once per workload"},         // one failing fdatasync only
			{"torn inside a sector"},
			{"data=writeback"},                                 // metadata-only journaling
			{"before `SyncDir`", "before the directory fsync"}, // names committed early
			{"auto_da_alloc"},
			{"data=ordered"}, // where the model is harsher
		} {
			found := false
			for _, w := range want {
				found = found || strings.Contains(text, w)
			}
			if !found {
				t.Errorf("%s does not say %q", name, want[0])
			}
		}
	}
}
