package server

import (
	"crypto/subtle"
	"net/http"

	"kvlab/internal/classroom"
)

// Presenter authority. Students are given the run token (-token): it
// lets them run cells, and nothing more. Who drives a room, and who reads
// the record of past classes, is decided here:
//
//   - The instructor starts a room from this machine (a same-origin page
//     or request from a loopback address), or from anywhere with the
//     presenter token (-presenter-token-file). The same opens /classes
//     and changes the share targets.
//   - Starting a room mints its presenter secret (classroom.NewSecret):
//     the reply carries it once, the presenter's browser keeps it, and
//     the presenter's page shows it once, for a second device. Every
//     action on the room (section, allow runs, polls, runs for the room,
//     board removal, close) needs the secret or the presenter token; on
//     a server without a token (loopback only) a request from this
//     machine is the presenter as well.
//
// The archive keeps only the secret's SHA-256, so a restarted server
// still knows the room's presenter.

// errPresenterNeeded ends every refusal of a presenter action.
const errPresenterNeeded = "only the room's presenter may do this: send the presenter secret the room's start returned (\"presenter\"), or the server's presenter token; the run token students are given does not present"

// presenterTokenOK reports whether tok is the server's presenter token.
// The comparison takes the same time whatever tok is.
func (s *Server) presenterTokenOK(tok string) bool {
	return s.cfg.PresenterToken != "" && tok != "" && subtle.ConstantTimeCompare([]byte(tok), []byte(s.cfg.PresenterToken)) == 1
}

// instructorError says why r may not act as the instructor (start a
// room, change the share targets), with the status to refuse with, or
// 0, "" when it may: same origin, and from this machine or with the
// presenter token.
func (s *Server) instructorError(r *http.Request, presenterTok string) (int, string) {
	if !sameOrigin(r) {
		return http.StatusForbidden, "origin " + r.Header.Get("Origin") + " is not this server"
	}
	addr := remoteHost(r)
	if presenterTok == "" && fromThisMachine(r) {
		return 0, ""
	}
	ok, throttled := s.tokenGuess(addr, presenterTok, func() bool { return s.presenterTokenOK(presenterTok) || fromThisMachine(r) })
	switch {
	case throttled != "":
		return http.StatusTooManyRequests, throttled
	case ok:
		return 0, ""
	}
	s.refused(addr, r.Method+" "+r.URL.Path+": not the instructor")
	if presenterTok != "" && s.cfg.PresenterToken != "" {
		return http.StatusForbidden, "the presenter token (\"presenter\") is wrong: it is the one this server was started with (-presenter-token), not the token students run cells with"
	}
	if s.cfg.PresenterToken == "" {
		return http.StatusForbidden, "only the instructor may do this: from the server's own machine (this server has no -presenter-token to do it from elsewhere)"
	}
	return http.StatusForbidden, "only the instructor may do this: from the server's own machine, or with the presenter token (\"presenter\")"
}

// roomPresenterError says why a request from addr carrying secret may
// not act as room's presenter, with the status to refuse with, or 0, ""
// when it may.
func (s *Server) roomPresenterError(addr string, room *classroom.Room, secret string) (int, string) {
	if secret == "" && !s.needToken && loopbackHost(addr) {
		return 0, ""
	}
	ok, throttled := s.tokenGuess(addr, secret, func() bool {
		return room.PresenterOK(secret) || s.presenterTokenOK(secret) || (!s.needToken && loopbackHost(addr))
	})
	switch {
	case throttled != "":
		return http.StatusTooManyRequests, throttled
	case ok:
		return 0, ""
	}
	s.refused(addr, "room "+classroom.FormatCode(room.Code)+": not the presenter")
	return http.StatusForbidden, errPresenterNeeded
}
