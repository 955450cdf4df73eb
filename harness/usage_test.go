package harness

import (
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
	checkGolden(t, "usage", b.String())
}
