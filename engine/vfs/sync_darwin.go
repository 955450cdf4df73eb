package vfs

import "golang.org/x/sys/unix"

// SyncCall names the system call Datasync makes on this operating system.
const SyncCall = "F_FULLFSYNC"

// Datasync makes the data written to the open file fd durable. On macOS
// fsync(2) only hands the data to the drive, which may keep it in its
// volatile cache and lose it in a power cut; fcntl(F_FULLFSYNC) also asks
// the drive to flush that cache, so it is the call that matches Linux's
// fdatasync guarantee (and what Go's File.Sync does on macOS). Expect it
// to cost far more than fdatasync on the same hardware: the probe line
// names the call so results are not compared across the two unknowingly.
func Datasync(fd uintptr) error {
	for {
		_, err := unix.FcntlInt(fd, unix.F_FULLFSYNC, 0)
		if err == unix.ENOTSUP {
			// Some filesystems (SMB mounts) refuse F_FULLFSYNC; fsync is
			// the most they offer.
			err = unix.Fsync(int(fd))
		}
		if err != unix.EINTR {
			return err
		}
	}
}
