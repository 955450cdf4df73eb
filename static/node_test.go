package static

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"kvlab/internal/browsertest"
)

// TestNode runs the Node tests of the page's modules, testdata/*.test.mjs,
// one node --test per file: charts.js and the formatting in dom.js, and
// the two agreements with Go (cell lines with lesson.CellLines, durations
// with harness.FormatNs). Node imports the modules as the browser does;
// package.json here marks the .js files as modules for Node.
func TestNode(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		browsertest.Missing(t, "node is not installed (apt-get install nodejs)")
	}
	files, err := filepath.Glob("testdata/*.test.mjs")
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata/*.test.mjs (%v)", err)
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".test.mjs"), func(t *testing.T) {
			out, err := exec.Command(node, "--test", "--test-reporter=spec", f).CombinedOutput()
			if err != nil {
				t.Fatalf("node --test %s: %v\n%s", f, err, out)
			}
			t.Logf("%s", out)
		})
	}
}
