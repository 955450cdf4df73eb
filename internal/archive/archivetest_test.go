package archive_test

import (
	"kvlab/internal/archive"
	"kvlab/internal/archive/archivetest"
)

// The package's own tests reach archivetest through archive.Synthetic
// and archive.Fill (synthetic_test.go).
func init() {
	archive.Synthetic, archive.Fill = archivetest.Synthetic, archivetest.Fill
}
