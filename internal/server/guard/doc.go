// Package guard decides who may use labserver's server, and bounds what
// one client may take from the others. It uses the standard library and
// golang.org/x/time/rate only, and writes no replies: each check returns a verdict (a bool, or a status
// and the sentence to refuse with) that the caller turns into a page or a
// JSON error.
//
// Who may use the server:
//
//   - Host: every request but a static file's must name this server in
//     its Host header (HostOK), against DNS rebinding.
//   - Origin: a request that starts runs or writes must come from a page
//     this server served, or carry no Origin at all (SameOrigin); a JSON
//     request that stores or grades answers passes both this and Host
//     (APIAccess).
//   - The run token: on a server with one, every run presents it
//     (TokenOK). Wrong tokens and presenter secrets are counted per
//     address, and an address over the count is refused before any
//     comparison (TokenGuess).
//   - The presenter: the instructor acts from this machine or with the
//     presenter token (InstructorError); a room's presenter with the
//     room's secret, the presenter token, or from this machine on a
//     server without a token (PresenterError).
//
// What one client may take: runs queued or running per remote address
// (HoldAddr), open connections in all and per address (LimitListener),
// events per address in a window (Limiter), and students' writes per
// address and in all (WriteRate). Every refusal is logged
// through Refused, once a minute per address with the count of the ones
// not logged, so an instructor sees an abuser without the log flooding.
//
// Files:
//
//	guard.go     Config, Guard, New: one server's checks and counts
//	access.go    Host, Origin, loopback, the run token and counting wrong guesses
//	presenter.go the instructor and a room's presenter
//	limits.go    runs per address, the limit listener, the refusal log
//	limiter.go   events per key in fixed windows
//	writes.go    students' writes per address and in all, the refusal's delay
package guard
