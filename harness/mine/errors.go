package mine

import "errors"

var (
	// ErrNoDelete is returned by Delete: the exercises' stores have Put
	// and Get only.
	ErrNoDelete = errors.New("mine: your store has no Delete; use a workload of Puts and Gets (fillseq, fillrandom, overwrite, readrandom)")
	// ErrTooManyBytes is returned by a write past maxBytes.
	ErrTooManyBytes = errors.New("mine: the store wrote more than its directory may hold")
)
