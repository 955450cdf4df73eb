package runq

import (
	"encoding/json"

	"kvlab/harness"
)

// The messages a job's sink hears, as DESIGN.md's table, with additions
// only (docs/api.md lists them all): done carries "cancelled" when the run
// was stopped; progress carries the harness's progress fields, engine and
// run among them; error has "line" only when a line of the cell is at
// fault (a full queue or a bad message has none). The server's run
// websocket sends them as they are; a room's fan-out sink sends each one,
// encoded once, to the presenter and every follower.

// QueuedMsg tells a waiting job its place: the runs ahead of it, the
// running one included (0: it starts now).
type QueuedMsg struct {
	Type     string `json:"type"` // "queued"
	ID       string `json:"id"`
	Position int    `json:"position"`
}

// StartedMsg says line Line began.
type StartedMsg struct {
	Type string `json:"type"` // "started"
	ID   string `json:"id"`
	Line int    `json:"line"`
	Spec string `json:"spec"`
	// Round and Rounds say which round of a repeated job this is, 1-based,
	// and how many the job runs; both absent when it runs once.
	Round  int `json:"round,omitempty"`
	Rounds int `json:"rounds,omitempty"`
}

// ProgressMsg is a running line's progress, about once a second.
type ProgressMsg struct {
	Type string `json:"type"` // "progress"
	ID   string `json:"id"`
	Line int    `json:"line"`
	harness.Progress
}

// ResultMsg is one line's result, sent once it is recorded.
type ResultMsg struct {
	Type   string          `json:"type"` // "result"
	ID     string          `json:"id"`
	Line   int             `json:"line"`
	Result json.RawMessage `json:"result"`
	RunID  int64           `json:"run_id,omitempty"` // the run's id in the archive, once it is recorded
	Round  int             `json:"round,omitempty"`  // 1-based round of a repeated run
}

// DoneMsg ends a job: every job that was submitted gets exactly one.
type DoneMsg struct {
	Type      string `json:"type"` // "done"
	ID        string `json:"id"`
	Cancelled bool   `json:"cancelled,omitempty"`
}

// ErrorMsg says why a job, or one of its lines, failed or was refused.
type ErrorMsg struct {
	Type    string `json:"type"` // "error"
	ID      string `json:"id"`
	Line    *int   `json:"line,omitempty"` // the cell line at fault, when there is one
	Message string `json:"message"`
}

// LineP is a pointer to i, for ErrorMsg.Line.
func LineP(i int) *int { return &i }
