package server

// The websocket at /ws speaks DESIGN.md's messages:
//
//	in  {"type":"run","id":"c1","cell":"bench -engine kv ..."}
//	in  {"type":"cancel","id":"c1"}
//	out {"type":"queued","id":"c1","position":2}
//	out {"type":"started","id":"c1","line":0,"spec":"bench ..."}
//	out {"type":"progress","id":"c1","line":0,"elapsed_seconds":1.0,"ops":4100,...}
//	out {"type":"result","id":"c1","line":0,"result":{...harness.Exec's JSON...}}
//	out {"type":"done","id":"c1"}
//	out {"type":"error","id":"c1","line":0,"message":"..."}
//
// "position" is the number of runs ahead of this one, the running one
// included: 0 means it starts now. A new queued message arrives each time
// the line moves. Each non-empty line of a cell that does not start with
// '#' is one run.
// Every line is checked before anything is queued: a bad line gets an
// error naming the line and the problem, then done, and nothing runs.
// Extensions: a run may carry "token" (else the ?token= query parameter
// of the websocket URL is used), and "lesson", "cell_id", "browser" and
// "repeat" for the run archive (runq.Origin); result carries "run_id" once
// the line is recorded, and "round" in a repeated run; done carries
// "cancelled":true when the run was cancelled.

// The incoming message, run or cancel, is run.Msg: the run websocket's
// and a room follower's socket's alike (package liveclass reads the
// follower's); a run.Owner checks, admits, queues and cancels its runs.

// The outgoing messages of a run are package runq's too (messages.go):
// runq.QueuedMsg, StartedMsg, ProgressMsg, ResultMsg, DoneMsg, ErrorMsg.
