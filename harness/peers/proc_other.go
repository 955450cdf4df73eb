//go:build !linux

package peers

import (
	"errors"
	"os"
	"syscall"
)

// Starting the servers a run measures (redis-server, postgres).

// dieWithParent has no equivalent here: a server outlives a killed run
// until it is stopped by hand.
func dieWithParent() *syscall.SysProcAttr { return nil }

// terminate asks a server to shut down cleanly (SIGINT, which Redis
// treats as SIGTERM; on Windows it fails and the server is killed).
var terminate = os.Interrupt

// postgresHome runs PostgreSQL's tools as this user, with the data in
// dir; PostgreSQL refuses root, and only the Linux build switches to
// nobody.
func postgresHome(dir string) (home string, attr *syscall.SysProcAttr, release func(), err error) {
	if os.Geteuid() == 0 {
		return "", nil, nil, errors.New("postgres: PostgreSQL refuses to run as root; run labserver as another user")
	}
	return dir, nil, func() {}, nil
}
