package static

import (
	"io/fs"
	"path"
	"regexp"
	"testing"
)

// importRE finds a module's static imports: import ... from './x.js'.
var importRE = regexp.MustCompile(`(?m)^import [^;]*? from '([^']+)';`)

// relativeRE is the one kind of specifier the modules use: a module of
// this folder or the room's, './NAME.js' or '../NAME.js'.
var relativeRE = regexp.MustCompile(`^\.\.?/[a-z][a-z0-9-]*\.js$`)

// TestImportsResolve checks that every module the page's modules and the
// room's (room/) import is embedded, so the browser never fetches a
// missing file.
func TestImportsResolve(t *testing.T) {
	var names []string
	for _, pattern := range []string{"*.js", "room/*.js"} {
		m, err := fs.Glob(FS, pattern)
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, m...)
	}
	imports := 0
	for _, name := range names {
		b, err := fs.ReadFile(FS, name)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range importRE.FindAllStringSubmatch(string(b), -1) {
			imports++
			dep, ok := resolve(name, m[1])
			if !ok {
				t.Errorf("%s imports %q: want ./NAME.js or ../NAME.js inside static/ (no packages, no other origin)", name, m[1])
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

// resolve returns the path in FS of the module that module imports as
// spec, the way the browser resolves it against module's URL.
func resolve(module, spec string) (string, bool) {
	if !relativeRE.MatchString(spec) {
		return "", false
	}
	dep := path.Join(path.Dir(module), spec)
	return dep, fs.ValidPath(dep)
}
