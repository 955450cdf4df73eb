//go:build unix && !linux && !darwin

package harness

import (
	"runtime"

	"golang.org/x/sys/unix"
)

// syncMethods are the portable ways to make a write durable; the others
// are reported as not measured here.
func syncMethods() []syncMethod {
	return []syncMethod{
		{name: "write+fdatasync", refused: "not measured on " + runtime.GOOS},
		{name: "write+fsync", sync: unix.Fsync},
		{name: "O_DSYNC write", refused: "not measured on " + runtime.GOOS},
		{name: "O_DIRECT|O_DSYNC write", refused: "not measured on " + runtime.GOOS},
	}
}
