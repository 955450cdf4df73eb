package server

import (
	"io/fs"
	"net/http"
	"strings"
	"testing"

	"kvlab/static"
)

// TestStaticModules serves every JavaScript file of kvlab/static the way
// the page loads it: a module is only run when its Content-Type is a
// JavaScript type, and each carries an ETag a reload revalidates.
func TestStaticModules(t *testing.T) {
	s := newServer(t, nil)
	names, err := fs.Glob(static.FS, "*.js")
	if err != nil || len(names) < 8 {
		t.Fatalf("static .js files: got %v (%v), want the page's modules", names, err)
	}
	for _, name := range names {
		w := get(t, s, "/static/"+name)
		if w.Code != http.StatusOK || !strings.HasPrefix(w.Header().Get("Content-Type"), "text/javascript") {
			t.Errorf("GET /static/%s: got %d %q, want 200 text/javascript", name, w.Code, w.Header().Get("Content-Type"))
			continue
		}
		tag := w.Header().Get("ETag")
		if tag == "" {
			t.Errorf("GET /static/%s: no ETag", name)
			continue
		}
		if again := get(t, s, "/static/"+name, "If-None-Match", tag); again.Code != http.StatusNotModified {
			t.Errorf("GET /static/%s If-None-Match %s: got %d, want 304", name, tag, again.Code)
		}
	}
}
