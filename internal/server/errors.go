package server

import (
	"errors"
	"fmt"

	"kvlab/internal/server/run"
)

// Sentinel errors. Their text reaches the page as it is (a websocket
// error message, a JSON reply's "error"), so each says what happened and
// what to do; test them with errors.Is. Refusals that carry numbers are
// types beside the code that refuses: *runq.QueueFullError and
// runq.ErrShuttingDown (package runq), *guard.AddrFullError (package guard).
var (
	// errTokenRequired refuses a run: quiz's measurement that does not
	// present the instructor token on a server that has one, as
	// package run refuses a cell's run.
	errTokenRequired = run.ErrTokenRequired

	// errQuizBusy refuses a run: quiz's measurement when maxQuizRuns are
	// already queued or running; POST /api/quiz answers it with 429.
	errQuizBusy = fmt.Errorf("server: %d quiz measurements are already queued or running, the most allowed: try again when they have finished", maxQuizRuns)

	// errRunCancelled is a run: quiz's measurement that ended without a
	// result for every line and without an error of its own (its job was
	// cancelled).
	errRunCancelled = errors.New("server: the run was cancelled")
)

// measuringError is POST /api/quiz's reply when a run: quiz cannot be
// measured: its lines are refused, or the measurement failed.
func measuringError(quizID string, err error) string {
	return "measuring for quiz " + quizID + ": " + err.Error()
}
