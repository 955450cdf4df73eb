package layering

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// rule forbids the packages matching from to import those matching to.
// A pattern is an import path, or one ending in "/..." for the path and
// everything below it, as `go list` reads them.
type rule struct{ from, to, why string }

var rules = []rule{
	{"kvlab/harness/...", "kvlab/wasm/...", "the harness runs a reader's Go through kvlab/gohost, not through the browser's packages"},
	{"kvlab/wasm/...", "kvlab/engine", "the browser's build takes the filesystem model from kvlab/engine/vfs, not the engine"},
}

// testSupport are the packages that exist for tests: only _test.go files
// and other test-support packages may import them, so nothing of theirs
// is built into a binary (deadcode lists their functions as unreachable
// from the binaries, which is what they are).
var testSupport = []string{
	"kvlab/harness/harnesstest",
	"kvlab/internal/archive/archivetest",
	"kvlab/internal/apidoc",
	"kvlab/internal/browsertest",
	"kvlab/internal/heappeak",
	"kvlab/internal/labproc",
	"kvlab/internal/pgtest",
	"kvlab/internal/silentport",
	"kvlab/internal/slowfs",
}

// match reports whether the import path p matches pattern.
func match(pattern, p string) bool {
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return p == base || strings.HasPrefix(p, base+"/")
	}
	return p == pattern
}

// broken returns the rule that forbids from to import to, or nil.
func broken(from, to string) *rule {
	for i, r := range rules {
		if match(r.from, from) && match(r.to, to) {
			return &rules[i]
		}
	}
	return nil
}

// root is the module's directory, two levels up from this package.
const root = "../.."

// TestMatch pins the patterns: a subtree pattern takes the path and
// what is below it, and nothing that merely starts with the same
// letters; a plain path only itself.
func TestMatch(t *testing.T) {
	for _, tt := range []struct {
		pattern, path string
		want          bool
	}{
		{"kvlab/wasm/...", "kvlab/wasm", true},
		{"kvlab/wasm/...", "kvlab/wasm/grader", true},
		{"kvlab/wasm/...", "kvlab/wasmx", false},
		{"kvlab/engine", "kvlab/engine", true},
		{"kvlab/engine", "kvlab/engine/vfs", false},
	} {
		if got := match(tt.pattern, tt.path); got != tt.want {
			t.Errorf("match(%q, %q) = %v, want %v", tt.pattern, tt.path, got, tt.want)
		}
	}
	if broken("kvlab/harness/mine", "kvlab/wasm/grader") == nil {
		t.Error("harness/mine importing wasm/grader is not caught")
	}
	if broken("kvlab/wasm/grader", "kvlab/engine/vfs") != nil {
		t.Error("wasm/grader importing engine/vfs is refused")
	}
}

// TestDirectImports reads the imports of every Go file of the module,
// _test.go files and files of any GOOS included, and checks each
// against the rules and testSupport.
func TestDirectImports(t *testing.T) {
	files := 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if p != root && (name == "testdata" || name == "node_modules" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") {
			return nil
		}
		rel, err := filepath.Rel(root, filepath.Dir(p))
		if err != nil {
			return err
		}
		pkg := path.Join("kvlab", filepath.ToSlash(rel))
		f, err := parser.ParseFile(token.NewFileSet(), p, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		files++
		name := filepath.ToSlash(strings.TrimPrefix(p, root+"/"))
		for _, imp := range f.Imports {
			to, err := strconv.Unquote(imp.Path.Value)
			if err != nil {
				return err
			}
			if r := broken(pkg, to); r != nil {
				t.Errorf("%s imports %s: %s", name, to, r.why)
			}
			if slices.Contains(testSupport, to) && !strings.HasSuffix(p, "_test.go") && !slices.Contains(testSupport, pkg) {
				t.Errorf("%s imports %s, which is test support: only tests may", name, to)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("read %d Go files under %s, want the whole module", files, root)
	}
}

// TestReachedImports asks `go list` for every package the harness's
// packages and their tests reach, and the browser's build (GOOS=js) and
// the grader reach, through other packages too.
func TestReachedImports(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command:", err)
	}
	for _, tt := range []struct {
		from string   // the rule's side the listed packages stand for
		env  []string // added to the environment
		args []string // for go list -deps
	}{
		{"kvlab/harness", nil, []string{"-test", "./harness/..."}},
		{"kvlab/wasm", []string{"GOOS=js", "GOARCH=wasm"}, []string{"./wasm/worker"}},
		{"kvlab/wasm", nil, []string{"./wasm/grader"}},
	} {
		cmd := exec.Command(goBin, append([]string{"list", "-deps"}, tt.args...)...)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), tt.env...)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", strings.Join(tt.args, " "), err)
		}
		deps := strings.Fields(string(out))
		if len(deps) == 0 {
			t.Fatalf("go list -deps %s listed nothing", strings.Join(tt.args, " "))
		}
		for _, dep := range deps {
			if r := broken(tt.from, dep); r != nil {
				t.Errorf("%s %s reaches %s: %s", strings.Join(tt.env, " "), strings.Join(tt.args, " "), dep, r.why)
			}
		}
	}
}
