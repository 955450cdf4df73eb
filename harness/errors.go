package harness

import "errors"

// ErrWritesStopped is returned (wrapped) by a store's Put when a fault the
// run injected left no server that takes writes: pg-sync after -kill
// leader, since PostgreSQL does not promote a standby by itself. A client
// that gets it stops writing and waits out the run's -duration without
// recording more (the timeline shows the silence); it is not the run's
// error. The wrapping error says what stopped and why.
var ErrWritesStopped = errors.New("harness: writes stopped: no server takes writes after the fault")
