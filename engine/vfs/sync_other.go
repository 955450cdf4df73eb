//go:build !unix && !windows

package vfs

import "errors"

// SyncCall names the system call Datasync makes on this operating system.
const SyncCall = "fsync"

// Datasync is not available here (GOOS=js, wasip1, plan9): these builds
// exist so that code running in a browser can use MemFS, which never
// calls it. OSFS on such a system fails every Sync with this error.
func Datasync(fd uintptr) error {
	return errors.New("engine: fdatasync is not available on this operating system")
}
