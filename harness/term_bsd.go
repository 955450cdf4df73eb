//go:build darwin || freebsd

package harness

import "golang.org/x/sys/unix"

// ioctlReadTermios is the ioctl isTerminal asks a file for its terminal
// settings with.
const ioctlReadTermios = unix.TIOCGETA
