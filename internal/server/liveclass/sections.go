package liveclass

import (
	"bytes"
	"fmt"
	"html/template"
	"regexp"

	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/renderer"
	"github.com/yuin/goldmark/renderer/html"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"

	"kvlab/internal/lesson"
	"kvlab/internal/server/web"
)

// A room shows a lesson one section at a time. A section is the part of
// the lesson under one `##` heading of the document's top level; section
// 0 is the title and the introduction before the first `##`, so a lesson
// with n such headings has n+1 sections, numbered in document order. The
// room's pages wrap each one in
//
//	<section class="room-section" data-section="N">
//
// and the presenter's navigation counts the same way (the room API
// bounds-checks section numbers against the lesson).

// sectionRenderer writes the section boundaries: it opens section 0 with
// the document, closes the current section and opens the next before each
// top-level level-2 heading, and closes the last with the document. It
// renders headings the way goldmark's HTML renderer does, ids included.
type sectionRenderer struct {
	n      int      // sections opened so far
	titles []string // the heading text of each section after the first
	src    []byte
}

func (r *sectionRenderer) RegisterFuncs(reg renderer.NodeRendererFuncRegisterer) {
	reg.Register(ast.KindDocument, r.renderDocument)
	reg.Register(ast.KindHeading, r.renderHeading)
}

func (r *sectionRenderer) renderDocument(w util.BufWriter, _ []byte, _ ast.Node, entering bool) (ast.WalkStatus, error) {
	if entering {
		r.open(w)
	} else {
		w.WriteString("</section>\n")
	}
	return ast.WalkContinue, nil
}

func (r *sectionRenderer) open(w util.BufWriter) {
	fmt.Fprintf(w, "<section class=\"room-section\" data-section=\"%d\" id=\"section-%d\">\n", r.n, r.n)
	r.n++
}

func (r *sectionRenderer) renderHeading(w util.BufWriter, _ []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	h := node.(*ast.Heading)
	if !entering {
		fmt.Fprintf(w, "</h%d>\n", h.Level)
		return ast.WalkContinue, nil
	}
	if h.Level == 2 && h.Parent() != nil && h.Parent().Kind() == ast.KindDocument {
		w.WriteString("</section>\n")
		r.titles = append(r.titles, web.NodeText(h, r.src))
		r.open(w)
	}
	fmt.Fprintf(w, "<h%d", h.Level)
	if h.Attributes() != nil {
		html.RenderAttributes(w, node, html.HeadingAttributeFilter)
	}
	w.WriteByte('>')
	return ast.WalkContinue, nil
}

// roomSection names one section for the room pages' section list.
type roomSection struct {
	N     int
	Title string
}

// renderSections renders a lesson's body for the room pages: the cells,
// quizzes and code blocks as on the lesson page, each section wrapped as
// described above. It returns the sections' titles (section 0 is named by
// the lesson's title).
func renderSections(l *lesson.Lesson) (template.HTML, []roomSection, error) {
	sr := &sectionRenderer{src: l.Body}
	md := web.NewMarkdown(renderer.WithNodeRenderers(
		web.Blocks(l),
		util.Prioritized(sr, 100),
	))
	doc := md.Parser().Parse(text.NewReader(l.Body))
	var b bytes.Buffer
	if err := md.Renderer().Render(&b, l.Body, doc); err != nil {
		return "", nil, fmt.Errorf("%s: %w", l.File, err)
	}
	secs := []roomSection{{N: 0, Title: l.Title}}
	for i, t := range sr.titles {
		secs = append(secs, roomSection{N: i + 1, Title: t})
	}
	return template.HTML(b.String()), secs, nil
}

// followerText rewrites what a lesson tells a reader who runs its cells
// into what it means on a follower's page, where the presenter runs
// them and there is no Run button: each pattern, then its replacement.
var followerText = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`Press <strong>Run</strong> \(or Shift\+Enter in the cell\)\.`), "The presenter runs it; its results appear here as they stream."},
	{regexp.MustCompile(`([Bb])efore you run (it|the cell|anything)\b`), "${1}efore the presenter runs ${2}"},
	{regexp.MustCompile(`(Predict|Answer) before you run:`), "$1 before the presenter runs it:"},
	{regexp.MustCompile(`([Tt])he cell stays locked until you have\s+answered\s+the\s+(\w+)\s+quizzes\s+below`), "${1}he presenter's run grades the ${2} quizzes below: answer them before it starts"},
}

// forFollowers is a lesson's rendered body as a follower's page shows it
// (followerText).
func forFollowers(body template.HTML) template.HTML {
	s := string(body)
	for _, f := range followerText {
		s = f.re.ReplaceAllString(s, f.with)
	}
	return template.HTML(s)
}
