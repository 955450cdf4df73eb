package gohost

import "errors"

// ErrStopped is wrapped by every call into a Native after Stop: the
// interpreter no longer runs the student's code.
var ErrStopped = errors.New("gohost: the store's code was stopped")

// ErrNotOpen is returned by a Native's Put or Get before its Open has
// succeeded.
var ErrNotOpen = errors.New("gohost: the store is not open")
