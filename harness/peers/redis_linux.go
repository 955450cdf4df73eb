package peers

import (
	"os"
	"syscall"
)

// dieWithParent makes the kernel kill a started server when the process
// that started it dies, so a killed run leaves none behind. (Linux sends
// the signal when the starting OS thread exits; Go's runtime keeps its
// threads for the process's life.)
func dieWithParent() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// terminate asks a server to shut down cleanly.
var terminate os.Signal = syscall.SIGTERM
