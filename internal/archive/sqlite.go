package archive

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// The SQLite archive: one file, kvlab.db, in WAL mode so readers (the
// /runs page) never wait for a writer, with synchronous=FULL so a run
// whose Add returned survives a power loss, not just a killed process,
// and a busy timeout so two labservers on one data directory take turns
// instead of failing.

// sqliteBusyTimeout is how long a statement waits for another
// connection's (or process's) write lock before it fails.
const sqliteBusyTimeout = 10 * time.Second

// sqliteMagic starts every SQLite database file.
var sqliteMagic = []byte("SQLite format 3\x00")

var sqliteDialect = dialect{
	name:     "sqlite",
	idColumn: "INTEGER PRIMARY KEY AUTOINCREMENT",
	rebind:   func(q string) string { return q },
}

func openSQLite(ctx context.Context, path string, logf func(string, ...any)) (Archive, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("archive: %w", err)
	}
	s, err := openSQLiteFile(ctx, path, logf)
	if err == nil || !isCorrupt(err) {
		return s, err
	}
	aside, merr := moveAside(path)
	if merr != nil {
		return nil, fmt.Errorf("archive: %s is corrupt (%v) and could not be moved aside: %w", path, err, merr)
	}
	logf("archive: %s is corrupt (%v); moved it aside to %s (kept for recovery) and started a fresh archive", path, err, aside)
	return openSQLiteFile(ctx, path, logf)
}

// openSQLiteFile opens, checks and migrates one file. An error for which
// isCorrupt is true means the file is not a healthy database.
func openSQLiteFile(ctx context.Context, path string, logf func(string, ...any)) (*sqlStore, error) {
	if err := checkMagic(path); err != nil {
		return nil, err
	}
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", sqliteBusyTimeout.Milliseconds()))
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(FULL)")
	q.Add("_pragma", fmt.Sprintf("journal_size_limit(%d)", walCheckpointBytes))
	q.Add("_txlock", "immediate")
	dsn := "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + q.Encode()
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("archive: %s: %w", path, err)
	}
	s := &sqlStore{db: db, d: sqliteDialect, where: path, group: newCommitter()}
	if err := s.check(ctx); err != nil {
		db.Close()
		return nil, err
	}
	if err := s.migrate(ctx, logf); err != nil {
		db.Close()
		if isCorrupt(err) {
			return nil, corruptError{err}
		}
		return nil, err
	}
	return s, nil
}

// check runs SQLite's quick integrity check (every page and index entry
// well formed; it reads the whole file, about a second per few hundred
// MB).
func (s *sqlStore) check(ctx context.Context) error {
	rows, err := s.db.QueryContext(ctx, `PRAGMA quick_check`)
	if err != nil {
		if isCorrupt(err) {
			return corruptError{err}
		}
		return fmt.Errorf("archive: %s: %w", s.where, err)
	}
	defer rows.Close()
	var problems []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return corruptError{err}
		}
		if line != "ok" {
			problems = append(problems, line)
		}
	}
	if err := rows.Err(); err != nil {
		if isCorrupt(err) {
			return corruptError{err}
		}
		return fmt.Errorf("archive: %s: %w", s.where, err)
	}
	if len(problems) > 0 {
		return corruptError{fmt.Errorf("integrity check: %s", problems[0])}
	}
	return nil
}

// checkMagic reports a file that exists, is not empty and does not start
// like a SQLite database as corrupt.
func checkMagic(path string) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("archive: %w", err)
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return fmt.Errorf("archive: %s is not a regular file", path)
	}
	head := make([]byte, len(sqliteMagic))
	n, err := io.ReadFull(f, head)
	if n == 0 && err == io.EOF {
		return nil // empty: SQLite makes it a database
	}
	if err != nil && err != io.ErrUnexpectedEOF {
		return fmt.Errorf("archive: reading %s: %w", path, err)
	}
	if !bytes.Equal(head, sqliteMagic) {
		return corruptError{fmt.Errorf("not a SQLite database (its first bytes are %q)", head[:n])}
	}
	return nil
}

// corruptError marks a database that is damaged, not merely unreachable.
type corruptError struct{ err error }

func (e corruptError) Error() string { return e.err.Error() }
func (e corruptError) Unwrap() error { return e.err }

func isCorrupt(err error) bool {
	var c corruptError
	if errors.As(err, &c) {
		return true
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB:
			return true
		}
	}
	return false
}

// moveAside renames path, and its -wal and -shm files when they exist,
// to path.corrupt-TIMESTAMP (with a counter if that is taken) and returns
// the new name of path.
func moveAside(path string) (string, error) {
	stamp := time.Now().UTC().Format("20060102T150405Z")
	aside := path + ".corrupt-" + stamp
	for i := 2; ; i++ {
		if _, err := os.Lstat(aside); errors.Is(err, os.ErrNotExist) {
			break
		}
		aside = fmt.Sprintf("%s.corrupt-%s-%d", path, stamp, i)
	}
	if err := os.Rename(path, aside); err != nil {
		return "", err
	}
	for _, ext := range []string{"-wal", "-shm"} {
		if _, err := os.Lstat(path + ext); err == nil {
			if err := os.Rename(path+ext, aside+ext); err != nil {
				return aside, err
			}
		}
	}
	return aside, nil
}
