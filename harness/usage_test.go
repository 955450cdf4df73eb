package harness

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestUsageTextMatchesGolden compares `labserver help` and every
// command's help with testdata/usage.golden (rewrite it with -update).
func TestUsageTextMatchesGolden(t *testing.T) {
	var b strings.Builder
	Usage(&b)
	for _, c := range Commands {
		b.WriteString("\n==== " + c + "\n")
		CommandUsage(&b, c)
	}
	path := filepath.Join("testdata", "usage.golden")
	if *update {
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := b.String(); got != string(want) {
		t.Errorf("usage text differs from %s (rerun with -update and review the diff):\n%s", path, got)
	}
}
