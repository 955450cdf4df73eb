package guard

import (
	"crypto/subtle"
	"net/http"
)

// Presenter authority. Students are given the run token (-token): it
// lets them run cells, and nothing more. Who drives a room, and who reads
// the record of past classes, is decided here:
//
//   - The instructor starts a room from this machine (a same-origin page
//     or request from a loopback address), or from anywhere with the
//     presenter token (-presenter-token-file). The same opens /classes
//     and changes the share targets.
//   - Starting a room mints its presenter secret: the reply carries it
//     once, the presenter's browser keeps it, and the presenter's page
//     shows it once, for a second device. Every action on the room
//     (section, allow runs, polls, runs for the room, board removal,
//     close) needs the secret or the presenter token; on a server without
//     a token (loopback only) a request from this machine is the
//     presenter as well.
//
// The archive keeps only the secret's SHA-256, so a restarted server
// still knows the room's presenter.

// ErrPresenterNeeded ends every refusal of a presenter action.
const ErrPresenterNeeded = "only the room's presenter may do this: send the presenter secret the room's start returned (\"presenter\"), or the server's presenter token; the run token students are given does not present"

// PresenterTokenOK reports whether tok is the server's presenter token.
// The comparison takes the same time whatever tok is.
func (g *Guard) PresenterTokenOK(tok string) bool {
	return g.cfg.PresenterToken != "" && tok != "" && subtle.ConstantTimeCompare([]byte(tok), []byte(g.cfg.PresenterToken)) == 1
}

// InstructorError says why r may not act as the instructor (start a
// room, change the share targets), with the status to refuse with, or
// 0, "" when it may: same origin, and from this machine or with the
// presenter token.
func (g *Guard) InstructorError(r *http.Request, presenterTok string) (int, string) {
	if !SameOrigin(r) {
		return http.StatusForbidden, OriginError(r)
	}
	addr := RemoteHost(r)
	if presenterTok == "" && FromThisMachine(r) {
		return 0, ""
	}
	ok, throttled := g.TokenGuess(addr, presenterTok, func() bool { return g.PresenterTokenOK(presenterTok) || FromThisMachine(r) })
	switch {
	case throttled != "":
		return http.StatusTooManyRequests, throttled
	case ok:
		return 0, ""
	}
	g.Refused(addr, r.Method+" "+r.URL.Path+": not the instructor")
	if presenterTok != "" && g.cfg.PresenterToken != "" {
		return http.StatusForbidden, "the presenter token (\"presenter\") is wrong: it is the one this server was started with (-presenter-token), not the token students run cells with"
	}
	if g.cfg.PresenterToken == "" {
		return http.StatusForbidden, "only the instructor may do this: from the server's own machine (this server has no -presenter-token to do it from elsewhere)"
	}
	return http.StatusForbidden, "only the instructor may do this: from the server's own machine, or with the presenter token (\"presenter\")"
}

// Presented is what has a presenter secret of its own: a room.
type Presented interface {
	// PresenterOK reports whether secret is the presenter's.
	PresenterOK(secret string) bool
}

// PresenterError says why a request from addr carrying secret may not
// act as the presenter of p (named in the log as name), with the status
// to refuse with, or 0, "" when it may.
func (g *Guard) PresenterError(addr string, p Presented, name, secret string) (int, string) {
	if secret == "" && !g.NeedToken() && LoopbackHost(addr) {
		return 0, ""
	}
	ok, throttled := g.TokenGuess(addr, secret, func() bool {
		return p.PresenterOK(secret) || g.PresenterTokenOK(secret) || (!g.NeedToken() && LoopbackHost(addr))
	})
	switch {
	case throttled != "":
		return http.StatusTooManyRequests, throttled
	case ok:
		return 0, ""
	}
	g.Refused(addr, name+": not the presenter")
	return http.StatusForbidden, ErrPresenterNeeded
}
