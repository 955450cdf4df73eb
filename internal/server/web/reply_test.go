package web

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// DecodeBody takes one JSON value of the wanted shape within its size,
// and otherwise replies with the error that says what was wrong: 413 for
// a body too large, 400 naming the shape wanted for the rest.
func TestDecodeBody(t *testing.T) {
	type req struct {
		Name string `json:"name"`
	}
	tests := []struct {
		body     string
		wantOK   bool
		wantCode int
		wantMsg  string
	}{
		{`{"name":"a"}`, true, 200, ""},
		{`{"name":"a","extra":1}`, false, 400, `unknown field "extra"`},
		{`{"name":"a"}{"name":"b"}`, false, 400, "more than one JSON value"},
		{`{"name":"` + strings.Repeat("x", 100) + `"}`, false, 413, "larger than 64 bytes"},
		{`[1]`, false, 400, `(want {"name":"..."})`},
	}
	for _, tt := range tests {
		w := httptest.NewRecorder()
		r := httptest.NewRequest("POST", "/api/x", strings.NewReader(tt.body))
		var v req
		ok := DecodeBody(w, r, 64, &v, `{"name":"..."}`)
		if ok != tt.wantOK {
			t.Errorf("%s: ok %v, want %v", tt.body, ok, tt.wantOK)
			continue
		}
		if ok {
			if v.Name != "a" {
				t.Errorf("%s: decoded %+v", tt.body, v)
			}
			continue
		}
		var reply map[string]string
		if w.Code != tt.wantCode || json.Unmarshal(w.Body.Bytes(), &reply) != nil || !strings.Contains(reply["error"], tt.wantMsg) {
			t.Errorf("%s: %d %s, want %d and an error containing %q", tt.body, w.Code, w.Body, tt.wantCode, tt.wantMsg)
		}
	}
}

// A page whose template fails is a 500 error page, never half a page.
func TestRenderPageFailure(t *testing.T) {
	w := httptest.NewRecorder()
	RenderPage(w, http.StatusOK, "no-such-template.html", nil)
	if w.Code != http.StatusInternalServerError || !strings.Contains(w.Body.String(), "Rendering the page failed") {
		t.Errorf("got %d:\n%s\nwant 500 and the error page", w.Code, w.Body)
	}
}

// InlineMarkdown renders one line without its paragraph, and raw HTML in
// it is left out (lessons are Markdown, not HTML).
func TestInlineMarkdown(t *testing.T) {
	got := InlineMarkdown("a *b* `c` <script>alert(1)</script>")
	if strings.HasPrefix(got, "<p>") || !strings.Contains(got, "<em>b</em>") || !strings.Contains(got, "<code>c</code>") || strings.Contains(got, "<script>") {
		t.Errorf("got %q", got)
	}
}
