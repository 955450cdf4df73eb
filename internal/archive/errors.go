package archive

import "errors"

// Sentinel errors; the errors returned wrap them with %w and add the
// detail (the id, the file, the versions), so test them with errors.Is.
var (
	// ErrNotFound is returned by Get for an id that has no run.
	ErrNotFound = errors.New("archive: no such run")

	// ErrNewerSchema is returned by Open when the database was written
	// by a newer labserver (its schema version is above the one this
	// build knows). Nothing is changed in it.
	ErrNewerSchema = errors.New("archive: database is from a newer labserver")

	// ErrClosed is returned by every method called after Close.
	ErrClosed = errors.New("archive: closed")

	// ErrBadTarget is returned by Open for a target that is neither ""
	// or "sqlite" nor a postgres:// or postgresql:// URL.
	ErrBadTarget = errors.New("archive: unknown archive target")
)
