package peers

import (
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
)

// Starting the servers a run measures (redis-server, postgres).

// dieWithParent makes the kernel kill a started server when the process
// that started it dies, so a killed run leaves none behind. (Linux sends
// the signal when the starting OS thread exits; Go's runtime keeps its
// threads for the process's life.)
func dieWithParent() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// terminate asks a server to shut down cleanly.
var terminate os.Signal = syscall.SIGTERM

// postgresUser returns how to start PostgreSQL's tools with their data in
// dir: as this user, or, as root (which PostgreSQL refuses), as nobody,
// to whom dir is then given. Either way the server dies with labserver.
func postgresUser(dir string) (*syscall.SysProcAttr, error) {
	attr := dieWithParent()
	if os.Geteuid() != 0 {
		return attr, nil
	}
	u, err := user.Lookup("nobody")
	if err != nil {
		return nil, fmt.Errorf("postgres: running as root, and there is no user nobody to run PostgreSQL as: %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	// nobody must be able to enter every directory above dir.
	for parent := filepath.Dir(dir); ; parent = filepath.Dir(parent) {
		fi, err := os.Stat(parent)
		if err != nil {
			return nil, fmt.Errorf("postgres: %w", err)
		}
		if fi.Mode().Perm()&0o001 == 0 {
			return nil, fmt.Errorf("postgres: running as root, PostgreSQL runs as nobody, who cannot enter %s (mode %v) to reach %s; give the run a -dir that others can enter, such as one under /tmp", parent, fi.Mode().Perm(), dir)
		}
		if parent == filepath.Dir(parent) {
			break
		}
	}
	err = filepath.Walk(dir, func(path string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(path, uid, gid)
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: giving %s to nobody, as whom PostgreSQL runs under root: %w", dir, err)
	}
	attr.Credential = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	return attr, nil
}
