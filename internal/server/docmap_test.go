package server

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The file maps in the package docs ("Files, one job each") name every
// file of the package that is not a test, and no file that is gone: a
// reader finds a job by the map, so a file it leaves out is a file never
// found.
func TestDocFileMaps(t *testing.T) {
	entry := regexp.MustCompile(`(?m)^//\t([a-z0-9_]+\.go)\s`)
	for _, dir := range []string{".", "liveclass", "runq", "guard", "run", "../grade"} {
		doc, err := os.ReadFile(filepath.Join(dir, "doc.go"))
		if err != nil {
			t.Fatal(err)
		}
		listed := map[string]bool{}
		for _, m := range entry.FindAllStringSubmatch(string(doc), -1) {
			listed[m[1]] = true
		}
		if len(listed) < 3 {
			t.Fatalf("%s/doc.go: found %d entries in its file map, want one per file", dir, len(listed))
		}
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		present := map[string]bool{}
		for _, f := range files {
			name := filepath.Base(f)
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			present[name] = true
			if !listed[name] && name != "doc.go" {
				t.Errorf("%s/doc.go: its file map does not list %s", dir, name)
			}
		}
		for name := range listed {
			if !present[name] {
				t.Errorf("%s/doc.go: its file map lists %s, which is not in the package", dir, name)
			}
		}
	}
}
