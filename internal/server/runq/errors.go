package runq

import (
	"errors"
	"fmt"
	"time"
)

// ErrShuttingDown is Submit's refusal once Close has stopped the runner.
// Its text reaches the page as it is (a websocket error, a JSON reply's
// "error"), and says what to do; POST /api/quiz answers it with 503.
var ErrShuttingDown = errors.New("server: the server is shutting down and runs nothing more: start it again and retry")

// QueueFullError is Submit's refusal when the waiting line is at its cap.
type QueueFullError struct {
	Waiting int // jobs waiting when the new one was refused
}

func (e *QueueFullError) Error() string {
	return fmt.Sprintf("the run queue is full (%d runs waiting, the most the server keeps): try again when some have finished", e.Waiting)
}

// budgetSpentError is the cause of a job's context when its time budget
// runs out.
type budgetSpentError struct{ budget time.Duration }

func (e budgetSpentError) Error() string {
	return fmt.Sprintf("the cell used its whole time budget (-max-cell-time %v): it was stopped; ask for fewer runs or shorter ones", e.budget)
}
