package web

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"net/http"
	"regexp"
	"strings"
	"time"
)

//go:embed templates/*.html
var templateFS embed.FS

// pageTmpl is every page template, parsed once: a page names its template
// ("lesson.html"), a block its definition ("cell", "quiz").
var pageTmpl = template.Must(template.New("").Funcs(template.FuncMap{
	"join": strings.Join,
	"inc":  func(i int) int { return i + 1 },
	// code is inline code kept whole per word (CodeHTML).
	"code": func(s string) template.HTML { return template.HTML(CodeHTML(s)) },
}).ParseFS(templateFS, "templates/*.html"))

// Execute writes the template called name (a file such as "runs.html",
// or a definition such as "cell") with data to w.
func Execute(w io.Writer, name string, data any) error {
	return pageTmpl.ExecuteTemplate(w, name, data)
}

// RenderPage replies with the page template tmpl filled with data and
// the given status; a template that fails to execute becomes a 500 error
// page instead, never half a page.
func RenderPage(w http.ResponseWriter, status int, tmpl string, data any) {
	var b bytes.Buffer
	if err := pageTmpl.ExecuteTemplate(&b, tmpl, data); err != nil {
		ErrorPage(w, http.StatusInternalServerError, "Rendering the page failed", err.Error())
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(status)
	w.Write(b.Bytes())
}

// WriteHTML replies 200 with a page already rendered.
func WriteHTML(w http.ResponseWriter, page []byte) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.Write(page)
}

// ErrorPage replies with status code and the error page, in the site's
// layout: a title and a sentence that says what to do (Public: no
// package prefixes).
func ErrorPage(w http.ResponseWriter, code int, title, detail string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(code)
	pageTmpl.ExecuteTemplate(w, "error.html", struct {
		Title, Detail string
		Code          int
	}{title, Public(detail), code})
}

// NotFound is the error page of a URL no route serves.
func NotFound(w http.ResponseWriter, r *http.Request) {
	ErrorPage(w, http.StatusNotFound, "No such page", "There is no page at this address. The lessons are listed on the first page; a run's page is /runs/ID, a room's /room/CODE.")
}

// internalPrefix matches the names of the program's packages that its
// errors begin with ("archive: no such run"), at the start of a message
// or after a colon: words for a developer, not for a person reading a page.
var internalPrefix = regexp.MustCompile(`(^|: |\n)(?:(?:archive|classroom|server|room|runq|guard|runspage|web|cli|share): )+`)

// Public returns msg as a person reads it on a page or in a reply:
// without the package prefixes the program's errors carry.
func Public(msg string) string {
	return internalPrefix.ReplaceAllString(msg, "$1")
}

// WriteJSON replies with status code and v as JSON.
func WriteJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

// JSONError replies with status code and {"error": msg}, the one shape of
// every JSON route's refusal.
func JSONError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(map[string]string{"error": Public(msg)})
}

// TooManyRequests replies 429 with msg and Retry-After: 1 once wait has
// passed, or sooner when r's context ends or done is closed (the server
// shutting down): a refusal that waits (guard.WriteRefusedError).
func TooManyRequests(w http.ResponseWriter, r *http.Request, done <-chan struct{}, wait time.Duration, msg string) {
	t := time.NewTimer(wait)
	select {
	case <-t.C:
	case <-r.Context().Done():
	case <-done:
	}
	t.Stop()
	w.Header().Set("Retry-After", "1")
	JSONError(w, http.StatusTooManyRequests, msg)
}

// DecodeBody reads a JSON body of at most limit bytes into v, unknown
// fields refused; on failure it writes the error reply (413 for a body
// too large, else 400 naming want, the shape expected) and reports false.
func DecodeBody(w http.ResponseWriter, r *http.Request, limit int64, v any, want string) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, limit))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil && dec.More() {
		err = errors.New("more than one JSON value")
	}
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		JSONError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body larger than %d bytes", limit))
	case err != nil:
		JSONError(w, http.StatusBadRequest, "malformed request: "+err.Error()+" (want "+want+")")
	default:
		return true
	}
	return false
}

// MustMarshal is json.Marshal for the server's own message types, which
// always marshal: a failure is a broken invariant and panics.
func MustMarshal(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic("web: message does not marshal: " + err.Error())
	}
	return b
}
