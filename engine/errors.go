package engine

import (
	"errors"
	"fmt"

	"kvlab/engine/vfs"
)

// Sentinel errors. Errors returned by the store wrap these with %w and add
// what was wrong (the file and offset, the size and the limit), so test them
// with errors.Is.
var (
	// ErrNotFound is returned by Get when the key has no live value: it was
	// never written or it was deleted.
	ErrNotFound = errors.New("engine: key not found")

	// ErrClosed is returned by every method called after Close.
	ErrClosed = errors.New("engine: store is closed")

	// ErrKeyTooLarge is returned by Put and Delete for a key longer than
	// MaxKeySize bytes, and for an empty key.
	ErrKeyTooLarge = errors.New("engine: key size out of range")

	// ErrValueTooLarge is returned by Put for a value longer than
	// MaxValueSize bytes. Values are never truncated.
	ErrValueTooLarge = errors.New("engine: value too large")

	// ErrNoOrder is returned by Scan on a store opened without the
	// ordered index (Options.Index = IndexOrdered): a hash index has no
	// key order to scan.
	ErrNoOrder = errors.New("engine: range scans need the ordered index")

	// ErrBadIndex is returned by ParseIndex for a name that is not an
	// index kind, and by Open for Options.Index out of range.
	ErrBadIndex = errors.New("engine: bad index kind")

	// ErrBatchTooLarge is returned by Apply for a batch whose records take
	// more than MaxBatchSize bytes. Nothing of the batch is written.
	ErrBatchTooLarge = errors.New("engine: batch too large")

	// ErrIndexFull is returned by Put, Delete and Apply when the keys in
	// the in-memory index take so much memory (about 31 GiB) that the
	// index could not reach a new one (keyindex.go). Deleting keys makes
	// room again once their bytes outweigh the live keys' (the index then
	// rewrites its arena).
	ErrIndexFull = errors.New("engine: index full")

	// ErrCorrupt is returned by Open when a record fails its checksum (or
	// does not decode) anywhere except a torn tail of the newest segment,
	// a tail after which no record decodes (recover.go), and by Get when a
	// record on disk no longer matches its checksum. The wrapping error
	// names the file and the byte offset. (A damaged hint file is not an
	// error: Open scans its segment instead.)
	ErrCorrupt = errors.New("engine: corrupt data")

	// ErrBadSync is returned by ParseSync for text that is not a sync policy
	// (wrapped in a *SyncError), and by Open for Options.Sync out of range.
	ErrBadSync = errors.New("engine: bad sync policy")

	// ErrFailed wraps the first fdatasync or write error. Once it happened
	// the store fails every later write with the same error and acknowledges
	// nothing more: after a failed fdatasync Linux marks the failed pages
	// clean although they never reached the disk, so retrying and then
	// reporting success would lie. A failed fdatasync of a segment also
	// truncates it back to what the last successful fdatasync covered
	// (writeback.go): every write up to Stats().DurableSeq is kept, and the
	// acknowledged writes after it are lost, as in a power cut, even if
	// the process goes on or restarts (Get of one fails with ErrFailed).
	// Close and reopen the store to continue; the reopened store holds the
	// writes up to that DurableSeq.
	ErrFailed = errors.New("engine: store failed; reopen it to continue")

	// ErrPowerLost is returned by every operation on a MemFS after its
	// Crash, and on the files opened from it: the simulated machine lost
	// power. A store on that MemFS fails with ErrFailed wrapping it.
	ErrPowerLost = vfs.ErrPowerLost
)

// SyncError is the error ParseSync returns for text that is not a sync
// policy. It wraps ErrBadSync. Reason is worded to follow the text on a
// command line, so a caller that names the flag can show
// "-sync batch:0: " + Reason.
type SyncError struct {
	Text   string // the text given to ParseSync
	Reason string // what was wrong and what is allowed, e.g. "batch:N needs N between 1 and 1048576"
}

func (e *SyncError) Error() string { return fmt.Sprintf("%v %q: %s", ErrBadSync, e.Text, e.Reason) }

// Unwrap returns ErrBadSync, so errors.Is(err, ErrBadSync) holds.
func (e *SyncError) Unwrap() error { return ErrBadSync }
