// Package localserver holds what starting a throwaway server on this
// machine needs, for the harness's peer engines (a PostgreSQL cluster, a
// redis-server) and for the tests that start one (internal/pgtest): where
// PostgreSQL's binaries are, and a free loopback port.
package localserver

import (
	"net"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
)

// PostgresBinDir returns the directory of initdb and postgres: the newest
// Debian version (/usr/lib/postgresql/VERSION/bin), else the PATH's (as
// Homebrew installs them), or "" when there is none.
func PostgresBinDir() string {
	m, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(m) > 0 {
		version := func(p string) int {
			v, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(p))))
			return v
		}
		sort.Slice(m, func(i, j int) bool { return version(m[i]) < version(m[j]) })
		return filepath.Dir(m[len(m)-1])
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p)
	}
	return ""
}

// FreePort asks the kernel for a free loopback port. Another process may
// take it before the server binds it; the server's start then fails and
// says so.
func FreePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
