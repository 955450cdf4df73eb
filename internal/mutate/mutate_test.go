package mutate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBuiltinMutantsMatch fails as soon as the engine changes under a
// mutant: every snippet must still occur exactly once in the source, so
// that make mutate never silently tests something else.
func TestBuiltinMutantsMatch(t *testing.T) {
	ms, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) < 30 {
		t.Fatalf("loaded %d mutants, want the 30 or more in mutants/", len(ms))
	}
	if err := Check("../..", ms); err != nil {
		t.Error(err)
	}
	for _, m := range ms {
		if m.Why == "" {
			t.Errorf("mutant %s: no comment saying what it breaks", m.Name)
		}
		if m.Original == m.Replacement {
			t.Errorf("mutant %s: the replacement is the original", m.Name)
		}
	}
}

// TestParseReadsHeaderAndSnippets: a mutant file's comment, file:,
// unobservable: and its two snippets are read; a file missing a part or
// with a stray header line is refused.
func TestParseReadsHeaderAndSnippets(t *testing.T) {
	m, err := Parse("x", "# breaks a thing\nfile: engine/a.go\nunobservable: why\n--- original\none\ntwo\n--- mutant\nthree\n")
	if err != nil {
		t.Fatal(err)
	}
	if m.File != "engine/a.go" || m.Original != "one\ntwo" || m.Replacement != "three" || m.Why != "breaks a thing" || m.Unobservable != "why" {
		t.Errorf("got %+v", m)
	}
	for _, bad := range []string{
		"file: a.go\none\n--- mutant\nx\n",                    // no original
		"file: a.go\n--- original\none\n",                     // no mutant
		"--- original\none\n--- mutant\nx\n",                  // no file
		"file: a.go\nfoo\n--- original\none\n--- mutant\nx\n", // stray header
	} {
		if _, err := Parse("bad", bad); err == nil {
			t.Errorf("Parse(%q): got nil error", bad)
		}
	}
}

// TestApplyExactlyOnce: a snippet found twice or not at all is an error
// that names the mutant and the file; found once, it is replaced.
func TestApplyExactlyOnce(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f.go")
	os.WriteFile(path, []byte("a\nb\na\n"), 0o644)
	for _, orig := range []string{"a", "zzz"} {
		err := Apply(dir, Mutant{Name: "m", File: "f.go", Original: orig, Replacement: "c"})
		if err == nil || !strings.Contains(err.Error(), "mutant m") || !strings.Contains(err.Error(), "f.go") {
			t.Errorf("Apply with %q: got %v, want an error naming mutant m and f.go", orig, err)
		}
	}
	if err := Apply(dir, Mutant{Name: "m", File: "f.go", Original: "b", Replacement: "c"}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "a\nc\na\n" {
		t.Errorf("after Apply: %q", b)
	}
}

// TestTestsLine: a mutant's tests: line is go test's arguments for it,
// and decides what the copy holds: engine/ alone for the engine's tests,
// the whole module for another package's.
func TestTestsLine(t *testing.T) {
	m, err := Parse("x", "# breaks the verdict\nfile: harness/crash.go\ntests: -run Crash ./harness/\n--- original\none\n--- mutant\ntwo\n")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(TestsOf(m), " "); got != "-run Crash ./harness/" {
		t.Errorf("tests of a mutant with a tests: line = %q, want %q", got, "-run Crash ./harness/")
	}
	if engineOnly(TestsOf(m)) {
		t.Errorf("%v: engine only, want the whole module copied", TestsOf(m))
	}
	plain, err := Parse("y", "# breaks a sync\nfile: engine/commit.go\n--- original\none\n--- mutant\ntwo\n")
	if err != nil {
		t.Fatal(err)
	}
	if got := TestsOf(plain); len(got) != 1 || got[0] != "./engine/..." || !engineOnly(got) {
		t.Errorf("tests of a mutant with no tests: line = %v, want [./engine/...], the engine alone", got)
	}
	if !engineOnly([]string{"-run", "Crash", "./engine/crashtest/"}) {
		t.Error("./engine/crashtest/ is not the engine alone")
	}
}
