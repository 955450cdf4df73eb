package server

// Access checks: who may use this server. A request that can start runs
// passes sameOrigin (its Origin header, if any, names this server),
// hostOK (without a token, its Host header names this machine) and, when
// the server has a token, tokenOK. token.go reads the token from the
// command line.

import (
	"crypto/subtle"
	"fmt"
	"net"
	"net/http"
	"strings"
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
// "this machine" behind both IsLoopback (the listen address) and hostOK
// (the Host header).
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

// hostOK reports whether a request that can start runs names this machine
// in its Host header. A server without a token relies on listening on
// loopback; a page from another site can still reach it by renaming
// itself to 127.0.0.1 (DNS rebinding), and then its Origin and Host agree.
// Such a request arrives with the attacker's name as Host, so runs are
// refused unless Host is localhost or a loopback address. With a token
// the token is the check.
func (s *Server) hostOK(r *http.Request) bool {
	if s.needToken {
		return true
	}
	// Browsers resolve every *.localhost name to loopback themselves
	// (RFC 6761), so in a Host header those names are this machine too.
	host := strings.TrimSuffix(strings.ToLower(hostOf(r.Host)), ".")
	return strings.HasSuffix(host, ".localhost") || loopbackHost(host)
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
	return fmt.Sprintf("Host %q is not this machine: without -token, labserver runs cells only for pages opened as localhost, 127.0.0.1 or [::1]; to serve other names, start it with -addr and -token", r.Host)
}

// tokenOK reports whether tok is the instructor token, or no token is
// needed. The comparison takes the same time whatever tok is.
func (s *Server) tokenOK(tok string) bool {
	if !s.needToken {
		return true
	}
	return subtle.ConstantTimeCompare([]byte(tok), []byte(s.cfg.Token)) == 1
}
