package peers

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/stdlib"

	"kvlab/harness"
	"kvlab/internal/localserver"
)

// -engine postgres: a throwaway PostgreSQL cluster.
//
// When PostgreSQL's server binaries are installed (Debian's postgresql
// package: /usr/lib/postgresql/VERSION/bin; or initdb and postgres on the
// PATH, as Homebrew installs them), openPostgres makes a cluster for the
// run: initdb into pg/ in the run's directory (so device_io counts its
// disk), the postmaster started directly (not through pg_ctl, so it stays
// this process's child), listening on a free loopback port only, no unix
// socket, trust authentication for the superuser postgres, the -sync
// policy's settings (postgres.go) plus track_wal_io_timing=on, everything
// else PostgreSQL's defaults (fsync on, full_page_writes on, 128 MB of
// shared buffers). initdb is run with --no-sync: the cluster is thrown
// away with the run. As root, both run as the user nobody (PostgreSQL
// refuses root), to whom the data's directory is given; when nobody
// cannot enter a directory above the run's (root's runs under
// /root/.cache), the data go to a directory of their own under
// os.TempDir() instead, removed once the run directory is
// (postgresHome, pghome_linux.go). Close stops the server with a fast
// shutdown (SIGINT: a checkpoint, then exit); on Linux it is killed if
// labserver dies first (Pdeathsig), and its backends exit when they see
// the postmaster gone. A run's preload and its measurement reuse one
// cluster, restarted with each one's settings.

// ErrPostgresMissing is returned by openPostgres when no PostgreSQL server
// binaries are installed.
var ErrPostgresMissing error = harness.MissingTool("postgres: PostgreSQL's server binaries are not installed (apt-get install postgresql, or brew install postgresql)")

// postgresStartTimeout bounds waiting for a started server to accept
// connections (it replays its WAL first when restarted).
const postgresStartTimeout = 60 * time.Second

// openPostgres starts (initdb-ing it first if dir has none) a PostgreSQL
// cluster in dir/pg with the settings syncText maps to, and returns a
// store on it whose Close also stops the server; its connections end
// when ctx is done. It is the harness.ContextOpenFunc registered as
// "postgres".
func openPostgres(ctx context.Context, dir, syncText string) (harness.Store, error) {
	session, walDelay, err := postgresSettings(syncText)
	if err != nil {
		return nil, err
	}
	bin := localserver.PostgresBinDir()
	if bin == "" {
		return nil, ErrPostgresMissing
	}
	srv, err := startPostgres(ctx, bin, dir, session, walDelay)
	if err != nil {
		return nil, err
	}
	st, err := dialPostgres(ctx, "postgres", srv.addr(), "disable", syncText)
	if err != nil {
		srv.stop()
		return nil, err
	}
	return &postgresCluster{postgresStore: st.(*postgresStore), srv: srv}, nil
}

// postgresCluster is the store of a cluster it started and stops.
type postgresCluster struct {
	*postgresStore
	srv *postgresProcess
}

// Close closes the connections and stops the server.
func (s *postgresCluster) Close() error {
	err := s.postgresStore.Close()
	if serr := s.srv.stop(); err == nil {
		err = serr
	}
	return err
}

// postgresProcess is one started postmaster.
type postgresProcess struct {
	cmd    *exec.Cmd
	url    string     // postgres://postgres@127.0.0.1:PORT/postgres?sslmode=disable, for an administrator's connection
	port   int        // on 127.0.0.1
	exited chan error // receives Wait's result once
	logf   string
	// release, when not nil, says the server has stopped (postgresHome);
	// stop calls it.
	release func()
}

// startPostgres initdbs dir/pg when needed and starts the server on it;
// when ctx is done first, initdb is killed or the server stopped.
func startPostgres(ctx context.Context, bin, dir string, session url.Values, walDelay time.Duration) (*postgresProcess, error) {
	syncCommit := session.Get("synchronous_commit")
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	home, asUser, release, err := postgresHome(abs)
	if err != nil {
		return nil, err
	}
	started := false
	defer func() {
		if !started {
			release()
		}
	}()
	data := filepath.Join(home, "pg")
	logf := filepath.Join(abs, "pg.log")
	if _, err := os.Stat(filepath.Join(data, "PG_VERSION")); err != nil {
		cmd := exec.CommandContext(ctx, filepath.Join(bin, "initdb"), "-D", data, "-U", "postgres", "--auth=trust", "--no-locale", "-E", "UTF8", "--no-sync")
		cmd.SysProcAttr = asUser
		cmd.Env = append(os.Environ(), "LC_ALL=C")
		if out, err := cmd.CombinedOutput(); err != nil {
			if ctx.Err() != nil {
				return nil, fmt.Errorf("postgres: initdb stopped: %w", context.Cause(ctx))
			}
			return nil, fmt.Errorf("postgres: initdb in %s: %v\n%s", data, err, out)
		}
	}
	port, err := localserver.FreePort()
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	args := []string{"-D", data, "-p", strconv.Itoa(port),
		"-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=",
		"-c", "synchronous_commit=" + syncCommit, "-c", "track_wal_io_timing=on"}
	for _, name := range []string{"commit_delay", "commit_siblings"} {
		if v := session.Get(name); v != "" {
			args = append(args, "-c", name+"="+v)
		}
	}
	if walDelay > 0 {
		args = append(args, "-c", fmt.Sprintf("wal_writer_delay=%dms", walDelay.Milliseconds()))
	}
	log, err := os.OpenFile(logf, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	defer log.Close()
	p := &postgresProcess{
		url:    fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port),
		port:   port,
		exited: make(chan error, 1), logf: logf, release: release,
	}
	p.cmd = exec.Command(filepath.Join(bin, "postgres"), args...)
	p.cmd.SysProcAttr = asUser
	p.cmd.Stdout, p.cmd.Stderr = log, log
	p.cmd.Env = append(os.Environ(), "LC_ALL=C")
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("postgres: starting %s: %w", p.cmd.Path, err)
	}
	go func() { p.exited <- p.cmd.Wait() }()
	started = true // p.stop releases
	if err := p.waitReady(ctx); err != nil {
		p.stop()
		return nil, err
	}
	return p, nil
}

// addr is the store's address of the server: user postgres (trust, as
// initdb set it up), database postgres.
func (p *postgresProcess) addr() pgAddr {
	return pgAddr{User: "postgres", Host: "127.0.0.1", Port: p.port, Database: "postgres"}
}

// waitReady waits until the server accepts a connection, or ctx is done.
// Its connections are made as a store's are (pgConfig: nothing from the
// environment).
func (p *postgresProcess) waitReady(ctx context.Context) error {
	g := newNetGuard(ctx, "postgres", p.addr().hostPort())
	defer g.release()
	cfg, err := pgConfig(p.addr(), "disable", nil, g)
	if err != nil {
		return err
	}
	db := stdlib.OpenDB(*cfg)
	defer db.Close()
	deadline := time.Now().Add(postgresStartTimeout)
	for {
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		err := db.PingContext(pctx)
		cancel()
		if err == nil {
			return nil
		}
		select {
		case werr := <-p.exited:
			p.exited <- werr // stop reads it again
			return fmt.Errorf("postgres: the server exited at start (%v); its log: %s", werr, p.logf)
		case <-ctx.Done():
			return fmt.Errorf("postgres: stopped waiting for the server to start: %w", context.Cause(ctx))
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("postgres: the server did not accept connections within %s (%v); its log: %s", postgresStartTimeout, err, p.logf)
		}
	}
}

// stop asks for a fast shutdown and waits; after 30 s it kills the server.
func (p *postgresProcess) stop() error {
	if p.release != nil {
		defer p.release()
	}
	p.cmd.Process.Signal(os.Interrupt) // SIGINT: fast shutdown
	select {
	case <-p.exited:
		return nil
	case <-time.After(30 * time.Second):
		p.cmd.Process.Kill()
		<-p.exited
		return fmt.Errorf("postgres: the server did not stop within 30 s of SIGINT and was killed; its log: %s", p.logf)
	}
}
