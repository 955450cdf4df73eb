// Package pgtest starts a throwaway PostgreSQL server for tests: Debian's
// postgresql package's binaries (/usr/lib/postgresql/VERSION/bin), initdb
// into a fresh temporary directory, a free loopback port, and pg_ctl stop
// when the test binary is done with it. initdb refuses to run as root, so
// as root the server runs as the unprivileged user nobody (runuser).
//
// Without the binaries a test that asks for a server is skipped, or fails
// when KVLAB_REQUIRE_TOOLS=1 (browsertest.Missing), so CI cannot pass
// without the PostgreSQL suite.
package pgtest

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver

	"kvlab/internal/browsertest"
	"kvlab/internal/localserver"
)

// Server is one running throwaway PostgreSQL.
type Server struct {
	// URL connects to its "postgres" database as the superuser postgres
	// (trust authentication, loopback only).
	URL string

	addr   string   // 127.0.0.1:PORT
	dir    string   // the temporary directory holding data/, the socket and the log
	bin    string   // the directory of initdb, pg_ctl and postgres
	asUser []string // the command prefix that runs a tool as the server's user; empty when not root
	dbs    atomic.Int64
}

var (
	sharedMu  sync.Mutex
	shared    *Server
	sharedErr error
)

// Shared returns the server of this test binary, starting it on first
// use; Stop it from TestMain after m.Run (StopShared). Tests that each
// want an empty database call NewDatabase on it.
func Shared(t testing.TB) *Server {
	t.Helper()
	if localserver.PostgresBinDir() == "" {
		browsertest.Missing(t, "PostgreSQL is not installed (apt-get install postgresql)")
	}
	sharedMu.Lock()
	defer sharedMu.Unlock()
	if shared == nil && sharedErr == nil {
		shared, sharedErr = Start()
	}
	if sharedErr != nil {
		t.Fatalf("starting PostgreSQL: %v", sharedErr)
	}
	return shared
}

// StopShared stops the server Shared started, if any.
func StopShared() {
	sharedMu.Lock()
	defer sharedMu.Unlock()
	if shared != nil {
		shared.Stop()
		shared = nil
	}
}

// Start initdbs and starts a server. The caller must Stop it.
func Start() (*Server, error) {
	s := &Server{bin: localserver.PostgresBinDir()}
	if s.bin == "" {
		return nil, fmt.Errorf("PostgreSQL is not installed (apt-get install postgresql)")
	}
	dir, err := os.MkdirTemp("", "kvlab-pg-")
	if err != nil {
		return nil, err
	}
	s.dir = dir
	if os.Geteuid() == 0 {
		u, err := user.Lookup("nobody")
		if err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("running as root and there is no user nobody to run PostgreSQL as: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		s.asUser = []string{"runuser", "-u", "nobody", "--"}
	}
	data := filepath.Join(dir, "data")
	if out, err := s.tool("initdb", "-D", data, "-U", "postgres", "--auth=trust", "--no-locale", "-E", "UTF8", "--no-sync"); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("initdb: %v\n%s", err, out)
	}
	port, err := localserver.FreePort()
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off", port, dir)
	if out, err := s.tool("pg_ctl", "-D", data, "-o", opts, "-l", filepath.Join(dir, "log"), "-w", "-t", "60", "start"); err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "log"))
		os.RemoveAll(dir)
		return nil, fmt.Errorf("pg_ctl start: %v\n%s\n%s", err, out, log)
	}
	s.addr = fmt.Sprintf("127.0.0.1:%d", port)
	s.URL = "postgres://postgres@" + s.addr + "/postgres?sslmode=disable"
	return s, nil
}

// Stop stops the server and removes its directory.
func (s *Server) Stop() {
	s.tool("pg_ctl", "-D", filepath.Join(s.dir, "data"), "-m", "immediate", "-w", "stop")
	os.RemoveAll(s.dir)
}

// NewDatabase creates an empty database on s and returns its URL.
func (s *Server) NewDatabase(t testing.TB) string {
	t.Helper()
	name := fmt.Sprintf("kvlab_test_%d", s.dbs.Add(1))
	db, err := sql.Open("pgx", s.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := db.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("creating database %s: %v", name, err)
	}
	return fmt.Sprintf("postgres://postgres@%s/%s?sslmode=disable", s.addr, name)
}

// tool runs one of the server's binaries as its user.
func (s *Server) tool(name string, args ...string) ([]byte, error) {
	argv := append(append(append([]string{}, s.asUser...), filepath.Join(s.bin, name)), args...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = s.dir
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	return cmd.CombinedOutput()
}
