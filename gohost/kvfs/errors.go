package kvfs

import "errors"

// Errors a student's code can meet besides the ones of the engine.FS
// (a missing file, IsNotExist; a full disk).
var (
	// ErrTooManyOps is returned by every operation once the FS has done
	// Config.MaxOps of them: a store that loops writing is stopped here.
	ErrTooManyOps = errors.New("kvfs: too many filesystem operations")
	// ErrClosed is returned by a File's methods after Close.
	ErrClosed = errors.New("kvfs: file already closed")
)
