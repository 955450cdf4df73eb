package lessons_test

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"

	"kvlab/internal/browsertest"
	"kvlab/internal/lesson"
	"kvlab/internal/server"
)

// A figure the text asks the reader to read must be on the page under
// the name the text uses. TestNamedFieldsAreShown runs each cell of the
// lessons in fieldLessons (at a twentieth of its size), renders its
// results as the page does (static/results.js, through
// testdata/render-results.mjs under Node, without the raw JSON below the
// tables) and, for every result field the prose after the cell names in
// backquotes (`pacer_lag`, `fsync_p50_ns`: a name with an underscore that
// is a key of the cell's results), fails when the rendered text lacks it.

// fieldLessons are the lessons the check covers, by file name prefix.
var fieldLessons = []string{"05-", "06-", "10-"}

var backquoted = regexp.MustCompile("`([a-z][a-z0-9]*(?:_[a-z0-9]+)+)`")

func TestNamedFieldsAreShown(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		browsertest.Missing(t, "node is not installed (apt-get install nodejs)")
	}
	lim := server.DefaultLimits()
	for _, prefix := range fieldLessons {
		l := lessonByPrefix(t, prefix)
		for _, c := range l.Cells {
			names := namedFields(cellProse(l, c))
			if len(names) == 0 {
				continue
			}
			t.Run(l.Slug+"/"+c.ID, func(t *testing.T) {
				rs, err := execLines(t, c.Lines, 0.05, lim)
				if err != nil {
					t.Fatal(err)
				}
				keys := map[string]bool{}
				var in []map[string]any
				for i, r := range rs {
					resultKeys(r, keys)
					in = append(in, map[string]any{"spec": c.Lines[i], "result": r})
				}
				page := renderResults(t, node, in)
				for _, name := range names {
					if keys[name] && !strings.Contains(page, name) {
						t.Errorf("the text after cell %s names `%s`, a field of its results, and the page's tables and notes do not show it under that name:\n%s", c.ID, name, page)
					}
				}
			})
		}
	}
}

// cellProse is the lesson's text from cell c to the next cell or the
// next "## " heading, quiz blocks left out (their show lines print what
// they name).
func cellProse(l *lesson.Lesson, c *lesson.Cell) string {
	body := string(l.Body)
	at := strings.Index(body, "```lab "+c.Name+"\n")
	if c.Name == "" || at < 0 {
		return ""
	}
	rest := body[at+len("```lab "+c.Name+"\n"):]
	rest = rest[strings.Index(rest, "```")+3:]
	for _, end := range []string{"```lab ", "\n## "} {
		if k := strings.Index(rest, end); k >= 0 {
			rest = rest[:k]
		}
	}
	var prose strings.Builder
	inQuiz := false
	for _, line := range strings.Split(rest, "\n") {
		switch {
		case strings.HasPrefix(line, "```quiz"):
			inQuiz = true
		case inQuiz && strings.HasPrefix(line, "```"):
			inQuiz = false
		case !inQuiz:
			prose.WriteString(line + "\n")
		}
	}
	return prose.String()
}

// namedFields are the backquoted snake_case names in s, once each.
func namedFields(s string) []string {
	var out []string
	for _, m := range backquoted.FindAllStringSubmatch(s, -1) {
		if !slices.Contains(out, m[1]) {
			out = append(out, m[1])
		}
	}
	return out
}

// resultKeys adds every object key in v, at any depth, to keys.
func resultKeys(v any, keys map[string]bool) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			keys[k] = true
			resultKeys(e, keys)
		}
	case []any:
		for _, e := range x {
			resultKeys(e, keys)
		}
	}
}

// renderResults is the text the page shows for a cell's lines.
func renderResults(t *testing.T, node string, lines []map[string]any) string {
	t.Helper()
	in, err := json.Marshal(lines)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, "testdata/render-results.mjs")
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("rendering the results with static/results.js: %v\n%s", err, stderr.String())
	}
	return string(out)
}

// The check itself: a named field the page lacks is found, one it shows
// is not, and a backquoted name that is no result field is left alone.
func TestNamedFieldsCheck(t *testing.T) {
	got := namedFields("read `pacer_lag` and `utilization`, set `commit_delay`, and `pacer_lag` again")
	if want := []string{"pacer_lag", "commit_delay"}; !slices.Equal(got, want) {
		t.Errorf("namedFields: got %v, want %v", got, want)
	}
	l, err := lesson.Parse("01-x.md", []byte("---\ntitle: X\nsummary: s\norder: 1\n---\n```lab c\nprobe\n```\n\nRead `fdatasync_ns`.\n\n```quiz\nid: q\nquestion: ?\ncell: c\nanswer: $0.write_ns\ntolerance: 10%\nshow: `write_ns`\n```\n\n## Next\n\nNot `write_ns`.\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := namedFields(cellProse(l, l.Cells[0])); !slices.Equal(got, []string{"fdatasync_ns"}) {
		t.Errorf("cellProse: the names after the cell, quizzes and the next section left out: got %v, want [fdatasync_ns]", got)
	}
}
