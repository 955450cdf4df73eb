package server

import (
	"fmt"
	"html"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"kvlab/lessons"
)

// Every mention of the source in a lesson — a file or folder
// (`engine/commit.go`, `engine/`), a test or benchmark, a function named
// in camel case, a package's name (`engine.MemFS`), or any name its
// paragraph says is in a file
// (`runPeriodic` and `syncActive` in `engine/commit.go`) — is a link to
// this build's copy of the source, which serves that file, with the link's
// line declaring that name. A reader of the release binary then reads
// the code without a checkout. The mentions are found from the lessons'
// Markdown and the source on disk, not from the page.
func TestLessonSourceReferences(t *testing.T) {
	ts := startServer(t, newServer(t, func(c *Config) { c.Lessons = lessons.FS }))
	mds, err := fs.Glob(lessons.FS, "*.md")
	if err != nil || len(mds) == 0 {
		t.Fatalf("no lessons (%v)", err)
	}
	const root = "../../"
	span := regexp.MustCompile("`([^`\n]+)`")
	pathLike := regexp.MustCompile(`^[a-z][a-z0-9_]*/(?:[a-z0-9_./]*)$`)
	goName := regexp.MustCompile(`^(?:[a-z]+[A-Z][A-Za-z0-9]*|[A-Z][A-Za-z0-9_]*)$`)
	testName := regexp.MustCompile(`^(?:Test|Benchmark)[A-Z0-9_][A-Za-z0-9_]*$`)
	camel := regexp.MustCompile(`^[a-z]+[A-Z][A-Za-z0-9]*$`)
	qualified := regexp.MustCompile(`^(engine|harness|calc|crashtest)\.([A-Z][A-Za-z0-9]*)$`)
	pkgDir := map[string]string{"engine": "engine/", "harness": "harness/", "calc": "harness/calc/", "crashtest": "engine/crashtest/"}
	// declares reports whether the Go files of p (a file, or a folder's
	// files) declare name.
	declares := func(p, name string) bool {
		files := []string{root + p}
		if strings.HasSuffix(p, "/") {
			files, _ = filepath.Glob(root + p + "*.go")
		}
		decl := regexp.MustCompile(`(?m)^(?:func (?:\([^)]*\) )?` + name + `[(\[]|type ` + name + `\b|\t` + name + `\b|(?:const|var) ` + name + `\b)`)
		for _, f := range files {
			if b, err := os.ReadFile(f); err == nil && decl.Match(b) {
				return true
			}
		}
		return false
	}
	refs := 0
	for _, md := range mds {
		src, _ := fs.ReadFile(lessons.FS, md)
		page := getBody(t, ts.URL+"/lessons/"+strings.TrimSuffix(md, ".md"))
		links := srcLinks(page)
		for _, para := range proseParagraphs(string(src)) {
			var paths, names []string
			var quals [][]string
			for _, m := range span.FindAllStringSubmatch(para, -1) {
				s := m[1]
				if pathLike.MatchString(s) && (strings.HasSuffix(s, ".go") || strings.HasSuffix(s, "/")) {
					if _, err := os.Stat(root + s); err == nil {
						paths = append(paths, s)
					}
				} else if goName.MatchString(s) {
					names = append(names, s)
				} else if m := qualified.FindStringSubmatch(s); m != nil {
					quals = append(quals, m)
				}
			}
			want := map[string]string{} // mention -> the file or folder it is in
			for _, p := range paths {
				want[p] = p
			}
			for _, n := range names {
				for _, p := range paths {
					if declares(p, n) {
						want[n] = p
					}
				}
				if _, ok := want[n]; !ok && (testName.MatchString(n) || camel.MatchString(n)) {
					if in := repoDeclares(root, n); len(in) == 1 {
						want[n] = in[0]
					}
				}
			}
			for _, q := range quals {
				if declares(pkgDir[q[1]], q[2]) {
					want[q[0]] = pkgDir[q[1]]
				}
			}
			for mention, in := range want {
				refs++
				href, ok := links[mention]
				if !ok {
					t.Errorf("%s: `%s` (in %s) is not a link to the source", md, mention, in)
					continue
				}
				file, frag, _ := strings.Cut(strings.TrimPrefix(href, "/source/"), "#")
				if !strings.HasPrefix(href, "/source/") || !(file == strings.TrimSuffix(in, "/") || file == in || strings.HasPrefix(file, in)) {
					t.Errorf("%s: `%s` links to %q, want a page of /source/%s", md, mention, href, in)
					continue
				}
				body := getBody(t, ts.URL+"/source/"+file)
				if frag == "" {
					continue
				}
				n, err := strconv.Atoi(strings.TrimPrefix(frag, "L"))
				b, _ := os.ReadFile(root + file)
				lines := strings.Split(string(b), "\n")
				if err != nil || n < 1 || n > len(lines) || !regexp.MustCompile(`\b`+mention[strings.LastIndex(mention, ".")+1:]+`\b`).MatchString(lines[n-1]) || !strings.Contains(body, fmt.Sprintf(`id="L%d"`, n)) {
					t.Errorf("%s: `%s` links to %s, whose line does not declare it", md, mention, href)
				}
			}
		}
	}
	if refs < 10 {
		t.Errorf("found %d source mentions in the lessons, want at least 10 (lessons 4 to 7 name engine files and tests)", refs)
	}
	// An address outside the copy is the site's 404 page.
	resp, err := http.Get(ts.URL + "/source/engine/nosuch.go")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("/source/engine/nosuch.go: %d, want 404", resp.StatusCode)
	}
}

// proseParagraphs are md's paragraphs and list items outside fenced blocks.
func proseParagraphs(md string) []string {
	var out []string
	var cur strings.Builder
	fenced := false
	flush := func() {
		if cur.Len() > 0 {
			out = append(out, cur.String())
			cur.Reset()
		}
	}
	for _, l := range strings.Split(md, "\n") {
		if strings.HasPrefix(l, "```") {
			fenced = !fenced
			flush()
			continue
		}
		if fenced {
			continue
		}
		if strings.TrimSpace(l) == "" || strings.HasPrefix(l, "- ") || regexp.MustCompile(`^\d+\. `).MatchString(l) {
			flush()
		}
		cur.WriteString(l + "\n")
	}
	flush()
	return out
}

// srcLinks maps the text of each source link on page to its href.
func srcLinks(page string) map[string]string {
	out := map[string]string{}
	tag := regexp.MustCompile(`<[^>]+>`)
	for _, m := range regexp.MustCompile(`<a class="src-ref" href="([^"]+)"[^>]*>(.*?)</a>`).FindAllStringSubmatch(page, -1) {
		out[html.UnescapeString(tag.ReplaceAllString(m[2], ""))] = html.UnescapeString(m[1])
	}
	return out
}

// repoDeclares lists the Go files under engine/, harness/ and lessons/
// that declare name as a function, type or test.
func repoDeclares(root, name string) []string {
	decl := regexp.MustCompile(`(?m)^(?:func (?:\([^)]*\) )?` + name + `[(\[]|type ` + name + `\b)`)
	var in []string
	for _, dir := range []string{"engine", "engine/crashtest", "harness", "harness/calc", "lessons"} {
		files, _ := filepath.Glob(root + dir + "/*.go")
		for _, f := range files {
			if b, err := os.ReadFile(f); err == nil && decl.Match(b) {
				in = append(in, strings.TrimPrefix(f, root))
			}
		}
	}
	return in
}

// getBody is the body of a GET of url, which must answer 200.
func getBody(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v", url, resp.StatusCode, err)
	}
	return string(b)
}
