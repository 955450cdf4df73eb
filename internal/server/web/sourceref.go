package web

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"html/template"
	"io/fs"
	"net/http"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	gast "github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/renderer"
	"github.com/yuin/goldmark/util"

	"kvlab"
)

// Source references. A lesson names the code it talks about in code
// spans: a file (`engine/commit.go`), a folder (`engine/`), a function,
// test, type or field (`runPeriodic`, `TestFsyncFailureIsSticky`). The
// page links each one it can resolve to the binary's own copy of that
// source (kvlab.Source), served at /source/: the reader of a release
// reads the code of the build that runs their cells, at the declaration
// named. A name resolves in the files and folders the same paragraph
// names, a package-qualified one (engine.MemFS) in its package; a name that looks like Go (an inner capital, runPeriodic, or a
// Test/Benchmark name) also resolves alone when one file declares it. A
// plain word (`probe`, `none`) is left alone unless its paragraph names
// the file that declares it.

// SourcePrefix is where the source copy is served.
const SourcePrefix = "/source/"

// srcLoc is a declaration's place: file and 1-based line.
type srcLoc struct {
	Path string
	Line int
}

// SourceIndex is what can be linked to in a source tree: its files and
// folders, and where each top-level name (function, method, type, const,
// var, struct field) is declared.
type SourceIndex struct {
	FS    fs.FS
	files map[string]bool
	dirs  map[string]bool
	decls map[string][]srcLoc
}

// Source is the index of kvlab.Source, built once.
var Source = sync.OnceValue(func() *SourceIndex { return NewSourceIndex(kvlab.Source) })

// NewSourceIndex indexes the .go files of fsys. A file that does not
// parse is listed without its names.
func NewSourceIndex(fsys fs.FS) *SourceIndex {
	x := &SourceIndex{FS: fsys, files: map[string]bool{}, dirs: map[string]bool{}, decls: map[string][]srcLoc{}}
	fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() {
			if p != "." {
				x.dirs[p] = true
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") {
			return nil
		}
		x.files[p] = true
		src, err := fs.ReadFile(fsys, p)
		if err != nil {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, p, src, parser.SkipObjectResolution)
		if err != nil {
			return nil
		}
		add := func(id *ast.Ident) {
			if id != nil && id.Name != "_" {
				x.decls[id.Name] = append(x.decls[id.Name], srcLoc{p, fset.Position(id.Pos()).Line})
			}
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				add(d.Name)
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						add(s.Name)
						if st, ok := s.Type.(*ast.StructType); ok {
							for _, fld := range st.Fields.List {
								for _, n := range fld.Names {
									add(n)
								}
							}
						}
					case *ast.ValueSpec:
						for _, n := range s.Names {
							add(n)
						}
					}
				}
			}
		}
		return nil
	})
	return x
}

// goLike is a name that reads as Go rather than a word: an inner capital
// (runPeriodic, syncActive) or a test or benchmark's name.
var goLike = regexp.MustCompile(`^(?:[a-z]+[A-Z][A-Za-z0-9]*|(?:Test|Benchmark)[A-Z0-9_][A-Za-z0-9_]*)$`)

// ident is a Go name, possibly a method written Type.Name, and possibly
// followed by "()".
var ident = regexp.MustCompile(`^(?:\(?\*?[A-Za-z_][A-Za-z0-9_]*\)?\.)?([A-Za-z_][A-Za-z0-9_]*)(?:\(\))?$`)

// IsPath says whether text names a file or folder of the index.
func (x *SourceIndex) IsPath(text string) bool {
	return x.files[text] || (strings.HasSuffix(text, "/") && x.dirs[strings.TrimSuffix(text, "/")])
}

// Resolve returns the link for a code span's text, given the files and
// folders its paragraph names (near); ok is false when it names nothing
// the index can point to unambiguously.
func (x *SourceIndex) Resolve(text string, near []string) (href string, ok bool) {
	if x.IsPath(text) {
		return SourcePrefix + text, true
	}
	m := ident.FindStringSubmatch(text)
	if m == nil {
		return "", false
	}
	// A package-qualified name (engine.MemFS, calc.Rank) is in its
	// package's folder.
	if pkg, _, ok := strings.Cut(text, "."); ok && !strings.ContainsAny(pkg, "(*") {
		for d := range x.dirs {
			if path.Base(d) == pkg {
				near = append(near, d+"/")
			}
		}
	}
	locs := x.decls[m[1]]
	if len(locs) == 0 {
		return "", false
	}
	pick := func(keep func(srcLoc) bool) (srcLoc, bool) {
		var got []srcLoc
		for _, l := range locs {
			if keep(l) {
				got = append(got, l)
			}
		}
		if len(got) == 0 || slices.ContainsFunc(got, func(l srcLoc) bool { return l.Path != got[0].Path }) {
			return srcLoc{}, false
		}
		return got[0], true
	}
	l, found := pick(func(l srcLoc) bool {
		return slices.ContainsFunc(near, func(n string) bool {
			return l.Path == n || (strings.HasSuffix(n, "/") && path.Dir(l.Path) == strings.TrimSuffix(n, "/"))
		})
	})
	if !found && goLike.MatchString(m[1]) {
		l, found = pick(func(srcLoc) bool { return true })
	}
	if !found {
		return "", false
	}
	return SourcePrefix + l.Path + "#L" + strconv.Itoa(l.Line), true
}

// codeSpans renders inline code: a command's words each kept on one
// line (a narrow column wraps a command between its words, never at a
// flag's hyphen), and a source reference as a link to the source copy.
type codeSpans struct{}

// CodeSpans is the inline-code renderer every lesson page uses.
func CodeSpans() util.PrioritizedValue { return util.Prioritized(codeSpans{}, 100) }

func (codeSpans) RegisterFuncs(reg renderer.NodeRendererFuncRegisterer) {
	reg.Register(gast.KindCodeSpan, renderCodeSpan)
}

// spanText is a code span's text, a line break inside it read as a space.
func spanText(n gast.Node, src []byte) string {
	var b strings.Builder
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		if t, ok := c.(*gast.Text); ok {
			b.Write(t.Segment.Value(src))
			if t.SoftLineBreak() {
				b.WriteByte(' ')
			}
		}
	}
	return strings.ReplaceAll(b.String(), "\n", " ")
}

// nearPaths are the files and folders the block around n names in its
// code spans.
func nearPaths(x *SourceIndex, n gast.Node, src []byte) []string {
	b := n.Parent()
	for b != nil && b.Type() != gast.TypeBlock {
		b = b.Parent()
	}
	if b == nil {
		return nil
	}
	var near []string
	gast.Walk(b, func(c gast.Node, entering bool) (gast.WalkStatus, error) {
		if cs, ok := c.(*gast.CodeSpan); ok && entering {
			if t := spanText(cs, src); x.IsPath(t) {
				near = append(near, t)
			}
			return gast.WalkSkipChildren, nil
		}
		return gast.WalkContinue, nil
	})
	return near
}

func renderCodeSpan(w util.BufWriter, src []byte, n gast.Node, entering bool) (gast.WalkStatus, error) {
	if !entering {
		return gast.WalkContinue, nil
	}
	text := spanText(n, src)
	x := Source()
	href, link := x.Resolve(text, nearPaths(x, n, src))
	if link {
		w.WriteString(`<a class="src-ref" href="` + template.HTMLEscapeString(href) + `" title="Read it in this build's source">`)
	}
	w.WriteString(CodeHTML(text))
	if link {
		w.WriteString("</a>")
	}
	return gast.WalkSkipChildren, nil
}

// CodeHTML is inline code for text. A command's pieces keep to one line
// each: the command, then every flag with its value ("-value-size 128"),
// so a narrow column wraps a command between flags, never inside a word
// or at a flag's hyphen. One word keeps to one line (class nw) when it
// has a hyphen or slash a line could break at.
func CodeHTML(text string) string {
	words := strings.Fields(text)
	if len(words) <= 1 {
		if !strings.ContainsAny(text, "-/") {
			return `<code>` + template.HTMLEscapeString(text) + `</code>`
		}
		return `<code class="nw">` + template.HTMLEscapeString(text) + `</code>`
	}
	var pieces []string
	for _, f := range words {
		if n := len(pieces); n > 0 && !strings.HasPrefix(f, "-") && strings.HasPrefix(pieces[n-1], "-") && !strings.Contains(pieces[n-1], " ") {
			pieces[n-1] += " " + f
			continue
		}
		pieces = append(pieces, f)
	}
	var b strings.Builder
	b.WriteString("<code>")
	for i, p := range pieces {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(`<span class="nw">` + template.HTMLEscapeString(p) + `</span>`)
	}
	b.WriteString("</code>")
	return b.String()
}

// sourceLine is one numbered line of a source page.
type sourceLine struct {
	N    int
	Text string
}

// sourceLink is a named link of a source page: a crumb or a listed file.
type sourceLink struct{ Name, Href string }

// sourcePage is source.html's data: a file's lines or a folder's entries.
type sourcePage struct {
	Path    string
	Crumbs  []sourceLink
	Entries []sourceLink
	Lines   []sourceLine
}

// SourcePage serves GET /source/{path...} from x: a file with numbered
// lines (each line's anchor is #L<n>, where a reference's link lands), a
// folder as the list of what it holds, anything else the error page.
func (x *SourceIndex) SourcePage(w http.ResponseWriter, r *http.Request) {
	p := strings.TrimSuffix(r.PathValue("path"), "/")
	page := sourcePage{Path: p + "/"}
	if p == "" {
		p, page.Path = ".", "kvlab"
	}
	if p != "." {
		acc := ""
		for _, part := range strings.Split(p, "/") {
			acc = path.Join(acc, part)
			href := SourcePrefix + acc
			if x.dirs[acc] {
				href += "/"
			}
			page.Crumbs = append(page.Crumbs, sourceLink{part, href})
		}
	}
	switch {
	case x.files[p]:
		src, err := fs.ReadFile(x.FS, p)
		if err != nil {
			ErrorPage(w, http.StatusInternalServerError, "This source cannot be read", "The file is in the index but not readable.")
			return
		}
		page.Path = p
		for i, l := range strings.Split(strings.TrimSuffix(string(src), "\n"), "\n") {
			page.Lines = append(page.Lines, sourceLine{i + 1, l})
		}
	case p == "." || x.dirs[p]:
		ents, err := fs.ReadDir(x.FS, p)
		if err != nil {
			ErrorPage(w, http.StatusInternalServerError, "This source cannot be read", "The folder is in the index but not readable.")
			return
		}
		for _, e := range ents {
			name, href := e.Name(), SourcePrefix+path.Join(strings.TrimPrefix(p, "."), e.Name())
			if e.IsDir() {
				name, href = name+"/", href+"/"
			}
			page.Entries = append(page.Entries, sourceLink{name, href})
		}
	default:
		ErrorPage(w, http.StatusNotFound, "No such source file", "This server's copy of the source has the engine, the harness and the lessons' tests; there is no file or folder at this address in it.")
		return
	}
	var b bytes.Buffer
	if err := Execute(&b, "source.html", page); err != nil {
		ErrorPage(w, http.StatusInternalServerError, "Rendering the source failed", err.Error())
		return
	}
	WriteHTML(w, b.Bytes())
}
