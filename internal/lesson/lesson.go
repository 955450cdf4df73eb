// Package lesson reads kvlab's course files: Markdown with front matter,
// runnable lab cells, quizzes and exercises.
//
// A lesson file is named NN-slug.md and starts with front matter:
//
//	---
//	title: Why fsync is slow
//	summary: One write, one fdatasync, and what that costs.
//	order: 1
//	---
//
// Three fenced block kinds are special:
//
//   - ```lab NAME  — a runnable cell. NAME is optional (letters, digits,
//     '-'), unique in the lesson. Each non-empty line that does not start
//     with '#' is one run-spec line, exactly as typed after `labserver`.
//   - ```quiz      — a quiz; see package kvlab/internal/quiz.
//   - ```exercise NAME — an in-browser Go exercise; NAME is one of
//     ExerciseNames.
//
// Parse checks what can be checked without running anything: names,
// duplicates, quiz syntax, and that each quiz's cell exists and has the
// lines its answer reads. Run-spec lines are checked by the caller (the
// server and the lesson tests use harness.ParseSpec) so that this package
// stays free of the harness.
package lesson

import (
	"bytes"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"

	"kvlab/internal/quiz"
)

// ExerciseNames are the exercise blocks the in-browser grader knows.
var ExerciseNames = []string{"percentile", "percentile-tests", "mean-vs-tail", "batch-model", "durable-ack", "torn-tail", "atomic-replace"}

// Lesson is one parsed lesson file. It is immutable after Parse.
type Lesson struct {
	File    string // file name, e.g. "01-why-fsync.md"
	Slug    string // file name without .md; the URL is /lessons/SLUG
	Title   string
	Summary string
	Order   int
	Meta    map[string]string // every front-matter key, including the ones above
	Body    []byte            // the Markdown after the front matter
	// BodyLine is the file line number of Body's first line.
	BodyLine int

	Cells     []*Cell
	Quizzes   []*quiz.Quiz
	Exercises []string // exercise names in the order they appear
}

// Cell is one ```lab block.
type Cell struct {
	Name  string   // as written after "lab"; "" when unnamed
	ID    string   // Name, or "cell-N" (1-based) for an unnamed cell
	Index int      // 0-based position among the lesson's cells
	Text  string   // the block's original text, comments included
	Lines []string // the run-spec lines: non-empty, not starting with '#'
	// Script is the text of the ```lua mine block just before the cell:
	// the workload script its -script mine lines run, which the page
	// shows in an editor of its own; "" when there is none.
	Script string
}

// SlugPattern is what a lesson's slug looks like: the file name
// NN-slug.md without ".md", and the SLUG of the server's /lessons/SLUG.
const SlugPattern = `^[a-z0-9][a-z0-9-]*$`

var (
	nameRE = regexp.MustCompile(`^[A-Za-z0-9-]+$`)
	slugRE = regexp.MustCompile(SlugPattern)
)

// IsSlug reports whether s matches SlugPattern.
func IsSlug(s string) bool { return slugRE.MatchString(s) }

// CellLines returns the run-spec lines of a cell's text.
func CellLines(text string) []string {
	var lines []string
	for l := range strings.SplitSeq(text, "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		lines = append(lines, l)
	}
	return lines
}

// Info splits a fenced block's info string into its kind and name.
func Info(info string) (kind, name string) {
	f := strings.Fields(info)
	if len(f) == 0 {
		return "", ""
	}
	if len(f) > 1 {
		name = f[1]
	}
	return f[0], name
}

// Parse parses one lesson file. file is its base name (NN-slug.md).
func Parse(file string, src []byte) (*Lesson, error) {
	base := path.Base(file)
	slug, ok := strings.CutSuffix(base, ".md")
	if !ok || !IsSlug(slug) {
		return nil, fmt.Errorf("%s: a lesson file is named NN-slug.md with lowercase letters, digits and '-'", file)
	}
	l := &Lesson{File: base, Slug: slug, Meta: map[string]string{}}
	body, err := l.frontMatter(src)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", file, err)
	}
	l.Body = body
	l.BodyLine = bytes.Count(src[:len(src)-len(body)], []byte("\n")) + 1
	if err := l.blocks(); err != nil {
		return nil, fmt.Errorf("%s: %v", file, err)
	}
	return l, nil
}

func (l *Lesson) frontMatter(src []byte) ([]byte, error) {
	src = bytes.TrimPrefix(src, []byte("\ufeff"))
	rest, ok := bytes.CutPrefix(src, []byte("---\n"))
	if !ok {
		rest, ok = bytes.CutPrefix(src, []byte("---\r\n"))
	}
	if !ok {
		return nil, fmt.Errorf("missing front matter: start the file with a --- line, then title:, summary:, order:, then ---")
	}
	lineNo := 1
	for {
		lineNo++
		nl := bytes.IndexByte(rest, '\n')
		if nl < 0 {
			return nil, fmt.Errorf("front matter is not closed: add a --- line after it")
		}
		line := strings.TrimSpace(string(rest[:nl]))
		rest = rest[nl+1:]
		if line == "---" {
			break
		}
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			return nil, fmt.Errorf("line %d: %q in front matter is not key: value", lineNo, line)
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		v = strings.Trim(v, `"`)
		l.Meta[k] = v
		switch k {
		case "title":
			l.Title = v
		case "summary":
			l.Summary = v
		case "order":
			n, err := strconv.Atoi(v)
			if err != nil {
				return nil, fmt.Errorf("line %d: order %q: want an integer", lineNo, v)
			}
			l.Order = n
		}
	}
	if l.Title == "" {
		return nil, fmt.Errorf("front matter: title: is required")
	}
	if _, ok := l.Meta["order"]; !ok {
		// Fall back on the NN prefix of the file name.
		digits, _, _ := strings.Cut(l.Slug, "-")
		n, err := strconv.Atoi(digits)
		if err != nil {
			return nil, fmt.Errorf("front matter: order: is required when the file name has no NN- prefix")
		}
		l.Order = n
	}
	return rest, nil
}

// NewMarkdown returns a goldmark instance with the extensions lessons are
// written for (GitHub-flavoured tables, strikethrough, autolinks), so that
// Parse sees the same blocks the server's renderer does. opts are added.
func NewMarkdown(opts ...goldmark.Option) goldmark.Markdown {
	return goldmark.New(append([]goldmark.Option{goldmark.WithExtensions(extension.GFM)}, opts...)...)
}

func (l *Lesson) cellIDs() []string {
	var ids []string
	for _, c := range l.Cells {
		ids = append(ids, c.ID)
	}
	if ids == nil {
		return []string{"none"}
	}
	return ids
}

// BlockText returns the text of a fenced block as written.
func BlockText(fb *ast.FencedCodeBlock, src []byte) string {
	var b strings.Builder
	for i := 0; i < fb.Lines().Len(); i++ {
		seg := fb.Lines().At(i)
		b.Write(seg.Value(src))
	}
	return b.String()
}

// closed reports whether a fenced block has its closing fence. Markdown
// lets an unclosed fence run to the end of the document, which would turn
// the prose after a cell into run lines.
func closed(fb *ast.FencedCodeBlock, src []byte) bool {
	end := 0
	if n := fb.Lines().Len(); n > 0 {
		end = fb.Lines().At(n - 1).Stop
	} else if fb.Info != nil {
		end = fb.Info.Segment.Stop
	}
	rest := src[end:]
	if i := bytes.IndexByte(rest, '\n'); i >= 0 && (end == 0 || src[end-1] != '\n') {
		rest = rest[i+1:] // the rest of the info line
	}
	next, _, _ := bytes.Cut(rest, []byte("\n"))
	next = bytes.TrimLeft(next, " \t")
	return bytes.HasPrefix(next, []byte("```")) || bytes.HasPrefix(next, []byte("~~~"))
}

func lineOf(src []byte, fb *ast.FencedCodeBlock) int {
	off := 0
	if fb.Info != nil {
		off = fb.Info.Segment.Start
	} else if fb.Lines().Len() > 0 {
		off = fb.Lines().At(0).Start
	}
	return bytes.Count(src[:off], []byte("\n")) + 1
}

// Cell returns the cell with the given ID, or nil.
func (l *Lesson) Cell(id string) *Cell {
	for _, c := range l.Cells {
		if c.ID == id {
			return c
		}
	}
	return nil
}

// Quiz returns the quiz with the given id, or nil.
func (l *Lesson) Quiz(id string) *quiz.Quiz {
	for _, q := range l.Quizzes {
		if q.ID == id {
			return q
		}
	}
	return nil
}

// Load parses every *.md file at the root of fsys and returns the lessons
// sorted by order, then slug. README.md is skipped.
func Load(fsys fs.FS) ([]*Lesson, error) {
	names, err := fs.Glob(fsys, "*.md")
	if err != nil {
		return nil, err
	}
	var out []*Lesson
	orders := map[int]string{}
	for _, name := range names {
		if strings.EqualFold(name, "README.md") {
			continue
		}
		src, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, err
		}
		l, err := Parse(name, src)
		if err != nil {
			return nil, err
		}
		if other, ok := orders[l.Order]; ok {
			return nil, fmt.Errorf("%s: order %d is also used by %s", name, l.Order, other)
		}
		orders[l.Order] = name
		out = append(out, l)
	}
	slices.SortFunc(out, func(a, b *Lesson) int {
		if a.Order != b.Order {
			return a.Order - b.Order
		}
		return strings.Compare(a.Slug, b.Slug)
	})
	return out, nil
}
