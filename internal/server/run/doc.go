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
// The protocol. The server's /ws socket speaks DESIGN.md's messages,
// with additions only (docs/api.md lists them all):
//
//	in  {"type":"run","id":"c1","cell":"bench -engine kv ..."}
//	in  {"type":"cancel","id":"c1"}
//	out {"type":"queued","id":"c1","position":2}
//	out {"type":"started","id":"c1","line":0,"spec":"bench ..."}
//	out {"type":"progress","id":"c1","line":0,"elapsed_seconds":1.0,"ops":4100,...}
//	out {"type":"result","id":"c1","line":0,"result":{...the harness's JSON result...}}
//	out {"type":"done","id":"c1"}
//	out {"type":"error","id":"c1","line":0,"message":"..."}
//
// The two in are Msg, on /ws and on a room follower's socket alike; the
// out are package runq's (runq.QueuedMsg, StartedMsg, ProgressMsg,
// ResultMsg, DoneMsg, ErrorMsg), which a job's sink hears. "position" is
// the number of runs ahead of this one, the running one included: 0 means
// it starts now; a new queued message arrives each time the line moves.
// Each non-empty line of a cell that does not start with '#' is one run.
// Every line is checked before anything is queued: a bad line gets an
// error naming the line and the problem, then done, and nothing runs.
// Additions: a run may carry "token" (else the ?token= query parameter of
// the websocket URL is used), and "lesson", "cell_id", "browser" and
// "repeat" for the run archive (runq.Origin), "room", "poll" and
// "presenter" for a room, "source" and "script" for a reader's own code;
// result carries "run_id" once the line is recorded, and "round" in a
// repeated run; done carries "cancelled":true when the run was cancelled.
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
