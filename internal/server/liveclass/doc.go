// Package liveclass is the live class: a presenter shows one lesson a section
// at a time, on a projector, to followers who joined with the room's
// code; the presenter's runs are shown to every follower as they happen,
// polls collect the class's predictions before a measurement settles
// them, and a board collects results students share from their own
// servers. The archive keeps each room, so a restart mid-class loses
// nothing and past classes can be read back.
//
// The server makes one Rooms (New) and routes to it (Route). The room
// reaches the server only through what Config gives it: the archive, the
// guard (who may present, per-address limits), the lessons by slug, the
// owner of a follower's own runs (package run's Service: the follower
// socket is a transport over it), the server's lifetime and its write
// gate. A presenter's run comes the other way: package run asks
// PresenterRun whether the run is for a room, and the Run it gets is the
// job's sink (run.Fanout), which encodes each message once for the
// presenter and every follower.
//
// Files, one job each:
//
//	rooms.go      Config, Rooms: the registry and its sweep, state and its fan-out; roomHTTP, its HTTP face, and its lookups by code
//	api.go        the HTTP API under /api/rooms: start, state, section, allow runs, close, QR code
//	polls.go      prediction polls: open, ballots, their updates
//	restore.go    the open rooms reloaded from the archive, with their polls and board
//	presenter.go  the presenter's runs: PresenterRun, the fan-out sink, a poll's measurement
//	followers.go  the follower socket: its limits; a follower's own runs are a run.Owner's
//	board.go      the class board: a shared result (the one cross-origin route), the board, a removal
//	pages.go      the pages: join, follower, presenter, board
//	sections.go   a lesson split into sections, one shown at a time
//	classes.go    pastClasses: past classes from the archive, /classes
//	redact.go     what a probe result hides in room mode
//
// Locks: each classroom.Room has its own (what it guards is package
// classroom's); Rooms holds none of its own. A room's lock is never held
// while another room's is taken. The archive's writes wait for its group
// commit: a ballot, a share and a presenter's run (on the presenter's
// socket reader) store without holding the room's lock; the presenter's
// HTTP actions store under it, which keeps their writes in order.
package liveclass
