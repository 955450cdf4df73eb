package peers

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"time"

	"modernc.org/sqlite"

	"kvlab/engine"
	"kvlab/harness"
)

// sqliteFile is the name of the database file inside the run's directory
// (SQLite adds sqlite.db-wal and sqlite.db-shm beside it in WAL mode).
const sqliteFile = "sqlite.db"

// sqliteSupported lists the -sync policies OpenSQLite accepts.
const sqliteSupported = "always, batch:N, periodic:D and none"

// sqliteBusyTimeout is how long a connection waits for another's lock
// before a statement fails. Writes are serialized by the adapter, so only a
// checkpoint racing a reader waits at all.
const sqliteBusyTimeout = 10 * time.Second

// sqliteSchema is the one table: a key, its value, in key order (WITHOUT
// ROWID stores the rows in the primary key's B-tree itself, so a Get is one
// B-tree lookup, as in bbolt). BLOBs compare with memcmp: byte order.
const sqliteSchema = `CREATE TABLE IF NOT EXISTS kv (k BLOB PRIMARY KEY, v BLOB) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS kvlab_tick (n INTEGER NOT NULL);
INSERT INTO kvlab_tick SELECT 0 WHERE NOT EXISTS (SELECT 1 FROM kvlab_tick);`

// OpenSQLite opens (creating if needed) a SQLite database in
// dir/sqlite.db, through modernc.org/sqlite (SQLite translated to Go: no C
// compiler, nothing to install), and returns it as a harness.Store that is
// safe for concurrent use. It is the harness.OpenFunc registered as
// "sqlite".
//
// The database is in WAL mode: a commit appends the changed pages to
// sqlite.db-wal and, when synchronous=FULL, fdatasyncs it; every 1000 pages
// (SQLite's default auto-checkpoint) the committing connection copies the
// WAL back into sqlite.db, syncing both files. Each Put is one statement,
// INSERT ... ON CONFLICT DO UPDATE, each Delete one DELETE, each in its own
// transaction unless batch:N groups them. SQLite has one writer at a time;
// the adapter serializes writes with a mutex (rather than letting
// connections collide and retry on SQLITE_BUSY), and reads run on other
// connections beside it, as WAL mode allows. The policies map onto that as
// follows.
//
//   - always: synchronous=FULL. A Put returns after its commit's
//     fdatasync of the WAL, one commit at a time. (The first commit after
//     the WAL is created or restarted also syncs its header, and a
//     checkpoint syncs the WAL and the database file: a few more syncs
//     than Puts, never fewer.)
//   - batch:N: synchronous=FULL, and the adapter keeps one transaction
//     open and commits it on every Nth Put or Delete. As with bbolt, and
//     unlike kv, the writes before the Nth live only in SQLite's page cache
//     in this process: a process kill loses them, not only a power cut.
//     Gets and scans read through the open transaction so they see them.
//   - periodic:D: synchronous=NORMAL (see none), and a timer that every D
//     commits a one-row update with synchronous=FULL on the writer's
//     turn: that commit's fdatasync of the WAL covers every frame written
//     before it, so what was acknowledged before the tick survives a power
//     cut (Pebble's adapter does the same with an empty synced WAL record).
//     The first failure of that commit is returned by every later write.
//   - none: synchronous=NORMAL. A commit write(2)s its frames to the WAL
//     and returns without a sync; the WAL is synced only at a checkpoint
//     (every 1000 pages) and on close. Where this differs from kv's none:
//     SQLite has no write buffer of its own in front of the WAL, so a
//     committed Put survives a process kill (kv's none may lose up to its
//     64 KiB buffer); against a power cut both lose what only the page
//     cache held. NORMAL is the setting SQLite's documentation recommends
//     for WAL mode, and it is not durable against a power cut.
//   - group: an error. SQLite commits one transaction at a time and a
//     commit never waits to share its sync with others, so there is no
//     group commit to turn on; an application can only batch writes into
//     one transaction itself, which batch:N measures.
//
// synchronous=OFF (no sync even at a checkpoint, which can corrupt the
// database on a power cut) has no -sync name here; none is NORMAL.
//
// The sync itself: SQLite syncs with fsync(2) in this library unless told
// otherwise; OpenSQLite switches it to fdatasync(2) (sqlite.Fdatasync,
// process-wide), which is what Debian's and other Linux builds of SQLite
// use and what kv and Pebble call, so the engines pay the same system
// call. On macOS SQLite keeps its own sync (fsync, no F_FULLFSYNC unless
// PRAGMA fullfsync is set), which is weaker than kv's there.
//
// Which of the probe's fdatasync cases a commit pays: overwrite, mostly.
// The WAL grows (appends) only until the first checkpoint; after that
// SQLite writes it again from its start, into blocks it already has, so
// the model's probe-fed T_fsync for sqlite is fdatasync_overwrite_ns, as
// for kv (harness.ProbeFsyncFor).
//
// StoreStats counts every sync and every written byte SQLite issues, on
// the WAL and the database file, through a shim VFS (sqlite_vfs.go); the
// harness also times each sync (SyncTimes).
func OpenSQLite(dir, syncText string) (harness.Store, error) {
	policy, err := engine.ParseSync(syncText)
	if err != nil {
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	if policy.Mode == engine.SyncGroup {
		return nil, unsupportedSync("sqlite", syncText,
			"SQLite commits one transaction at a time and never shares one commit's sync with another's",
			sqliteSupported)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	// Where fdatasync is unavailable (macOS, Windows) SQLite keeps its own.
	_, _ = sqlite.Fdatasync(true)

	counts := new(vfsCounts)
	vfs, err := newCountVFS(counts)
	if err != nil {
		return nil, err
	}
	synchronous := "FULL"
	if policy.Mode == engine.SyncPeriodic || policy.Mode == engine.SyncNone {
		synchronous = "NORMAL"
	}
	q := url.Values{}
	q.Set("vfs", vfs.name)
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", sqliteBusyTimeout.Milliseconds()))
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous("+synchronous+")")
	path := filepath.Join(dir, sqliteFile)
	db, err := sql.Open("sqlite", path+"?"+q.Encode())
	if err != nil {
		vfs.close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	s := &sqliteStore{db: db, vfs: vfs, counts: counts, policy: policy}
	if err := s.prepare(); err != nil {
		db.Close()
		vfs.close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	if policy.Mode == engine.SyncPeriodic {
		s.periodic = startPeriodic(policy.Interval, "sqlite: periodic WAL sync", s.tick)
	}
	return s, nil
}

var (
	_ harness.Store         = (*sqliteStore)(nil)
	_ harness.Scanner       = (*sqliteStore)(nil)
	_ harness.StatsReporter = (*sqliteStore)(nil)
	_ harness.SyncTimer     = (*sqliteStore)(nil)
)

// sqliteStore adapts a SQLite database to harness.Store, harness.Scanner,
// harness.StatsReporter and harness.SyncTimer. It is safe for concurrent
// use.
type sqliteStore struct {
	db     *sql.DB // a pool: the writer's turn and the readers each take a connection
	vfs    *countVFS
	counts *vfsCounts
	policy engine.SyncPolicy

	put, get, del, scan *sql.Stmt

	// write guards SQLite's one writer: every Put, Delete, batch commit
	// and periodic tick holds it, so writers queue here rather than on
	// SQLITE_BUSY. In batch:N it also guards tx and pending, and reads
	// take it to read through tx.
	write   sync.Mutex
	tx      *sql.Tx // batch:N: the open transaction; nil when none
	pending int     // batch:N: writes in tx. Invariant: pending < policy.N

	periodic *periodicSyncer // periodic:D only: the timer that syncs the WAL (tick)
}

// prepare creates the schema and prepares the statements.
func (s *sqliteStore) prepare() error {
	if _, err := s.db.Exec(sqliteSchema); err != nil {
		return err
	}
	for _, st := range []struct {
		p   **sql.Stmt
		sql string
	}{
		{&s.put, "INSERT INTO kv (k, v) VALUES (?, ?) ON CONFLICT (k) DO UPDATE SET v = excluded.v"},
		{&s.get, "SELECT v FROM kv WHERE k = ?"},
		{&s.del, "DELETE FROM kv WHERE k = ?"},
		{&s.scan, "SELECT k, v FROM kv WHERE k >= ? ORDER BY k LIMIT ?"},
	} {
		var err error
		if *st.p, err = s.db.Prepare(st.sql); err != nil {
			return err
		}
	}
	return nil
}

// tick commits one small update with synchronous=FULL on one connection,
// on the writer's turn, which fdatasyncs the WAL and so everything in it.
func (s *sqliteStore) tick() error {
	s.write.Lock()
	defer s.write.Unlock()
	ctx := context.Background()
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "PRAGMA synchronous=FULL"); err != nil {
		return err
	}
	_, err = conn.ExecContext(ctx, "UPDATE kvlab_tick SET n = n + 1")
	// On failure the error is sticky: no later write runs on a connection
	// this left at FULL.
	if _, rerr := conn.ExecContext(ctx, "PRAGMA synchronous=NORMAL"); err == nil {
		err = rerr
	}
	return err
}

// exec runs one write (stmt with args) as the policy asks.
func (s *sqliteStore) exec(stmt *sql.Stmt, args ...any) error {
	s.write.Lock()
	defer s.write.Unlock()
	switch s.policy.Mode {
	case engine.SyncBatch:
		return s.batchLocked(stmt, [][]any{args})
	case engine.SyncPeriodic:
		if err := s.periodic.err(); err != nil {
			return err
		}
	}
	_, err := stmt.Exec(args...)
	return err
}

// batchLocked runs stmt once per args in the open batch transaction
// (begun if none is), each run one of batch:N's N writes, and commits
// it once N are pending.
// REQUIRES: s.write held and the policy batch:N.
func (s *sqliteStore) batchLocked(stmt *sql.Stmt, args [][]any) error {
	if s.tx == nil {
		tx, err := s.db.Begin()
		if err != nil {
			return err
		}
		s.tx = tx
	}
	for _, a := range args {
		if _, err := s.tx.Stmt(stmt).Exec(a...); err != nil {
			return err
		}
	}
	s.pending += len(args)
	if s.pending < s.policy.N {
		return nil
	}
	return s.commitLocked()
}

// commitLocked commits the open batch transaction.
// REQUIRES: s.write held and s.tx != nil.
func (s *sqliteStore) commitLocked() error {
	tx := s.tx
	s.tx, s.pending = nil, 0
	return tx.Commit()
}

// reading returns the statement to read with: stmt itself, or in batch:N
// while a transaction is open, stmt inside it (so reads see its writes),
// with the writer's lock held until done is called.
func (s *sqliteStore) reading(stmt *sql.Stmt) (st *sql.Stmt, done func()) {
	if s.policy.Mode != engine.SyncBatch {
		return stmt, func() {}
	}
	s.write.Lock()
	if s.tx == nil {
		s.write.Unlock()
		return stmt, func() {}
	}
	return s.tx.Stmt(stmt), s.write.Unlock
}

// Put stores value under key.
func (s *sqliteStore) Put(key, value []byte) error {
	if value == nil {
		value = []byte{} // a nil []byte binds as NULL; the value is empty, not absent
	}
	return s.exec(s.put, key, value)
}

// Get returns a copy of the value stored under key.
func (s *sqliteStore) Get(key []byte) ([]byte, bool, error) {
	st, done := s.reading(s.get)
	defer done()
	var value []byte
	err := st.QueryRow(key).Scan(&value)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	if value == nil {
		value = []byte{}
	}
	return value, true, nil
}

// Delete removes key; deleting a missing key is not an error.
func (s *sqliteStore) Delete(key []byte) error {
	return s.exec(s.del, key)
}

// Scan calls fn for up to limit keys >= start in byte order (limit <= 0
// means no limit), stopping early when fn returns false.
//
// fn gets sql.RawBytes: the driver's own memory, valid until the next row
// is read, which happens only after fn has returned, so they are valid
// while fn runs, as harness.Scanner promises. fn must copy what it keeps.
func (s *sqliteStore) Scan(start []byte, limit int, fn func(key, value []byte) bool) error {
	if limit <= 0 {
		limit = -1 // SQLite: a negative LIMIT is no limit
	}
	if start == nil {
		start = []byte{}
	}
	st, done := s.reading(s.scan)
	defer done()
	rows, err := st.Query(start, limit)
	if err != nil {
		return err
	}
	return visitRows(rows, fn)
}

// visitRows calls fn with each (key, value) row until fn returns false,
// and closes rows. fn gets sql.RawBytes: the driver's memory, valid until
// the next row is read, which is after fn returns.
func visitRows(rows *sql.Rows, fn func(key, value []byte) bool) error {
	defer rows.Close()
	var k, v sql.RawBytes
	for rows.Next() {
		if err := rows.Scan(&k, &v); err != nil {
			return err
		}
		if !fn(k, v) {
			break
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	return rows.Close()
}

// SyncTimes times the same syncs StoreStats counts.
func (s *sqliteStore) SyncTimes() *harness.SyncTimes { return &s.counts.times }

// StoreStats reports every sync and every written byte SQLite issued
// through the counting VFS since Open: WAL and database file alike, so
// BytesWritten includes the checkpoints' second copy of each page, and
// so is also StoredBytes, the numerator of the run's write amplification.
func (s *sqliteStore) StoreStats() harness.StoreStats {
	return harness.StoreStats{
		Fsyncs:       s.counts.syncs.Load(),
		FsyncTime:    time.Duration(s.counts.syncNanos.Load()),
		BytesWritten: s.counts.written.Load(),
		StoredBytes:  s.counts.written.Load(),
	}
}

// Close stops the periodic syncer, if any, commits a pending batch:N
// transaction, closes the database (which checkpoints and syncs the WAL)
// and unregisters the counting VFS.
func (s *sqliteStore) Close() error {
	s.periodic.stop()
	var err error
	s.write.Lock()
	if s.tx != nil {
		err = s.commitLocked()
	}
	s.write.Unlock()
	for _, st := range []*sql.Stmt{s.put, s.get, s.del, s.scan} {
		if st != nil {
			st.Close()
		}
	}
	if cerr := s.db.Close(); err == nil {
		err = cerr
	}
	s.vfs.close()
	if perr := s.periodic.err(); perr != nil && err == nil {
		err = perr
	}
	return err
}
