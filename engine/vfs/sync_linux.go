package vfs

import "golang.org/x/sys/unix"

// SyncCall names the system call Datasync makes on this operating system.
const SyncCall = "fdatasync"

// Datasync makes the data written to the open file fd durable. On Linux it
// is fdatasync(2): it flushes the data and only the metadata needed to
// read it back (the size, if it changed), not timestamps. It retries only
// on EINTR (the call was interrupted before it did anything).
func Datasync(fd uintptr) error {
	for {
		err := unix.Fdatasync(int(fd))
		if err != unix.EINTR {
			return err
		}
	}
}
