package server

import (
	"testing"

	"kvlab/harness"
	"kvlab/internal/apidoc"
	"kvlab/internal/archive"
	"kvlab/internal/server/run"
	"kvlab/internal/server/runq"
)

// apiDoc is docs/api.md, the reference scripts are written against,
// relative to this package's directory.
const apiDoc = "../../docs/api.md"

// apiTypes are the values whose JSON docs/api.md documents: the results
// of every command, the websocket messages in and out, and the quiz
// endpoints' request and replies. Nested struct types are followed.
var apiTypes = []any{
	harness.BenchResult{},
	harness.ProbeResult{},
	harness.ModelResult{},
	harness.CrashResult{},
	harness.ScriptResult{},
	run.Msg{},
	runq.QueuedMsg{},
	runq.StartedMsg{},
	runq.ProgressMsg{},
	runq.ResultMsg{},
	runq.DoneMsg{},
	runq.ErrorMsg{},
	quizRequest{},
	quizReply{},
	placeReply{},
	archive.Run{},
	archive.Comparison{},
	// The room's are package liveclass's (its own TestAPIDoc); the share targets are this server's.
	shareTargetRequest{},
	archive.Room{},
	archive.Poll{},
	archive.BoardEntry{},
}

// TestAPIDoc fails when a JSON field exists in the code but docs/api.md
// does not name it as `name` (the room's wire types are checked by
// package liveclass's own test).
func TestAPIDoc(t *testing.T) {
	apidoc.Check(t, apiDoc, 50, apiTypes...)
}
