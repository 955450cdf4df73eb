// Package run owns a reader's run from its message to its result: the
// message a run socket reads (Msg), the sink its messages go back to
// (Sink), the checks of its where-from fields (CheckOrigin), of its token
// and of a reader's own code, and the check → admit → cancel of an
// Owner, which queues the runs it admits with the server's one runner
// (package runq) and cancels them when its reader goes.
//
// The server's /ws socket and a room follower's socket are transports
// over it: each hands the frames it reads to its reader's Owner (Receive;
// the follower's socket decodes first, to check what a follower may
// send) and sends back what the Owner's sink is given. A presenter's run
// for a room is fanned out by package liveclass, which the Owner reaches
// through Config.Room only.
//
// A lesson cell's run, file by file, from the frame the socket reads to
// the result it writes (each arrow a change of file; calls that only
// answer a question on the way, and return, are in brackets):
//
//	server/ws.go       client.readLoop reads the frame
//	run/owner.go       Owner.Receive: Decode, Handle, Run, check (token, origin)
//	runq/check.go      CheckCell: the lines against the limits and the budget
//	                   [lesson.CellLines, harness.ParseSpec, runq's addresses and budget]
//	run/owner.go       check: the reader's own code (checkSource); admit
//	                   [Config.Lesson: the lesson's cell; guard's caps]
//	runq/job.go        NewJob
//	run/owner.go       the job's fields; Submit
//	runq/runner.go     Submit
//	runq/queue.go      enqueue (queued goes to the sink); the job waits; next
//	runq/runner.go     runJob, runLine (started goes to the sink)
//	harness/head.go    ExecOutput: the harness runs the line and encodes its
//	                   result, with the result's typed head beside the JSON
//	runq/runner.go     sendResult, record: the archive record is filed from
//	                   the head (describe); the JSON is not decoded again
//	internal/archive   Archive.Add
//	runq/runner.go     the result message, with its run_id
//	server/ws.go       client.Send; writeLoop writes the frame
//
// That is 13 changes of file, and no decode of the result after the
// harness (a server that serves others sends and records the head's
// public form, harness.Output.Public, without decoding either).
//
// Files:
//
//	doc.go     this overview
//	errors.go  sentinel errors, prefixed run:
//	owner.go   the vocabulary of a run socket (Msg, Sink, Decode, CheckOrigin),
//	           then Config, Service and Owner: receive, check, admit, queue and
//	           cancel a reader's runs, and where a reader's own code may run
//	           (-engine mine, -script mine: checkSource)
package run
