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

// postgresHome returns where PostgreSQL's data directories for the run
// directory dir go, and how to start PostgreSQL's tools on them: as this
// user, with the data in dir; or, as root (which PostgreSQL refuses), as
// nobody, to whom the data's directory is then given. nobody must be able
// to enter every directory above it. When it cannot enter one above dir
// (a labserver run as root keeps its runs under /root/.cache, and /root
// is 0700), the data go to a directory of their own under os.TempDir(),
// which others can enter (pgHome), as long as it is on dir's filesystem:
// the run's device counters must see the flushes, and a /tmp in memory
// would make them free. release says the caller's servers have stopped;
// the data's directory is removed once dir is gone and no server of it
// runs (pgHome). Either way the servers die with labserver.
func postgresHome(dir string) (home string, attr *syscall.SysProcAttr, release func(), err error) {
	attr = dieWithParent()
	if os.Geteuid() != 0 {
		return dir, attr, func() {}, nil
	}
	u, err := user.Lookup("nobody")
	if err != nil {
		return "", nil, nil, fmt.Errorf("postgres: running as root, and there is no user nobody to run PostgreSQL as: %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	home, release = dir, func() {}
	if closed, mode, err := closedAbove(dir); err != nil {
		return "", nil, nil, fmt.Errorf("postgres: %w", err)
	} else if closed != "" {
		if home, release, err = acquirePgHome(dir); err != nil {
			return "", nil, nil, fmt.Errorf("postgres: running as root, PostgreSQL runs as nobody, who cannot enter %s (mode %v) to reach %s, so its data would go under %s: %w", closed, mode, dir, os.TempDir(), err)
		}
	}
	err = filepath.Walk(home, func(path string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(path, uid, gid)
	})
	if err != nil {
		release()
		return "", nil, nil, fmt.Errorf("postgres: giving %s to nobody, as whom PostgreSQL runs under root: %w", home, err)
	}
	attr.Credential = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	return home, attr, release, nil
}

// closedAbove returns the first directory above dir that others cannot
// enter (no x bit for others), and its mode, or "".
func closedAbove(dir string) (string, os.FileMode, error) {
	for parent := filepath.Dir(dir); ; parent = filepath.Dir(parent) {
		fi, err := os.Stat(parent)
		if err != nil {
			return "", 0, err
		}
		if fi.Mode().Perm()&0o001 == 0 {
			return parent, fi.Mode().Perm(), nil
		}
		if parent == filepath.Dir(parent) {
			return "", 0, nil
		}
	}
}
