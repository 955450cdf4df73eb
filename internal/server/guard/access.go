package guard

import (
	"crypto/subtle"
	"errors"
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
	return LoopbackHost(HostOf(addr))
}

// LoopbackHost reports whether host (no port; an IPv6 address may keep
// its brackets) is localhost or a loopback address. It is the one test of
// "this machine": for the listen address (IsLoopback), the Host header
// (HostOK) and a request's remote address (FromThisMachine: the room's
// presenter without a token, past classes).
func LoopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// HostOf is the host part of addr (host:port), or addr when it has no port.
func HostOf(addr string) string {
	h, _, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	return h
}

// RemoteHost is the host part of the request's remote address: the
// address every per-address count and refusal is kept under.
func RemoteHost(r *http.Request) string { return HostOf(r.RemoteAddr) }

// FromThisMachine reports whether r comes from a loopback address.
func FromThisMachine(r *http.Request) bool { return LoopbackHost(RemoteHost(r)) }

// SameOrigin reports whether a browser request comes from a page this
// server served. Requests without Origin (curl, tests, same-origin GETs)
// pass.
func SameOrigin(r *http.Request) bool {
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

// OriginError is the refusal of a request SameOrigin turned down.
func OriginError(r *http.Request) string {
	return "origin " + r.Header.Get("Origin") + " is not this server"
}

// HostOK reports whether a request names this server in its Host
// header. The server asks it of every request but a static file's, on
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
func (g *Guard) HostOK(r *http.Request) bool {
	host := strings.TrimSuffix(strings.ToLower(HostOf(r.Host)), ".")
	if host == "" {
		return false
	}
	if strings.HasSuffix(host, ".localhost") || LoopbackHost(host) {
		return true
	}
	if !g.NeedToken() {
		return false
	}
	return net.ParseIP(strings.Trim(host, "[]")) != nil || slices.Contains(g.hostNames, host)
}

// HostError is the refusal of a request HostOK turned down.
func (g *Guard) HostError(r *http.Request) string {
	if g.NeedToken() {
		return fmt.Sprintf("Host %q is not a name of this server: it answers IP addresses, localhost and %s; to serve another name, start it with -host NAME", r.Host, strings.Join(g.hostNames, ", "))
	}
	return fmt.Sprintf("Host %q is not this machine: without -token, labserver answers only pages opened as localhost, 127.0.0.1 or [::1]; to serve other names, start it with -addr and -token", r.Host)
}

// APIAccess is the verdict on a JSON API request that stores or grades
// answers, which anyone with the page or a room's code may make: nil, or
// why it is refused (403): it comes from another origin (SameOrigin), or
// names a Host that is not this server (HostOK).
func (g *Guard) APIAccess(r *http.Request) error {
	if !SameOrigin(r) {
		return errors.New(OriginError(r))
	}
	if !g.HostOK(r) {
		return errors.New(g.HostError(r))
	}
	return nil
}

// TokenOK reports whether tok is the run token, or no token is needed.
// The comparison takes the same time whatever tok is.
func (g *Guard) TokenOK(tok string) bool {
	if !g.NeedToken() {
		return true
	}
	return subtle.ConstantTimeCompare([]byte(tok), []byte(g.cfg.Token)) == 1
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

// TokenGuess checks one token or secret that addr sent: ok runs the
// comparison. An address that sent more than MaxTokenFailures wrong
// ones in the last minute is refused (throttled, a message for a 429)
// before any comparison; a wrong, non-empty value counts against it (a
// missing one is no guess).
func (g *Guard) TokenGuess(addr, given string, ok func() bool) (good bool, throttled string) {
	now := time.Now()
	if g.authFails.Over(addr, now) {
		g.Refused(addr, "token: too many wrong tokens or secrets")
		return false, fmt.Sprintf("%s sent more than %d wrong tokens or presenter secrets in a minute (-max-token-failures): wait a minute, and check the token", addr, g.cfg.MaxTokenFailures)
	}
	if ok() {
		return true, ""
	}
	if given != "" {
		g.authFails.Allow(addr, now)
	}
	return false, ""
}
