package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"kvlab/harness"
)

// docCommands returns every `labserver ...` command line in the shell
// blocks of the README and of docs/*.md, comments cut, with the file it
// came from.
func docCommands(t *testing.T) map[string][]string {
	t.Helper()
	files, _ := filepath.Glob("../docs/*.md")
	files = append(files, "../README.md")
	out := map[string][]string{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		inShell := false
		for _, line := range strings.Split(string(b), "\n") {
			switch {
			case strings.HasPrefix(line, "```sh"):
				inShell = true
				continue
			case strings.HasPrefix(line, "```"):
				inShell = false
				continue
			}
			if !inShell {
				continue
			}
			line, _, _ = strings.Cut(line, " #")
			line = strings.TrimSpace(line)
			if rest, ok := strings.CutPrefix(line, "labserver "); ok {
				out[f] = append(out[f], rest)
			}
		}
	}
	return out
}

// words splits a shell line into words, honouring single quotes (the
// docs quote URLs with a query), and drops redirections.
func words(line string) []string {
	var ws []string
	for _, m := range regexp.MustCompile(`'[^']*'|\S+`).FindAllString(line, -1) {
		if m == ">" || strings.HasPrefix(m, ">") {
			break
		}
		ws = append(ws, strings.Trim(m, "'"))
	}
	return ws
}

// TestDocumentedCommandsParse: every command the README and docs/ show
// is one labserver takes. A run-spec line (bench, sweep, probe, model,
// crash) must parse as a cell would parse it; any other command must
// exist and every flag it is shown with must be in its help.
func TestDocumentedCommandsParse(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	t.Setenv("HOME", t.TempDir())
	cmds := docCommands(t)
	n := 0
	for file, lines := range cmds {
		for _, line := range lines {
			n++
			ws := words(line)
			if len(ws) == 0 {
				continue
			}
			if slices.Contains(harness.Commands, ws[0]) {
				// The command line's own flags (-archive, -data) are not a cell's.
				var spec []string
				for i := 0; i < len(ws); i++ {
					if ws[i] == "-data" || ws[i] == "-archive" {
						i++
						continue
					}
					spec = append(spec, ws[i])
				}
				if _, err := harness.ParseSpec(strings.Join(spec, " "), harness.DefaultLimits()); err != nil {
					t.Errorf("%s: labserver %s: %v", file, line, err)
				}
				continue
			}
			help := []string{"help", ws[0]}
			var out bytes.Buffer
			if code := run(t.Context(), help, &out, &out); code != 0 {
				t.Errorf("%s: labserver %s: no such command (%s)", file, line, out.String())
				continue
			}
			for _, w := range ws[1:] {
				if f, ok := strings.CutPrefix(w, "-"); ok && f != "" {
					f, _, _ = strings.Cut(f, "=")
					if !regexp.MustCompile(`(?m)-` + regexp.QuoteMeta(f) + `\b`).MatchString(out.String()) {
						t.Errorf("%s: labserver %s: flag -%s is not in `labserver help %s`", file, line, f, ws[0])
					}
				}
			}
		}
	}
	if n < 20 {
		t.Errorf("found %d documented commands; the docs show more than 20: is the extraction broken?", n)
	}
}

// TestDocsNameFilesThatExist: every path the README and docs/*.md name
// in code quotes from the module's root (engine/..., harness/...) is
// there, so "Reading the source" and the references walk files that
// exist. static/wasm/ is the exception: make wasm builds it.
func TestDocsNameFilesThatExist(t *testing.T) {
	files, _ := filepath.Glob("../docs/*.md")
	files = append(files, "../README.md")
	path := regexp.MustCompile("`((?:engine|harness|internal|gohost|wasm|static|lessons|docs|labserver|e2e)/[A-Za-z0-9_./-]*)`")
	n := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range path.FindAllStringSubmatch(string(b), -1) {
			if strings.HasPrefix(m[1], "static/wasm/") {
				continue
			}
			n++
			if _, err := os.Stat(filepath.Join("..", m[1])); err != nil {
				t.Errorf("%s names %s, which is not in the module", filepath.Base(f), m[1])
			}
		}
	}
	if n < 20 {
		t.Errorf("found %d paths in the README and docs/; they name more than 20: is the extraction broken?", n)
	}
}
