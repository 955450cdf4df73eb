package server

// What differs by operating system: the run directory's owner lock and
// the error for a port already taken. os_unix.go has the same two. This
// file is built and vetted for Windows, not run, by this project's tests.

import (
	"errors"
	"os"

	"golang.org/x/sys/windows"
)

// tryLock takes an exclusive LockFileEx lock on the first byte of f
// without waiting; it fails at once when another process holds it.
// Windows releases the lock when the handle is closed or its process
// ends, as Linux does a flock.
func tryLock(f *os.File) error {
	var ol windows.Overlapped
	return windows.LockFileEx(windows.Handle(f.Fd()),
		windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, &ol)
}

// addrInUse reports whether a listen failed because the address is taken:
// Winsock's WSAEADDRINUSE, not the POSIX errno Go defines for Windows.
func addrInUse(err error) bool { return errors.Is(err, windows.WSAEADDRINUSE) }
