package static

import (
	"io/fs"
	"regexp"
	"testing"
)

// importRE finds a module's static imports: import ... from './x.js'.
var importRE = regexp.MustCompile(`(?m)^import [^;]*? from '([^']+)';`)

// siblingRE is the one kind of specifier the modules use: './NAME.js'.
var siblingRE = regexp.MustCompile(`^\./([a-z][a-z0-9-]*\.js)$`)

// TestImportsResolve checks that every module the page's modules import
// is embedded beside them, so the browser never fetches a missing file.
func TestImportsResolve(t *testing.T) {
	names, err := fs.Glob(FS, "*.js")
	if err != nil {
		t.Fatal(err)
	}
	imports := 0
	for _, name := range names {
		b, err := fs.ReadFile(FS, name)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range importRE.FindAllStringSubmatch(string(b), -1) {
			imports++
			dep, ok := relative(m[1])
			if !ok {
				t.Errorf("%s imports %q: want a ./NAME.js beside it (no packages, no other origin)", name, m[1])
				continue
			}
			if _, err := fs.Stat(FS, dep); err != nil {
				t.Errorf("%s imports %q, which is not embedded: %v", name, m[1], err)
			}
		}
	}
	if imports < 10 {
		t.Errorf("found %d imports in %v: want the page's modules to import each other", imports, names)
	}
}

// relative returns NAME.js for the import specifier './NAME.js'.
func relative(spec string) (string, bool) {
	m := siblingRE.FindStringSubmatch(spec)
	if m == nil {
		return "", false
	}
	return m[1], true
}
