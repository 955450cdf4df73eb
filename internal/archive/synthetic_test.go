package archive

import "context"

// Synthetic and Fill are archivetest's: made-up runs, and an archive
// filled with many of them. This package's own tests cannot import
// archivetest (it imports archive), so the external test package sets
// them before any test runs (archivetest_test.go).
var (
	Synthetic func(i, seconds int) *Run
	Fill      func(ctx context.Context, a Archive, n, seconds int) error
)
