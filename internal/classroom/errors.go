package classroom

import "errors"

// Sentinel errors; returned errors wrap them with the detail.
var (
	// ErrBadCode is returned by ParseCode for text that is not a room code.
	ErrBadCode = errors.New("classroom: not a room code")
	// ErrPredictionsClosed is returned by Poll.Predict once the poll's
	// measurement has started.
	ErrPredictionsClosed = errors.New("classroom: predictions are closed")
	// ErrBadShare is returned by CheckShare for a body that is not a
	// probe or bench result as labserver emits it.
	ErrBadShare = errors.New("classroom: not a shareable result")
	// ErrOutOfBounds is returned by CheckShare for a result with a rate
	// or latency that is negative or past its physical bound
	// (MaxOpsPerSec, MaxLatencyNs).
	ErrOutOfBounds = errors.New("classroom: a value outside physical bounds")
	// ErrBallotCap is returned by Poll.Admit for a ballot over the poll's
	// caps per address or per browser.
	ErrBallotCap = errors.New("classroom: too many ballots")
	// ErrClosed is returned by Hub.Join once the hub is closed.
	ErrClosed = errors.New("classroom: the room is closed")
)
