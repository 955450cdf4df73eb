package peers

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"sync"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver

	"kvlab/engine"
	"kvlab/harness"
)

// PostgreSQL: -engine postgres (a throwaway cluster, postgres_cluster.go)
// and -engine postgres://USER@HOST:PORT/DB (a server that is already
// running).
//
// One table, kvlab_kv (k bytea PRIMARY KEY, v bytea); each Put is one
// INSERT ... ON CONFLICT DO UPDATE, each Delete one DELETE, each its own
// transaction on the client's own connection (one per concurrent client,
// kept for the run). A commit writes its WAL record and, when
// synchronous_commit is on, waits until the WAL is flushed (fdatasync, on
// Linux) up to it. PostgreSQL flushes the WAL up to the newest record
// written, so one flush also covers every other session's commit that is
// waiting: PostgreSQL's on is a group commit whenever clients overlap. The
// policies map as follows.
//
//   - always: synchronous_commit=on, commit_delay=0. One client: one WAL
//     flush per write, as kv's always. Several clients: they share flushes
//     (kv's group), which kv's always never does.
//   - group: synchronous_commit=on and commit_delay=200 (µs): a committing
//     session that sees at least commit_siblings (5, the default) other
//     transactions open sleeps 200 µs before flushing, so that more commits
//     join the flush. (Setting commit_delay needs a superuser.)
//   - periodic:D: synchronous_commit=off with wal_writer_delay=D (1ms..10s):
//     a commit returns once its record is in the WAL buffers, and the WAL
//     writer flushes every D. PostgreSQL documents the window as up to
//     three times wal_writer_delay (a busy writer flushes only whole pages
//     between rounds), so it can lose more than kv's periodic:D; a process
//     kill of one backend loses nothing (the buffers are shared memory),
//     a crash of the server or a power cut loses the window.
//   - none: synchronous_commit=off with the default wal_writer_delay,
//     200 ms: PostgreSQL has no setting that never flushes the WAL, so none
//     is periodic:200ms here (up to 600 ms of commits lost in a crash).
//   - batch:N: an error; PostgreSQL has no count-based flush.
//
// The WAL flushes are counted from pg_stat_wal (wal_sync, and
// wal_sync_time when track_wal_io_timing is on, as in the throwaway
// cluster): the whole server's, so a shared server's other work is in
// them. Backends report to it when they go idle, at most once a second;
// StoreStats makes each of the store's idle connections report first
// (pg_stat_force_next_flush), but the WAL writer's own flushes (under
// synchronous_commit=off) may reach it up to a second late.

// postgresSupported lists the -sync policies the PostgreSQL engines accept.
const postgresSupported = "always, group, periodic:D (D between 1ms and 10s) and none"

// postgresSettings returns the server settings a -sync policy maps to:
// those a session may set (synchronous_commit, commit_delay) and
// wal_writer_delay, which only the server's configuration can.
func postgresSettings(syncText string) (session url.Values, walWriterDelay time.Duration, err error) {
	p, err := engine.ParseSync(syncText)
	if err != nil {
		return nil, 0, fmt.Errorf("postgres: %w", err)
	}
	session = url.Values{}
	switch p.Mode {
	case engine.SyncAlways:
		session.Set("synchronous_commit", "on")
		session.Set("commit_delay", "0")
	case engine.SyncGroup:
		session.Set("synchronous_commit", "on")
		session.Set("commit_delay", "200")
	case engine.SyncPeriodic:
		if p.Interval < time.Millisecond || p.Interval > 10*time.Second {
			return nil, 0, unsupportedSync("postgres", syncText, "wal_writer_delay takes 1ms to 10s", postgresSupported)
		}
		session.Set("synchronous_commit", "off")
		walWriterDelay = p.Interval
	case engine.SyncNone:
		session.Set("synchronous_commit", "off")
		walWriterDelay = 200 * time.Millisecond
	default:
		return nil, 0, unsupportedSync("postgres", syncText, "PostgreSQL flushes its WAL at commits or on the WAL writer's timer, never after every N writes", postgresSupported)
	}
	return session, walWriterDelay, nil
}

// openPostgresScheme is the harness.SchemeFunc for -engine
// postgres://USER@HOST:PORT/DB: the URL is checked when the line is parsed.
func openPostgresScheme(name string) (harness.OpenFunc, error) {
	u, err := url.Parse(name)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("-engine %s: not a PostgreSQL URL; allowed: postgres://USER@HOST:PORT/DB (a password goes in PGPASSWORD or ~/.pgpass, not the line, which is printed and archived)", name)
	}
	if _, hasPassword := u.User.Password(); hasPassword {
		return nil, fmt.Errorf("-engine %s: the URL holds a password, which would be printed with every result and kept in the run archive; put it in PGPASSWORD or ~/.pgpass instead", redactURL(u))
	}
	return func(dir, syncText string) (harness.Store, error) {
		return dialPostgres(name, name, syncText)
	}, nil
}

// redactURL prints u without its password.
func redactURL(u *url.URL) string {
	c := *u
	if c.User != nil {
		c.User = url.User(c.User.Username())
	}
	return c.String()
}

// dialPostgres connects to the server at dsn with the session settings
// syncText maps to, checks that the server's wal_writer_delay is the one
// it needs, and creates the table.
func dialPostgres(name, dsn, syncText string) (harness.Store, error) {
	session, walDelay, err := postgresSettings(syncText)
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(dsn)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	q := u.Query()
	for k, v := range session {
		q[k] = v
	}
	u.RawQuery = q.Encode()
	db, err := sql.Open("pgx", u.String())
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	db.SetMaxIdleConns(1024) // each client keeps its connection for the run
	s := &postgresStore{db: db, name: name}
	if err := s.setup(walDelay); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

var (
	_ harness.Store         = (*postgresStore)(nil)
	_ harness.Scanner       = (*postgresStore)(nil)
	_ harness.StatsReporter = (*postgresStore)(nil)
)

// postgresStore adapts a PostgreSQL database to harness.Store,
// harness.Scanner and harness.StatsReporter. It is safe for concurrent use.
type postgresStore struct {
	db   *sql.DB
	name string // the -engine value, for errors

	idle idleList[*sql.Conn] // connections no client is using
	mu   sync.Mutex          // guards all
	all  []*sql.Conn         // every connection made, for Close

	timed bool // track_wal_io_timing is on: wal_sync_time is measured
}

// setup checks the server and creates the table.
func (s *postgresStore) setup(walDelay time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := s.take(ctx)
	if err != nil {
		return err
	}
	defer s.give(c)
	if walDelay > 0 {
		var have string
		if err := c.QueryRowContext(ctx, "SELECT setting FROM pg_settings WHERE name = 'wal_writer_delay'").Scan(&have); err != nil {
			return fmt.Errorf("postgres: -engine %s: reading wal_writer_delay: %w", s.name, err)
		}
		if have != strconv.FormatInt(walDelay.Milliseconds(), 10) {
			return fmt.Errorf("%w: -engine %s has wal_writer_delay = %s ms, and this -sync needs %d ms; only the server's configuration can set it (ALTER SYSTEM SET wal_writer_delay = '%dms'; SELECT pg_reload_conf())",
				ErrUnsupportedSync, s.name, have, walDelay.Milliseconds(), walDelay.Milliseconds())
		}
	}
	var timing string
	if err := c.QueryRowContext(ctx, "SHOW track_wal_io_timing").Scan(&timing); err == nil {
		s.timed = timing == "on"
	}
	if _, err := c.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS kvlab_kv (k bytea PRIMARY KEY, v bytea)"); err != nil {
		return fmt.Errorf("postgres: -engine %s: creating table kvlab_kv: %w", s.name, err)
	}
	return nil
}

// take returns an idle connection, or a new one.
func (s *postgresStore) take(ctx context.Context) (*sql.Conn, error) {
	if c, ok := s.idle.take(); ok {
		return c, nil
	}
	c, err := s.db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("postgres: -engine %s: %w", s.name, err)
	}
	s.mu.Lock()
	s.all = append(s.all, c)
	s.mu.Unlock()
	return c, nil
}

func (s *postgresStore) give(c *sql.Conn) {
	if !s.idle.give(c) {
		c.Close()
	}
}

// with runs fn on a connection of the caller's own.
func (s *postgresStore) with(fn func(c *sql.Conn) error) error {
	ctx := context.Background()
	c, err := s.take(ctx)
	if err != nil {
		return err
	}
	err = fn(c)
	s.give(c)
	return err
}

// Put stores value under key.
func (s *postgresStore) Put(key, value []byte) error {
	if value == nil {
		value = []byte{}
	}
	return s.with(func(c *sql.Conn) error {
		_, err := c.ExecContext(context.Background(), "INSERT INTO kvlab_kv (k, v) VALUES ($1, $2) ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v", key, value)
		return err
	})
}

// Get returns the value stored under key.
func (s *postgresStore) Get(key []byte) ([]byte, bool, error) {
	var value []byte
	found := true
	err := s.with(func(c *sql.Conn) error {
		err := c.QueryRowContext(context.Background(), "SELECT v FROM kvlab_kv WHERE k = $1", key).Scan(&value)
		if errors.Is(err, sql.ErrNoRows) {
			found, err = false, nil
		}
		return err
	})
	if found && value == nil {
		value = []byte{}
	}
	return value, found && err == nil, err
}

// Delete removes key; deleting a missing key is not an error.
func (s *postgresStore) Delete(key []byte) error {
	return s.with(func(c *sql.Conn) error {
		_, err := c.ExecContext(context.Background(), "DELETE FROM kvlab_kv WHERE k = $1", key)
		return err
	})
}

// Scan calls fn for up to limit keys >= start in byte order (bytea
// compares as bytes), stopping early when fn returns false. fn gets
// sql.RawBytes, valid until the next row is read, which is after fn
// returns.
func (s *postgresStore) Scan(start []byte, limit int, fn func(key, value []byte) bool) error {
	if start == nil {
		start = []byte{}
	}
	var lim any // NULL: no limit
	if limit > 0 {
		lim = limit
	}
	return s.with(func(c *sql.Conn) error {
		rows, err := c.QueryContext(context.Background(), "SELECT k, v FROM kvlab_kv WHERE k >= $1 ORDER BY k LIMIT $2", start, lim)
		if err != nil {
			return err
		}
		return visitRows(rows, fn)
	})
}

// StoreStats reads the server's WAL flush count and time from
// pg_stat_wal, after making every idle connection of this store report
// its statistics. A failed read reports zeros.
func (s *postgresStore) StoreStats() harness.StoreStats {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var idle []*sql.Conn
	for c, ok := s.idle.take(); ok; c, ok = s.idle.take() {
		idle = append(idle, c)
	}
	for _, c := range idle {
		c.ExecContext(ctx, "SELECT pg_stat_force_next_flush()")
		s.give(c)
	}
	var syncs int64
	var ms float64
	err := s.with(func(c *sql.Conn) error {
		if _, err := c.ExecContext(ctx, "SELECT pg_stat_force_next_flush()"); err != nil {
			return err
		}
		return c.QueryRowContext(ctx, "SELECT wal_sync, wal_sync_time FROM pg_stat_wal").Scan(&syncs, &ms)
	})
	if err != nil {
		return harness.StoreStats{}
	}
	st := harness.StoreStats{Fsyncs: syncs}
	if s.timed {
		st.FsyncTime = time.Duration(ms * float64(time.Millisecond))
	}
	return st
}

// Close closes the connections. The server and the table stay.
func (s *postgresStore) Close() error {
	s.idle.close()
	s.mu.Lock()
	all := s.all
	s.all = nil
	s.mu.Unlock()
	for _, c := range all {
		c.Close()
	}
	return s.db.Close()
}
