package peers

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"kvlab/harness"
	"kvlab/internal/localserver"

	"github.com/jackc/pgx/v5/stdlib"
)

// -engine pg-sync: a throwaway PostgreSQL primary with synchronous
// standbys, on this machine.
//
// OpenPgSync makes the cluster in the run's directory from the same
// binaries as -engine postgres (postgres_cluster.go), as the same user
// (nobody, under root; its data where postgresHome puts them, the run
// directory or, when nobody cannot reach that, one of their own under
// os.TempDir()): initdb into primary/, the primary started on a
// free loopback port, then each standby (s1, and s2 with -replicas 2)
// copied from it with pg_basebackup into s1/, s2/ and started in standby
// mode, streaming the WAL from the primary over TCP. The primary lists
// them in synchronous_standby_names: "s1" with one standby; with two,
// "ANY 1 (s1, s2)" (-quorum any: a commit waits for whichever standby
// answers first) or "FIRST 1 (s1, s2)" (-quorum first: it waits for s1,
// and for s2 only while s1 is away). With -net-delay, -net-jitter or
// -net, each standby's stream (and, with -net-client, the client's
// connections) goes through the delaying proxy of netproxy.go. Close
// stops the standbys, then the primary (fast shutdown), then the proxies;
// on Linux every server dies with labserver (Pdeathsig).
//
// The client is -engine postgres's (postgres.go): one table, one
// transaction per write, on the primary. -sync sets the client's
// synchronous_commit, which says how far a commit has travelled when it
// returns:
//
//	-sync         synchronous_commit  a commit returns when
//	------------  ------------------  ------------------------------------------
//	always        on                  the primary flushed its WAL, and the
//	                                  quorum of standbys flushed it to their disks
//	remote_write  remote_write        the primary flushed it, and the quorum wrote
//	                                  it to their page cache (no standby flush)
//	remote_apply  remote_apply        as on, and the quorum also replayed it, so
//	                                  a read on the standby sees it
//	local         local               the primary flushed it; the standbys get it
//	                                  later (asynchronous replication)
//	none          off                 the primary's WAL writer flushes it within
//	                                  600 ms; nobody waits (used for preloads)
//
// The result's "replication" object names the members, the primary as
// leader, each standby's pg_stat_replication state, and the WAL flushes
// each member made in the timed region from its pg_stat_wal (wal_sync):
// the primary's backends and WAL writer. A standby's WAL receiver flushes
// too (under always, once for each stretch of WAL it receives, before it
// acknowledges), but PostgreSQL 15 does not report those flushes to
// pg_stat_wal, so a standby showing none is reported as not counted; the
// run's device_io counts the flushes of every member together. Every member shares this machine's one disk: a
// flush of s1 and one of the primary queue at the same device, which on
// separate machines they would not.

// pgSyncSyncs are the -sync values pg-sync accepts, with their
// synchronous_commit.
var pgSyncSyncs = map[string]string{
	"always": "on", "remote_write": "remote_write", "remote_apply": "remote_apply", "local": "local", "none": "off",
}

// pgSyncNames lists the -sync values of pg-sync.
func pgSyncNames() []string {
	return []string{"always", "remote_write", "remote_apply", "local", "none"}
}

// pgSyncHelp says what each -sync of pg-sync means, for errors.
const pgSyncHelp = "always (synchronous_commit=on: the standbys flushed it), remote_write, remote_apply, local (the primary alone) or none (synchronous_commit=off)"

// pgSyncReplicationTimeout bounds waiting for the standbys to stream.
const pgSyncReplicationTimeout = 60 * time.Second

// pgSyncStandbyNames is the primary's synchronous_standby_names for n
// standbys and a -quorum.
func pgSyncStandbyNames(n int, quorum string) string {
	if n == 1 {
		return "s1"
	}
	names := make([]string, n)
	for i := range names {
		names[i] = "s" + strconv.Itoa(i+1)
	}
	method := "ANY"
	if quorum == "first" {
		method = "FIRST"
	}
	return method + " 1 (" + strings.Join(names, ", ") + ")"
}

// OpenPgSync starts (making it first when dir has none) a primary with
// o.Replicas synchronous standbys in dir and returns a store on the
// primary whose Close stops them all.
func OpenPgSync(ctx context.Context, dir, syncText string, o harness.EngineOptions) (harness.Store, error) {
	setting, ok := pgSyncSyncs[syncText]
	if !ok {
		return nil, fmt.Errorf("%w: -engine pg-sync cannot run -sync %s; it takes %s", ErrUnsupportedSync, syncText, pgSyncHelp)
	}
	if o.Replicas < 1 || o.Replicas > 2 {
		return nil, fmt.Errorf("pg-sync: -replicas %d: must be 1 or 2", o.Replicas)
	}
	bin := localserver.PostgresBinDir()
	if bin == "" {
		return nil, ErrPostgresMissing
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("pg-sync: %w", err)
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, fmt.Errorf("pg-sync: %w", err)
	}
	home, asUser, release, err := postgresHome(abs)
	if err != nil {
		return nil, err
	}
	c := &pgSyncCluster{ctx: ctx, bin: bin, dir: abs, data: home, asUser: asUser, release: release, opts: o, setting: setting}
	if err := c.start(); err != nil {
		c.stop()
		return nil, err
	}
	st, err := c.dialClient(setting)
	if err != nil {
		c.stop()
		return nil, err
	}
	s := &pgSyncStore{postgresStore: st, c: c, kill: &harness.KillAt{After: o.KillFollower}}
	if o.KillLeader > 0 {
		s.kill.After, s.killLeader, s.acks = o.KillLeader, true, harness.NewAckLog()
	}
	if o.Net.Active() {
		pctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		s.net, err = probeRTT(pctx, o.Net)
		cancel()
		if err != nil {
			s.Close()
			return nil, err
		}
	}
	return s, nil
}

// pgSyncMember is one started server of the cluster.
type pgSyncMember struct {
	name string // "primary", "s1", "s2"
	port int
	proc *postgresProcess
	db   *sql.DB // for its statistics; one connection
}

// pgSyncCluster is the servers and proxies of one pg-sync store.
type pgSyncCluster struct {
	// ctx is the run's: starting stops, and the client's connections
	// end, when it is done.
	ctx     context.Context
	bin     string
	dir     string // the run directory: the members' logs
	data    string // where the members' data directories go (postgresHome)
	asUser  *syscall.SysProcAttr
	release func() // says the members have stopped (postgresHome)
	opts    harness.EngineOptions
	setting string // the client's synchronous_commit

	members []*pgSyncMember // the primary first
	proxies []*netProxy     // the standbys' way to the primary, then the client's
	client  string          // the client's address of the primary
}

// start makes (when needed) and starts the primary, then each standby,
// and waits until every standby streams.
func (c *pgSyncCluster) start() error {
	primary := filepath.Join(c.data, "primary")
	if _, err := os.Stat(filepath.Join(primary, "PG_VERSION")); err != nil {
		cmd := exec.CommandContext(c.ctx, filepath.Join(c.bin, "initdb"), "-D", primary, "-U", "postgres", "--auth=trust", "--no-locale", "-E", "UTF8", "--no-sync")
		cmd.SysProcAttr = c.asUser
		cmd.Env = append(os.Environ(), "LC_ALL=C")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("pg-sync: initdb in %s: %v\n%s", primary, err, out)
		}
	}
	p, err := c.startMember("primary", "-c", "synchronous_standby_names="+pgSyncStandbyNames(c.opts.Replicas, c.opts.Quorum))
	if err != nil {
		return err
	}
	upstream := "127.0.0.1:" + strconv.Itoa(p.port)
	c.client = upstream
	if c.opts.Net.Active() {
		px, err := startProxy("", upstream, newDelayer(c.opts.Net.Delay, c.opts.Net.Jitter))
		if err != nil {
			return err
		}
		c.proxies = append(c.proxies, px)
		upstream = px.Addr()
		if c.opts.Net.Client {
			cpx, err := startProxy("", "127.0.0.1:"+strconv.Itoa(p.port), newDelayer(c.opts.Net.Delay, c.opts.Net.Jitter))
			if err != nil {
				return err
			}
			c.proxies = append(c.proxies, cpx)
			c.client = cpx.Addr()
		}
	}
	host, port, _ := strings.Cut(upstream, ":")
	for i := 1; i <= c.opts.Replicas; i++ {
		name := "s" + strconv.Itoa(i)
		data := filepath.Join(c.data, name)
		if _, err := os.Stat(filepath.Join(data, "PG_VERSION")); err != nil {
			cmd := exec.CommandContext(c.ctx, filepath.Join(c.bin, "pg_basebackup"), "-d", fmt.Sprintf("host=127.0.0.1 port=%d user=postgres", p.port),
				"-D", data, "--checkpoint=fast", "--no-sync", "-X", "stream", "-R")
			cmd.SysProcAttr = c.asUser
			cmd.Env = append(os.Environ(), "LC_ALL=C")
			if out, err := cmd.CombinedOutput(); err != nil {
				return fmt.Errorf("pg-sync: pg_basebackup of standby %s: %v\n%s", name, err, out)
			}
		}
		conninfo := fmt.Sprintf("host=%s port=%s user=postgres application_name=%s", host, port, name)
		if _, err := c.startMember(name, "-c", "primary_conninfo="+conninfo, "-c", "hot_standby=on"); err != nil {
			return err
		}
	}
	return c.waitStreaming()
}

// startMember starts the server of data directory c.data/name on a free
// loopback port with the extra settings.
func (c *pgSyncCluster) startMember(name string, extra ...string) (*pgSyncMember, error) {
	port, err := localserver.FreePort()
	if err != nil {
		return nil, fmt.Errorf("pg-sync: %w", err)
	}
	args := append([]string{"-D", filepath.Join(c.data, name), "-p", strconv.Itoa(port),
		"-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=",
		"-c", "track_wal_io_timing=on"}, extra...)
	logf := filepath.Join(c.dir, name+".log")
	log, err := os.OpenFile(logf, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("pg-sync: %w", err)
	}
	defer log.Close()
	p := &postgresProcess{
		url:    fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port),
		port:   port,
		exited: make(chan error, 1), logf: logf,
	}
	p.cmd = exec.Command(filepath.Join(c.bin, "postgres"), args...)
	p.cmd.SysProcAttr = c.asUser
	p.cmd.Stdout, p.cmd.Stderr = log, log
	p.cmd.Env = append(os.Environ(), "LC_ALL=C")
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("pg-sync: starting %s: %w", name, err)
	}
	go func() { p.exited <- p.cmd.Wait() }()
	m := &pgSyncMember{name: name, port: port, proc: p}
	c.members = append(c.members, m)
	if err := p.waitReady(c.ctx); err != nil {
		return nil, fmt.Errorf("pg-sync: %s: %w", name, err)
	}
	m.db, err = sql.Open("pgx", p.url+"&connect_timeout=5")
	if err != nil {
		return nil, fmt.Errorf("pg-sync: %w", err)
	}
	m.db.SetMaxOpenConns(1)
	return m, nil
}

// waitStreaming waits until the primary sees every standby streaming.
func (c *pgSyncCluster) waitStreaming() error {
	deadline := time.Now().Add(pgSyncReplicationTimeout)
	for {
		if err := c.ctx.Err(); err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(c.ctx, 5*time.Second)
		var n int
		err := c.members[0].db.QueryRowContext(ctx, "SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming'").Scan(&n)
		cancel()
		if err == nil && n == c.opts.Replicas {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("pg-sync: %d of %d standbys streaming after %s (%v); their logs: %s", n, c.opts.Replicas, pgSyncReplicationTimeout, err, filepath.Join(c.dir, "s*.log"))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// dialClient connects the client store to the primary with the
// session's synchronous_commit.
func (c *pgSyncCluster) dialClient(setting string) (*postgresStore, error) {
	host, port, err := net.SplitHostPort(c.client)
	if err != nil {
		return nil, fmt.Errorf("pg-sync: client address %q: %w", c.client, err)
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		return nil, fmt.Errorf("pg-sync: client address %q: %w", c.client, err)
	}
	a := pgAddr{User: "postgres", Host: host, Port: p, Database: "postgres"}
	// The cluster is this run's own: its life is the store's, which Close ends.
	g := newNetGuard(c.ctx, "pg-sync", a.hostPort())
	cfg, err := pgConfig(a, "disable", url.Values{"synchronous_commit": {setting}}, g)
	if err != nil {
		g.release()
		return nil, err
	}
	db := stdlib.OpenDB(*cfg)
	db.SetMaxIdleConns(1024) // each client keeps its connection for the run
	s := &postgresStore{db: db, name: "pg-sync", guard: g}
	if err := s.setup(0); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// stop stops the standbys, then the primary, then the proxies, and
// returns the first error.
func (c *pgSyncCluster) stop() error {
	var first error
	for i := len(c.members) - 1; i >= 0; i-- {
		m := c.members[i]
		if m.db != nil {
			m.db.Close()
		}
		if err := m.proc.stop(); err != nil && first == nil {
			first = err
		}
	}
	c.members = nil
	for _, px := range c.proxies {
		px.Close()
	}
	c.proxies = nil
	c.release()
	return first
}

// pgSyncStore is the client store of a pg-sync cluster. It is safe for
// concurrent use.
type pgSyncStore struct {
	*postgresStore
	c   *pgSyncCluster
	net *harness.NetReport // nil without a delaying proxy

	kill *harness.KillAt // -kill follower@D or leader@D
	// killLeader says the fault kills the primary (-kill leader@D), and
	// acks then logs every Put for the check after it (nil otherwise).
	killLeader bool
	acks       *harness.AckLog

	mu sync.Mutex // guards flushes
	// flushes holds each member's wal_sync at the last two StoreStats
	// calls (the runner's either side of the timed region).
	flushes [2]map[string]int64
}

var (
	_ harness.Store               = (*pgSyncStore)(nil)
	_ harness.ReplicationReporter = (*pgSyncStore)(nil)
)

// memberFlushes reads every member's wal_sync; a member whose read fails
// is absent.
func (s *pgSyncStore) memberFlushes() map[string]int64 {
	out := map[string]int64{}
	for _, m := range s.c.members {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		var n int64
		_, ferr := m.db.ExecContext(ctx, "SELECT pg_stat_force_next_flush()")
		err := m.db.QueryRowContext(ctx, "SELECT wal_sync FROM pg_stat_wal").Scan(&n)
		cancel()
		if ferr == nil && err == nil {
			out[m.name] = n
		}
	}
	return out
}

// StoreStats is the primary's pg_stat_wal, as -engine postgres reports
// it; it also reads every member's flush count for ReplicationReport.
func (s *pgSyncStore) StoreStats() harness.StoreStats {
	if s.killLeader {
		s.kill.Arm(s.killPrimary)
	} else {
		s.kill.Arm(s.killStandby)
	}
	st := s.postgresStore.StoreStats()
	f := s.memberFlushes()
	s.mu.Lock()
	s.flushes[0], s.flushes[1] = s.flushes[1], f
	s.mu.Unlock()
	return st
}

// killStandby kills (SIGKILL) s1, the first standby listed: under
// FIRST 1 the synchronous one, whose place s2 then takes. It returns its
// name.
func (s *pgSyncStore) killStandby() string {
	m := s.c.members[1]
	m.proc.cmd.Process.Kill()
	return m.name
}

// killPrimary kills (SIGKILL) the primary's postmaster and returns its
// name. Its backends and WAL senders notice their postmaster's death and
// exit on their own (PostgreSQL checks for it wherever a process waits),
// a commit waiting for its standby among them, unacknowledged.
func (s *pgSyncStore) killPrimary() string {
	m := s.c.members[0]
	m.proc.cmd.Process.Kill()
	return m.name
}

// Put stores value under key on the primary. Once -kill leader has
// killed the primary every Put fails with harness.ErrWritesStopped:
// PostgreSQL does not promote a standby by itself, so no server takes
// writes until an operator (or a tool such as Patroni) promotes one.
func (s *pgSyncStore) Put(key, value []byte) error {
	t := s.acks.Begin(key, value)
	err := s.postgresStore.Put(key, value)
	s.acks.End(t, err)
	if err != nil && s.killLeader {
		if killed, _ := s.kill.Killed(); killed != "" {
			return fmt.Errorf("%w: pg-sync's primary was killed by -kill, and PostgreSQL does not promote a standby by itself (%v)", harness.ErrWritesStopped, err)
		}
	}
	return err
}

// standbyValues reads key from every surviving standby, returning the
// values of those that have it.
func (s *pgSyncStore) standbyValues(key []byte) ([][]byte, error) {
	var vals [][]byte
	for _, m := range s.c.members[1:] {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		var v []byte
		err := m.db.QueryRowContext(ctx, "SELECT v FROM kvlab_kv WHERE k = $1", key).Scan(&v)
		cancel()
		switch {
		case err == nil:
			vals = append(vals, v)
		case !errors.Is(err, sql.ErrNoRows):
			return nil, fmt.Errorf("standby %s: %w", m.name, err)
		}
	}
	return vals, nil
}

// waitReplayed waits (up to 30 s) until every standby has replayed all
// the WAL it received, so a read on it sees every commit it holds.
func (s *pgSyncStore) waitReplayed() error {
	deadline := time.Now().Add(30 * time.Second)
	for _, m := range s.c.members[1:] {
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			var done bool
			err := m.db.QueryRowContext(ctx, "SELECT coalesce(pg_last_wal_replay_lsn() >= pg_last_wal_receive_lsn(), true)").Scan(&done)
			cancel()
			if err == nil && done {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("standby %s had not replayed the WAL it received within 30 s (%v)", m.name, err)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	return nil
}

// failover reports what killing the primary did: writes stopped, no
// standby took over, and whether every acknowledged write is on a
// standby.
func (s *pgSyncStore) failover(killedAfter time.Duration) *harness.FailoverReport {
	f := &harness.FailoverReport{
		Killed: "primary", KilledAfterNs: killedAfter.Nanoseconds(), WritesStopped: true,
		What: "the primary was killed (SIGKILL); PostgreSQL does not fail over by itself: the standbys stay read-only standbys, and every write after the kill failed until the run's end (promoting one is an operator's or a tool's job, such as Patroni's)",
	}
	names := make([]string, 0, len(s.c.members)-1)
	for _, m := range s.c.members[1:] {
		names = append(names, m.name)
	}
	from := "the standbys (" + strings.Join(names, ", ") + "), a write kept when any has it"
	if err := s.waitReplayed(); err != nil {
		f.AckCheck = &harness.AckCheck{ReadFrom: from, Error: err.Error()}
		return f
	}
	f.AckCheck = s.acks.Check(from, 2*time.Minute, s.standbyValues)
	return f
}

// ReplicationReport reports the members, their replication state and
// their flushes per commit between the last two StoreStats calls.
func (s *pgSyncStore) ReplicationReport(commits int64) *harness.ReplicationReport {
	s.mu.Lock()
	before, after := s.flushes[0], s.flushes[1]
	s.mu.Unlock()
	killed, killedAfter := s.kill.Killed()
	rep := &harness.ReplicationReport{
		Leader: "primary",
		Commit: fmt.Sprintf("synchronous_commit = %s, synchronous_standby_names = '%s'", s.c.setting, pgSyncStandbyNames(s.c.opts.Replicas, s.c.opts.Quorum)),
		Net:    s.net,
	}
	rep.LeaderFlushFirst = true // a walsender sends only WAL the primary has flushed
	switch s.c.setting {
	case "on", "remote_apply":
		rep.WaitsFor = "follower_flush"
	case "remote_write":
		rep.WaitsFor = "follower_write"
	default:
		rep.WaitsFor = "leader_only"
	}
	states := map[string]string{}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	rows, err := s.c.members[0].db.QueryContext(ctx, "SELECT application_name, state, sync_state FROM pg_stat_replication")
	if err == nil {
		for rows.Next() {
			var name, state, syncState string
			if rows.Scan(&name, &state, &syncState) == nil {
				states[name] = state + ", " + syncState
			}
		}
		rows.Close()
	}
	cancel()
	for _, m := range s.c.members {
		rm := harness.ReplicaMember{Name: m.name, Role: "standby", Addr: "127.0.0.1:" + strconv.Itoa(m.port), State: states[m.name]}
		if m.name == "primary" {
			rm.Role = "primary"
		}
		if m.name == killed {
			rm.State, rm.KilledAfterNs = "killed (SIGKILL) by -kill", killedAfter.Nanoseconds()
		}
		b, okb := before[m.name]
		a, oka := after[m.name]
		switch {
		case m.name != "primary" && a == 0:
			// PostgreSQL 15's WAL receiver counts its flushes in memory
			// but never reports them to pg_stat_wal: a standby that
			// streamed and shows none does not say, which is not zero.
			rm.FlushSource = "unavailable: this standby's pg_stat_wal shows none of its WAL receiver's flushes (the receiver does not report them there); device_io's flush_requests count every member's together"
		case okb && oka:
			rm.Flushes, rm.FlushesCounted, rm.FlushSource = a-b, true, "pg_stat_wal.wal_sync"
			if commits > 0 {
				rm.FlushesPerCommit = float64(rm.Flushes) / float64(commits)
			}
		}
		rep.Members = append(rep.Members, rm)
	}
	if s.killLeader && killed != "" {
		rep.Failover = s.failover(killedAfter)
	}
	return rep
}

// Close closes the client's connections and stops the cluster.
func (s *pgSyncStore) Close() error {
	s.kill.Disarm()
	err := s.postgresStore.Close()
	if serr := s.c.stop(); err == nil {
		err = serr
	}
	return err
}
