//go:build unix

package server

// What differs by operating system: the run directory's owner lock and
// the error for a port already taken. os_windows.go has the same two.

import (
	"errors"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// tryLock takes an exclusive flock(2) on f without waiting; it fails at
// once when another process holds it. The kernel drops the lock when the
// file is closed or its process dies.
func tryLock(f *os.File) error {
	return unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
}

// addrInUse reports whether a listen failed because the address is taken.
func addrInUse(err error) bool { return errors.Is(err, syscall.EADDRINUSE) }
