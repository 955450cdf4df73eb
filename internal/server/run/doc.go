// Package run owns a reader's run from its message to its result: the
// message a run socket reads (Msg), the sink its messages go back to
// (Sink), the checks of its where-from fields (CheckOrigin), of its token
// and of a reader's own code, and the check → admit → cancel of an
// Owner, which queues the runs it admits with the server's one runner
// (package runq) and cancels them when its reader goes.
//
// The server's /ws socket and a room follower's socket are transports
// over it: each decodes a message (Decode), hands it to its reader's
// Owner and sends back what the Owner's sink is given. A presenter's run
// for a room is fanned out by package liveclass, which the Owner reaches
// through Config.Room only.
//
// Files:
//
//	doc.go     this overview
//	errors.go  sentinel errors, prefixed run:
//	msg.go     Msg, Sink, Decode and CheckOrigin: the vocabulary of a run socket
//	owner.go   Config, Service and Owner: check, admit, queue and cancel a reader's runs
//	source.go  where a reader's own store's code may run (-engine mine)
package run
