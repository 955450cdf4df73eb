//go:build unix

package harness

// What the probe and the command line ask of any Unix (host_linux.go and
// host_bsd.go have the rest; host_windows.go the same for Windows).

import (
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// kernel is uname(2)'s system name and release, e.g. "Linux 6.18.44".
func kernel() string {
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return ""
	}
	return unix.ByteSliceToString(u.Sysname[:]) + " " + unix.ByteSliceToString(u.Release[:])
}

// freeBytes is the space an unprivileged user may still write under dir
// (statfs(2)'s available blocks), or 0 when it cannot be read.
func freeBytes(dir string) int64 {
	var st unix.Statfs_t
	if unix.Statfs(dir, &st) != nil {
		return 0
	}
	return int64(st.Bavail) * int64(st.Bsize)
}

// writeFd and pwriteFd are write(2) and pwrite(2) themselves, without
// os.File's locking and polling around them: the probe times the system
// call, not Go's wrapper.
func writeFd(fd int, b []byte) (int, error)             { return unix.Write(fd, b) }
func pwriteFd(fd int, b []byte, off int64) (int, error) { return unix.Pwrite(fd, b, off) }

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), ioctlReadTermios)
	return err == nil
}
