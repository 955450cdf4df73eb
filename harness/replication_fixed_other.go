//go:build !linux

package harness

// memFilesystemDir has no memory filesystem to offer outside Linux (macOS
// makes one only with hdiutil and diskutil, as root).
func memFilesystemDir() (dir, why string) {
	return "", "no memory filesystem here (the fixed term is measured on Linux's /dev/shm)"
}

// processAlive is never asked outside Linux (no memory filesystem, so
// nothing to sweep); it says yes, so nothing is removed.
func processAlive(pid int) bool { return true }
