//go:build unix && !linux && !darwin

package vfs

import "golang.org/x/sys/unix"

// SyncCall names the system call Datasync makes on this operating system.
const SyncCall = "fsync"

// Datasync makes the data written to the open file fd durable. Where
// fdatasync(2) is not available it is fsync(2), which also flushes the
// file's timestamps. It retries only on EINTR.
func Datasync(fd uintptr) error {
	for {
		err := unix.Fsync(int(fd))
		if err != unix.EINTR {
			return err
		}
	}
}
