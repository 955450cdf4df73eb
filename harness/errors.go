package harness

import "errors"

// ErrWritesStopped is returned (wrapped) by a store's Put when a fault the
// run injected left no server that takes writes: pg-sync after -kill
// leader, since PostgreSQL does not promote a standby by itself. A client
// that gets it stops writing and waits out the run's -duration without
// recording more (the timeline shows the silence); it is not the run's
// error. The wrapping error says what stopped and why.
var ErrWritesStopped = errors.New("harness: writes stopped: no server takes writes after the fault")

// ErrToolMissing matches (errors.Is) the error of an engine whose servers
// are not installed on this machine: etcd's or PostgreSQL's binaries. The
// error itself (a MissingTool) says which, and how to install them.
var ErrToolMissing = errors.New("harness: the engine's servers are not installed")

// MissingTool is the error of an engine whose servers are not installed:
// its text names them and how to install them, and errors.Is(err,
// ErrToolMissing) holds for it.
type MissingTool string

func (m MissingTool) Error() string { return string(m) }

// Is makes errors.Is(m, ErrToolMissing) true.
func (m MissingTool) Is(target error) bool { return target == ErrToolMissing }
