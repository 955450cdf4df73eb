package server

// Access: package guard decides who may use this server; here its
// verdicts become replies. Every request but a static file's passes
// hostGate (ServeHTTP asks it); a JSON request that stores or grades
// answers passes apiAccessOK. token.go reads the tokens from the
// command line.

import (
	"fmt"
	"net/http"
	"strings"

	"kvlab/internal/server/guard"
	"kvlab/internal/server/web"
)

// hostGate refuses a request guard's HostOK turns down with 403: JSON
// for the API and the sockets, a page for the rest. It reports whether r
// may go on.
func (s *Server) hostGate(w http.ResponseWriter, r *http.Request) bool {
	if s.guard.HostOK(r) {
		return true
	}
	s.guard.Refused(guard.RemoteHost(r), fmt.Sprintf("Host %q is not a name of this server", r.Host))
	if strings.HasPrefix(r.URL.Path, "/api/") || strings.HasSuffix(r.URL.Path, "/ws") {
		web.JSONError(w, http.StatusForbidden, s.guard.HostError(r))
	} else {
		web.ErrorPage(w, http.StatusForbidden, "Not a name of this server", s.guard.HostError(r))
	}
	return false
}

// staticPath reports whether path is a static file (the page's scripts,
// styles and images: public, the same for everyone), which any Host may
// fetch.
func staticPath(path string) bool {
	return strings.HasPrefix(path, "/static/") || path == "/favicon.ico"
}

// apiAccessOK replies 403 to a JSON API request that stores or grades
// answers when guard refuses it (Guard.APIAccess); it reports whether r
// may go on.
func apiAccessOK(g *guard.Guard, w http.ResponseWriter, r *http.Request) bool {
	if err := g.APIAccess(r); err != nil {
		web.JSONError(w, http.StatusForbidden, err.Error())
		return false
	}
	return true
}
