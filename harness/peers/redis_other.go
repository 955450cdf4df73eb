//go:build !linux

package peers

import (
	"os"
	"syscall"
)

// dieWithParent has no equivalent here: a server outlives a killed run
// until it is stopped by hand.
func dieWithParent() *syscall.SysProcAttr { return nil }

// terminate asks a server to shut down cleanly (SIGINT, which Redis
// treats as SIGTERM; on Windows it fails and the server is killed).
var terminate = os.Interrupt
