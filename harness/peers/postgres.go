package peers

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

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
//   - group: synchronous_commit=on, commit_delay=200 (µs) and
//     commit_siblings=5 (pgGroupCommitDelayUs, pgGroupCommitSiblings): a
//     committing session that sees at least 5 other transactions open
//     sleeps 200 µs before flushing, so that more commits join the flush.
//     (Setting commit_delay needs a superuser.)
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

// The group mapping's settings, PostgreSQL's own group commit: a
// committing session that sees at least pgGroupCommitSiblings other
// transactions open sleeps pgGroupCommitDelayUs before it flushes the WAL,
// so that commits arriving meanwhile share the flush. PostgreSQL's
// documentation suggests half the time of one flush as a starting point.
// Measured with 16 clients (fillrandom, 3 s, ext4 on a virtual disk whose
// fdatasync takes about 1.8 ms, load 19-25, rounds group, always, always,
// group, group, always): 200 µs gave group 1,574-2,503 ops/s against
// always 1,423-2,970 (about 1,100 WAL flushes against 1,700 in 3 s);
// 1 ms (half a flush) gave group 878-2,439 against 1,736-2,891, with
// fewer flushes still (560-720). PostgreSQL's synchronous_commit=on
// already shares a flush among the sessions waiting for it, so on this
// disk the delay saves flushes but no time: group is no faster than
// always here. The smaller delay costs the least.
const (
	pgGroupCommitDelayUs  = 200
	pgGroupCommitSiblings = 5
)

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
		session.Set("commit_delay", strconv.Itoa(pgGroupCommitDelayUs))
		session.Set("commit_siblings", strconv.Itoa(pgGroupCommitSiblings))
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

// openPostgresScheme is the harness.SchemeContextFunc for -engine
// postgres://USER@HOST:PORT/DB: the URL is checked when the line is
// parsed (parsePostgresURL), the server is reached when the run opens the
// store, and left when the run's context is done (netconn.go).
func openPostgresScheme(name string) (harness.ContextOpenFunc, error) {
	a, err := parsePostgresURL(name)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, dir, syncText string) (harness.Store, error) {
		return dialPostgres(ctx, name, a, "prefer", syncText)
	}, nil
}

// pgAddr is what an -engine postgres:// URL may say: a user, one host, a
// port and a database. Nothing else reaches the connection.
type pgAddr struct {
	User, Host string
	Port       int
	Database   string
}

// hostPort is the address connected to, HOST:PORT.
func (a pgAddr) hostPort() string { return net.JoinHostPort(a.Host, strconv.Itoa(a.Port)) }

// pgDefaultPort is PostgreSQL's port, for a URL that names none.
const pgDefaultPort = 5432

// pgURLForm is the form an -engine postgres:// value must have, for errors.
const pgURLForm = "postgres://USER@HOST:PORT/DB (or postgresql://): one host name or IP address, a port (default 5432), no ?parameters; USER and DB of letters, digits and _ . - $"

// parsePostgresURL reads postgres://USER@HOST[:PORT][/DB] with an
// allow-list: a user (required, so that no default is taken from the
// operating system), one TCP host (no host lists, no unix-socket
// directories), a port, a database (default: the user's name). A password
// is refused (the line is printed and archived), and so is every
// ?parameter: libpq's parameters can move the connection to another host
// (?host=, ?port=), to a unix socket, or make it read files on the machine
// that runs it (?sslrootcert=, ?passfile=, ?service=).
func parsePostgresURL(name string) (pgAddr, error) {
	bad := func(why string) error {
		return fmt.Errorf("-engine %s: %s; allowed: %s", name, why, pgURLForm)
	}
	u, err := url.Parse(name)
	if err != nil {
		return pgAddr{}, bad("not a URL")
	}
	if u.Scheme != "postgres" && u.Scheme != "postgresql" || u.Opaque != "" || u.Host == "" {
		return pgAddr{}, bad("not a postgres://USER@HOST address")
	}
	if _, hasPassword := u.User.Password(); hasPassword {
		return pgAddr{}, fmt.Errorf("-engine %s: the URL holds a password, which would be printed with every result and kept in the run archive; kvlab connects without one (a server named by an address must let its user in without a password, e.g. trust for that user and host in pg_hba.conf)", redactURL(u))
	}
	if u.RawQuery != "" || u.ForceQuery {
		return pgAddr{}, bad("?parameters are not taken")
	}
	if u.Fragment != "" {
		return pgAddr{}, bad("#" + u.Fragment + " is not taken")
	}
	a := pgAddr{Port: pgDefaultPort}
	if u.User != nil {
		a.User = u.User.Username()
	}
	if !pgName(a.User) {
		return pgAddr{}, bad("the user name is missing or has other characters")
	}
	a.Host = u.Hostname()
	if strings.ContainsAny(u.Host, ",/%") || !pgHost(a.Host) {
		return pgAddr{}, bad("the host must be one host name or IP address")
	}
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return pgAddr{}, bad("port " + p + " is not between 1 and 65535")
		}
		a.Port = n
	}
	a.Database = strings.TrimPrefix(u.Path, "/")
	if a.Database == "" {
		a.Database = a.User
	}
	if !pgName(a.Database) {
		return pgAddr{}, bad("the database name has other characters")
	}
	return a, nil
}

// pgName reports whether s is a user or database name a URL may give:
// 1 to 63 bytes of letters, digits and _ . - $.
func pgName(s string) bool {
	if s == "" || len(s) > 63 {
		return false
	}
	for _, c := range []byte(s) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("_.-$", c) >= 0) {
			return false
		}
	}
	return true
}

// pgHost reports whether h is an IP address or a DNS name.
func pgHost(h string) bool {
	if net.ParseIP(h) != nil {
		return true
	}
	if h == "" || len(h) > 253 {
		return false
	}
	for _, c := range []byte(h) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '-') {
			return false
		}
	}
	return true
}

// redactURL prints u without its password.
func redactURL(u *url.URL) string {
	c := *u
	if c.User != nil {
		c.User = url.User(c.User.Username())
	}
	return c.String()
}

// pgConfig builds the pgx configuration for a: from a's fields and the
// session settings only. pgx's ParseConfig also reads the environment
// (PGHOST, PGPORT, PGPASSWORD, PGPASSFILE, PGSERVICE, PGOPTIONS, PGSSL*,
// ...) and files under the home directory (~/.pgpass,
// ~/.pg_service.conf, ~/.postgresql/*), the way libpq does; none of it
// may reach a connection that a cell's line names, or the machine's
// password would go to a server the line chose. So the connection string
// given to ParseConfig sets every setting the environment could supply,
// the files' paths among them, to a value of its own (an empty passfile
// and servicefile: nothing is read), and what ParseConfig leaves in the
// configuration is overwritten from a once more: the host, the port, no
// password, no fallbacks to other hosts, no runtime parameters but the
// session settings. One exception cannot be overridden: when PGSERVICE
// is set, ParseConfig insists on reading a service file, and the
// connection fails with an error saying so.
//
// sslmode is "prefer" (TLS when the server offers it, unverified: no
// certificate file is read) or "disable".
func pgConfig(a pgAddr, sslmode string, session url.Values, g *netGuard) (*pgx.ConnConfig, error) {
	kv := []string{
		"host=" + a.Host, "port=" + strconv.Itoa(a.Port), "dbname=" + a.Database, "user=" + a.User,
		"password=''", "passfile=''", "servicefile=''",
		"sslmode=" + sslmode, "sslcert=''", "sslkey=''", "sslrootcert=''", "sslcertmode=disable", "sslpassword=''",
		"sslsni=1", "sslnegotiation=postgres", "target_session_attrs=any", "connect_timeout=0",
		"min_protocol_version=3.0", "max_protocol_version=3.0", "channel_binding=prefer", "require_auth=''",
		"application_name=kvlab", "options=''", "timezone=UTC",
	}
	cfg, err := pgx.ParseConfig(strings.Join(kv, " "))
	if err != nil {
		return nil, fmt.Errorf("postgres: -engine %s: the connection settings could not be built; if the server's environment sets PGSERVICE, unset it (kvlab takes no PG* setting for an address)", g.name)
	}
	cfg.Host, cfg.Port, cfg.Database, cfg.User, cfg.Password = a.Host, uint16(a.Port), a.Database, a.User, ""
	cfg.KerberosSrvName, cfg.KerberosSpn, cfg.OAuthTokenProvider = "", "", nil
	cfg.ValidateConnect, cfg.AfterNetConnect = nil, nil
	fb := cfg.Fallbacks[:0]
	for _, f := range cfg.Fallbacks {
		if f.Host == a.Host && int(f.Port) == a.Port {
			fb = append(fb, f)
		}
	}
	cfg.Fallbacks = fb
	cfg.RuntimeParams = map[string]string{"application_name": "kvlab"}
	for k := range session {
		cfg.RuntimeParams[k] = session.Get(k)
	}
	cfg.ConnectTimeout = dialTimeout
	cfg.DialFunc = g.dialContext
	return cfg, nil
}

// dialPostgres connects to the server at a with the session settings
// syncText maps to, checks that the server's wal_writer_delay is the one
// it needs, and creates the table. Every connection is bounded and ends
// with ctx (netGuard); name is the -engine value, for errors.
func dialPostgres(ctx context.Context, name string, a pgAddr, sslmode, syncText string) (harness.Store, error) {
	session, walDelay, err := postgresSettings(syncText)
	if err != nil {
		return nil, err
	}
	g := newNetGuard(ctx, name, a.hostPort())
	cfg, err := pgConfig(a, sslmode, session, g)
	if err != nil {
		g.release()
		return nil, err
	}
	db := stdlib.OpenDB(*cfg)
	db.SetMaxIdleConns(1024) // each client keeps its connection for the run
	s := &postgresStore{db: db, name: name, guard: g, settings: session}
	if err := s.setup(walDelay); err != nil {
		s.Close()
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
	db    *sql.DB
	name  string    // the -engine value, for errors
	guard *netGuard // makes every connection; closes them when the run ends

	idle idleList[*sql.Conn] // connections no client is using
	mu   sync.Mutex          // guards all
	all  []*sql.Conn         // every connection made, for Close

	timed bool // track_wal_io_timing is on: wal_sync_time is measured

	settings url.Values // the session settings the -sync policy maps to
}

// TuneForWriters tunes nothing (PostgreSQL's group commit does not need
// the writer count) but says, for the result's engine_config, what the
// -sync policy set: synchronous_commit, and under group commit_delay and
// commit_siblings. It is harness.WriterTuner.
func (s *postgresStore) TuneForWriters(int) string {
	var parts []string
	for _, k := range []string{"synchronous_commit", "commit_delay", "commit_siblings"} {
		if v := s.settings.Get(k); v != "" {
			if k == "commit_delay" {
				v += " µs"
			}
			parts = append(parts, k+" "+v)
		}
	}
	return "PostgreSQL: " + strings.Join(parts, ", ")
}

// setup checks the server and creates the table.
func (s *postgresStore) setup(walDelay time.Duration) error {
	ctx, cancel := context.WithTimeout(s.guard.ctx, 30*time.Second)
	defer cancel()
	c, err := s.take(ctx)
	if err != nil {
		return err
	}
	defer s.give(c)
	if walDelay > 0 {
		var have string
		if err := c.QueryRowContext(ctx, "SELECT setting FROM pg_settings WHERE name = 'wal_writer_delay'").Scan(&have); err != nil {
			return fmt.Errorf("postgres: reading wal_writer_delay: %w", s.wrap(err))
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
		return fmt.Errorf("postgres: creating table kvlab_kv: %w", s.wrap(err))
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
		return nil, fmt.Errorf("postgres: %w", s.wrap(err))
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
	if err = fn(c); err != nil {
		c.Close() // a connection that failed mid-call is not reused
		return fmt.Errorf("postgres: %w", s.wrap(err))
	}
	s.give(c)
	return nil
}

// wrap names the server's address in err and says why a call stopped
// (netGuard.wrap). A server's own error (a *pgconn.PgError) is kept as
// it is, with the address before it.
func (s *postgresStore) wrap(err error) error { return s.guard.wrap(err, "") }

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
	err := s.db.Close()
	s.guard.release()
	return err
}
