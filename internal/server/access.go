package server

// Access checks: who may use this server. Every request but a static
// file's passes hostOK (its Host header names this server; ServeHTTP
// checks it). A request that can start runs also passes sameOrigin (its
// Origin header, if any, names this server) and, when the server has a
// token, tokenOK. token.go reads the token from the command line.

import (
	"crypto/subtle"
	"fmt"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"
)

// IsLoopback reports whether addr (host:port, :port or host) only accepts
// connections from this machine. "" and ":port" listen on every interface
// and so are not loopback, except the empty string, which means "not
// listening" (tests).
func IsLoopback(addr string) bool {
	if addr == "" {
		return true
	}
	return loopbackHost(hostOf(addr))
}

// loopbackHost reports whether host (no port; an IPv6 address may keep
// its brackets) is localhost or a loopback address. It is the one test of
// "this machine": for the listen address (IsLoopback), the Host header
// (hostOK) and a request's remote address (remoteHost: the room's
// presenter without a token, past classes).
func loopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// sameOrigin reports whether a browser request comes from a page this
// server served. Requests without Origin (curl, tests, same-origin GETs)
// pass.
func sameOrigin(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	i := strings.Index(origin, "://")
	if i < 0 {
		return false
	}
	return strings.EqualFold(origin[i+3:], r.Host)
}

// hostOK reports whether a request names this server in its Host
// header. ServeHTTP asks it of every request but a static file's, on
// every server: a page from another site can reach a server by renaming
// itself to the server's address (DNS rebinding), and then its Origin
// and Host agree, but its Host is the attacker's name.
//
// Every server accepts localhost, any *.localhost name (browsers resolve
// those to loopback themselves, RFC 6761) and loopback addresses. A
// server without a token listens on loopback only and accepts nothing
// else. A server with a token is reached from other machines, so it also
// accepts any IP address (rebinding needs a name the attacker's DNS
// answers for), this machine's host name (with and without .local) and
// the names given with -host.
func (s *Server) hostOK(r *http.Request) bool {
	host := strings.TrimSuffix(strings.ToLower(hostOf(r.Host)), ".")
	if host == "" {
		return false
	}
	if strings.HasSuffix(host, ".localhost") || loopbackHost(host) {
		return true
	}
	if !s.needToken {
		return false
	}
	return net.ParseIP(strings.Trim(host, "[]")) != nil || slices.Contains(s.hostNames, host)
}

// hostGate refuses a request hostOK turns down with 403: JSON for the
// API and the sockets, a page for the rest. It reports whether r may go on.
func (s *Server) hostGate(w http.ResponseWriter, r *http.Request) bool {
	if s.hostOK(r) {
		return true
	}
	s.refused(remoteHost(r), fmt.Sprintf("Host %q is not a name of this server", r.Host))
	if strings.HasPrefix(r.URL.Path, "/api/") || strings.HasSuffix(r.URL.Path, "/ws") {
		jsonError(w, http.StatusForbidden, s.hostError(r))
	} else {
		s.errorPage(w, http.StatusForbidden, "Not a name of this server", s.hostError(r))
	}
	return false
}

// staticPath reports whether path is a static file (the page's scripts,
// styles and images: public, the same for everyone), which any Host may
// fetch.
func staticPath(path string) bool {
	return strings.HasPrefix(path, "/static/") || path == "/favicon.ico"
}

// apiAccessOK checks a JSON API request that stores or grades answers
// with sameOrigin and hostOK, and replies 403 when it fails.
func (s *Server) apiAccessOK(w http.ResponseWriter, r *http.Request) bool {
	if !sameOrigin(r) {
		jsonError(w, http.StatusForbidden, "origin "+r.Header.Get("Origin")+" is not this server")
		return false
	}
	if !s.hostOK(r) {
		jsonError(w, http.StatusForbidden, s.hostError(r))
		return false
	}
	return true
}

// hostError is the refusal of a request hostOK turned down.
func (s *Server) hostError(r *http.Request) string {
	if s.needToken {
		return fmt.Sprintf("Host %q is not a name of this server: it answers IP addresses, localhost and %s; to serve another name, start it with -host NAME", r.Host, strings.Join(s.hostNames, ", "))
	}
	return fmt.Sprintf("Host %q is not this machine: without -token, labserver answers only pages opened as localhost, 127.0.0.1 or [::1]; to serve other names, start it with -addr and -token", r.Host)
}

// tokenOK reports whether tok is the instructor token, or no token is
// needed. The comparison takes the same time whatever tok is.
func (s *Server) tokenOK(tok string) bool {
	if !s.needToken {
		return true
	}
	return subtle.ConstantTimeCompare([]byte(tok), []byte(s.cfg.Token)) == 1
}

// hostNamesOf are the names a server with a token answers besides IP
// addresses and localhost: this machine's host name, with and without
// .local (mDNS), and extra (-host), lower case, without a port.
func hostNamesOf(extra []string) []string {
	var names []string
	add := func(n string) {
		n = strings.TrimSuffix(strings.ToLower(strings.TrimSpace(n)), ".")
		if n != "" && !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	if h, err := os.Hostname(); err == nil {
		add(h)
		add(strings.TrimSuffix(strings.ToLower(h), ".local") + ".local")
	}
	for _, n := range extra {
		add(n)
	}
	return names
}

// defaultMaxTokenFailures is -max-token-failures' default: wrong tokens
// and presenter secrets one address may send in a minute. A class of 60
// behind one NAT mistyping the token at the start stays under it; a
// script guessing is stopped after it.
const defaultMaxTokenFailures = 30

// tokenGuess checks one token or secret that addr sent: ok runs the
// comparison. An address that sent more than -max-token-failures wrong
// ones in the last minute is refused (throttled, a message for a 429)
// before any comparison; a wrong, non-empty value counts against it (a
// missing one is no guess).
func (s *Server) tokenGuess(addr, given string, ok func() bool) (good bool, throttled string) {
	now := time.Now()
	if s.authFails.Over(addr, now) {
		s.refused(addr, "token: too many wrong tokens or secrets")
		return false, fmt.Sprintf("%s sent more than %d wrong tokens or presenter secrets in a minute (-max-token-failures): wait a minute, and check the token", addr, s.cfg.MaxTokenFailures)
	}
	if ok() {
		return true, ""
	}
	if given != "" {
		s.authFails.Allow(addr, now)
	}
	return false, ""
}
