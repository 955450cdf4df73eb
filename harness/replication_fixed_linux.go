package harness

import "golang.org/x/sys/unix"

// shmDir is Linux's memory filesystem for every user.
const shmDir = "/dev/shm"

// memFilesystemDir returns /dev/shm when it is a tmpfs, where fdatasync
// has nothing to write back, or "" and why not.
func memFilesystemDir() (dir, why string) {
	var st unix.Statfs_t
	if err := unix.Statfs(shmDir, &st); err != nil {
		return "", "no memory filesystem to take the flushes out: " + err.Error()
	}
	if st.Type != unix.TMPFS_MAGIC {
		return "", shmDir + " is not a tmpfs here, so a flush there would still reach a disk"
	}
	return shmDir, ""
}

// processAlive says whether a process with id pid exists (signal 0
// checks without sending; EPERM means it exists under another user).
func processAlive(pid int) bool {
	err := unix.Kill(pid, 0)
	return err == nil || err == unix.EPERM
}
