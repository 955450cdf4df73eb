// Package mutate checks that the engine's tests notice durability bugs: it
// applies one plausible bug (a mutant) at a time to a copy of the engine's
// source, runs `go test ./engine/...` on the copy, and reports whether a
// test failed (the mutant is killed) or all passed (it survived, and the
// tests have a hole). The crash tool's verdicts (labserver crash -points
// and -fail-sync, in harness/crash.go and engine/crashtest) have mutants
// too, run against the tests their tests: line names.
//
// Each mutant is a file in mutants/ (embedded in the binary):
//
//	# what the mutant breaks, and why a test must notice (comment lines)
//	file: engine/commit.go
//	tests: -run Crash ./harness/   (go test's arguments, packages as ./dir; default ./engine/...)
//	unobservable: why no test can notice it (only for such mutants)
//	--- original
//	the exact text to replace, found exactly once in the file
//	--- mutant
//	the text that replaces it
//
// A snippet that is not found, or found more than once, is an error: the
// engine changed and the mutant must be updated, never silently skipped.
// A mutant that does not compile is an error too.
//
// Run it with `make mutate` (go run ./internal/mutate/cmd). For the
// engine's tests the copy holds go.mod, go.sum and engine/ only: they
// import nothing else of the module. A mutant whose tests: line names
// another package gets a copy of the whole module.
package mutate

import (
	"bufio"
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"
)

//go:embed mutants/*.txt
var builtin embed.FS

// Mutant is one durability bug to apply to the engine's source.
type Mutant struct {
	Name        string // the file name without .txt
	Why         string // the comment lines
	File        string // path relative to the module root
	Original    string // exact text, found exactly once in File
	Replacement string
	// Tests are go test's package and flag arguments for this mutant
	// (the "tests:" header line, split at spaces); nil is DefaultTests.
	Tests []string
	// Unobservable, when set, says why no test on this kind of machine
	// can notice the mutant (the "unobservable:" header line): it is
	// expected to survive, and the report says why.
	Unobservable string
}

// Result is the outcome of running the tests against one mutant.
type Result struct {
	Mutant   Mutant
	Killed   bool
	KilledBy []string // top-level tests that failed
	Elapsed  time.Duration
	Output   string // the test output, kept for survivors and errors
}

// Load returns the built-in mutants, sorted by name.
func Load() ([]Mutant, error) {
	names, err := fs.Glob(builtin, "mutants/*.txt")
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	var ms []Mutant
	for _, n := range names {
		b, err := builtin.ReadFile(n)
		if err != nil {
			return nil, err
		}
		m, err := Parse(strings.TrimSuffix(filepath.Base(n), ".txt"), string(b))
		if err != nil {
			return nil, err
		}
		ms = append(ms, m)
	}
	return ms, nil
}

// Parse reads one mutant file (see the package comment).
func Parse(name, text string) (Mutant, error) {
	m := Mutant{Name: name}
	head, rest, ok := strings.Cut(text, "\n--- original\n")
	if !ok {
		return m, fmt.Errorf("mutant %s: no \"--- original\" line", name)
	}
	m.Original, m.Replacement, ok = strings.Cut(rest, "\n--- mutant\n")
	if !ok {
		return m, fmt.Errorf("mutant %s: no \"--- mutant\" line", name)
	}
	m.Replacement = strings.TrimSuffix(m.Replacement, "\n")
	var why []string
	for _, line := range strings.Split(head, "\n") {
		switch {
		case strings.HasPrefix(line, "#"):
			why = append(why, strings.TrimSpace(strings.TrimPrefix(line, "#")))
		case strings.HasPrefix(line, "file:"):
			m.File = strings.TrimSpace(strings.TrimPrefix(line, "file:"))
		case strings.HasPrefix(line, "tests:"):
			m.Tests = strings.Fields(strings.TrimPrefix(line, "tests:"))
		case strings.HasPrefix(line, "unobservable:"):
			m.Unobservable = strings.TrimSpace(strings.TrimPrefix(line, "unobservable:"))
		case strings.TrimSpace(line) != "":
			return m, fmt.Errorf("mutant %s: unexpected header line %q (want # comments, file:, tests: and unobservable:)", name, line)
		}
	}
	m.Why = strings.Join(why, " ")
	if m.File == "" || m.Original == "" {
		return m, fmt.Errorf("mutant %s: needs a file: line and a non-empty original", name)
	}
	return m, nil
}

// Apply replaces the mutant's original text in root/m.File, which must
// hold it exactly once.
func Apply(root string, m Mutant) error {
	path := filepath.Join(root, m.File)
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("mutant %s: %w", m.Name, err)
	}
	if n := bytes.Count(b, []byte(m.Original)); n != 1 {
		return fmt.Errorf("mutant %s: the original snippet occurs %d times in %s, want exactly 1: update the mutant to the current source", m.Name, n, m.File)
	}
	b = bytes.Replace(b, []byte(m.Original), []byte(m.Replacement), 1)
	return os.WriteFile(path, b, 0o644)
}

// Check applies every mutant to a fresh copy of the module at root without
// running anything, so a stale snippet fails at once.
func Check(root string, ms []Mutant) error {
	var errs []error
	for _, m := range ms {
		b, err := os.ReadFile(filepath.Join(root, m.File))
		if err != nil {
			errs = append(errs, fmt.Errorf("mutant %s: %w", m.Name, err))
			continue
		}
		if n := bytes.Count(b, []byte(m.Original)); n != 1 {
			errs = append(errs, fmt.Errorf("mutant %s: the original snippet occurs %d times in %s, want exactly 1: update the mutant to the current source", m.Name, n, m.File))
		}
	}
	return errors.Join(errs...)
}

// TestsOf returns go test's arguments for m: its tests: line, or
// DefaultTests.
func TestsOf(m Mutant) []string {
	if len(m.Tests) > 0 {
		return m.Tests
	}
	return DefaultTests
}

// DefaultTests are the tests of a mutant with no tests: line.
var DefaultTests = []string{"./engine/..."}

// engineOnly reports whether tests (whose packages are written ./dir)
// run the engine's packages alone, whose tests need nothing of the module
// but engine/.
func engineOnly(tests []string) bool {
	for _, a := range tests {
		if strings.HasPrefix(a, "./") && a != "./engine" && !strings.HasPrefix(a, "./engine/") {
			return false
		}
	}
	return true
}

// notCopied are the directories of a checkout that no test reads: build
// output and history.
var notCopied = map[string]bool{".git": true, "bin": true, "dist": true, "bench-results": true, "node_modules": true}

// copyModule copies go.mod, go.sum and engine/ from root into a new
// temporary directory and returns it; with tests that are not the
// engine's alone, the whole module.
func copyModule(root string, tests []string) (string, error) {
	dst, err := os.MkdirTemp("", "kvlab-mutate-")
	if err != nil {
		return "", err
	}
	for _, f := range []string{"go.mod", "go.sum"} {
		if err := copyFile(filepath.Join(root, f), filepath.Join(dst, f)); err != nil {
			os.RemoveAll(dst)
			return "", err
		}
	}
	from := filepath.Join(root, "engine")
	if !engineOnly(tests) {
		from = root
	}
	err = filepath.WalkDir(from, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() {
			if notCopied[d.Name()] && rel == d.Name() {
				return filepath.SkipDir
			}
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		return copyFile(p, filepath.Join(dst, rel))
	})
	if err != nil {
		os.RemoveAll(dst)
		return "", err
	}
	return dst, nil
}

func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o644)
}

// failLine matches a top-level test failure in go test output.
var failLine = regexp.MustCompile(`^--- FAIL: (\S+)`)

// testArgs are the arguments of every test run: -failfast, because one
// failure is enough to kill a mutant.
// The timeout, 5m, is several times the unmutated run (about a minute on
// a loaded 2-core machine): a mutant that deadlocks a test is killed by
// the timeout, which names the test that hung.
var testArgs = []string{"test", "-count=1", "-failfast", "-timeout", "5m"}

// Skip, when not empty, is passed to go test -skip: tests to leave out of
// every run (the baseline's too), e.g. one that fails on the unmutated
// engine until a fix lands. A mutant only that test would kill then
// survives, so a report made with Skip says so.
var Skip string

// Only, when not empty, is passed to go test -run: run just these tests,
// to see which mutants they kill on their own.
var Only string

func goTestArgs(tests []string) []string {
	args := append([]string(nil), testArgs...)
	if Skip != "" {
		args = append(args, "-skip", Skip)
	}
	if Only != "" {
		args = append(args, "-run", Only)
	}
	return append(args, tests...)
}

// runTests runs go test in dir and returns whether it passed, the failing
// top-level tests and the output. A build failure is an error.
func runTests(ctx context.Context, dir string, tests []string) (bool, []string, string, error) {
	cmd := exec.CommandContext(ctx, "go", goTestArgs(tests)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		return false, nil, string(out), ctx.Err()
	}
	if bytes.Contains(out, []byte("[build failed]")) || bytes.Contains(out, []byte("[setup failed]")) {
		return false, nil, string(out), errors.New("the mutated source does not build")
	}
	if err == nil {
		return true, nil, string(out), nil
	}
	var failed []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if m := failLine.FindStringSubmatch(sc.Text()); m != nil {
			failed = append(failed, m[1])
		}
	}
	if len(failed) == 0 {
		if _, after, ok := bytes.Cut(out, []byte("panic: test timed out")); ok {
			// "running tests:" is followed by the tests that hung.
			hung := "?"
			if _, list, ok := bytes.Cut(after, []byte("running tests:\n")); ok {
				hung = strings.Fields(firstLine(list) + " ?")[0]
			}
			failed = []string{hung + " (hung: test timeout)"}
		} else {
			failed = []string{"(go test failed: " + firstLine(out) + ")"}
		}
	}
	return false, failed, string(out), nil
}

func firstLine(b []byte) string {
	s, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	return s
}

// Baseline runs tests (go test's arguments) on an unmutated copy of root:
// they must pass, or no mutant result means anything.
func Baseline(ctx context.Context, root string, tests []string) (time.Duration, error) {
	dir, err := copyModule(root, tests)
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	start := time.Now()
	ok, failed, out, err := runTests(ctx, dir, tests)
	if err != nil {
		return 0, fmt.Errorf("baseline: %w\n%s", err, out)
	}
	if !ok {
		return 0, fmt.Errorf("baseline: the unmutated source fails %s (go test %s); fix that first\n%s", strings.Join(failed, ", "), strings.Join(tests, " "), out)
	}
	return time.Since(start), nil
}

// Run applies m to a fresh copy of root and runs its tests (TestsOf).
func Run(ctx context.Context, root string, m Mutant) (Result, error) {
	r := Result{Mutant: m}
	dir, err := copyModule(root, TestsOf(m))
	if err != nil {
		return r, err
	}
	defer os.RemoveAll(dir)
	if err := Apply(dir, m); err != nil {
		return r, err
	}
	start := time.Now()
	ok, failed, out, err := runTests(ctx, dir, TestsOf(m))
	r.Elapsed = time.Since(start)
	if err != nil {
		return r, fmt.Errorf("mutant %s: %w\n%s", m.Name, err, out)
	}
	r.Killed, r.KilledBy = !ok, failed
	if ok {
		r.Output = out
	}
	return r, nil
}
