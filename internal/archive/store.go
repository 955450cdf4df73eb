package archive

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
)

// sqlStore is the Archive both databases share: the same tables and the
// same statements through database/sql; a dialect supplies what differs
// (DDL types, placeholders, migration locking).
//
// Times are stored as integer nanoseconds since 1970 UTC (0 for a zero
// time), JSON as text exactly as given.
type sqlStore struct {
	db      *sql.DB
	d       dialect
	where   string
	mu      sync.RWMutex // guards closed
	closed  bool
	onClose func() error // runs after db.Close; may be nil
	group   *committer   // the group commit of flood-prone writes (group.go)
}

// dialect is what differs between SQLite and PostgreSQL.
type dialect struct {
	name string
	// idColumn is the DDL of an auto-incrementing integer primary key.
	idColumn string
	// rebind turns a statement written with ? placeholders into the
	// database's own.
	rebind func(string) string
	// lock, run inside the migration transaction, keeps two processes
	// from migrating at once (nil where the transaction itself does).
	lock func(ctx context.Context, tx *sql.Tx) error
}

// schemaVersion is the newest schema this build knows: len(migrations).
var schemaVersion = len(migrations)

// migrations[i] takes a database from version i to i+1. Append only:
// a released migration never changes. {{id}} is the dialect's id column.
var migrations = []string{
	// 1: runs and predictions.
	`CREATE TABLE runs (
		id {{id}},
		kind TEXT NOT NULL,
		spec TEXT NOT NULL,
		spec_full TEXT NOT NULL,
		engine TEXT NOT NULL DEFAULT '',
		sync TEXT NOT NULL DEFAULT '',
		workload TEXT NOT NULL DEFAULT '',
		result TEXT NOT NULL DEFAULT '',
		probe TEXT NOT NULL DEFAULT '',
		timeline TEXT NOT NULL DEFAULT '',
		source TEXT NOT NULL DEFAULT '',
		lesson TEXT NOT NULL DEFAULT '',
		cell TEXT NOT NULL DEFAULT '',
		quiz TEXT NOT NULL DEFAULT '',
		browser TEXT NOT NULL DEFAULT '',
		version TEXT NOT NULL DEFAULT '',
		host TEXT NOT NULL DEFAULT '',
		started BIGINT NOT NULL DEFAULT 0,
		ended BIGINT NOT NULL DEFAULT 0
	);
	CREATE INDEX runs_lesson ON runs (lesson, id);
	CREATE INDEX runs_lesson_cell ON runs (lesson, cell, id);
	CREATE INDEX runs_browser ON runs (browser, id);
	CREATE INDEX runs_engine ON runs (engine, id);
	CREATE INDEX runs_sync ON runs (sync, id);
	CREATE INDEX runs_workload ON runs (workload, id);
	CREATE TABLE predictions (
		id {{id}},
		browser TEXT NOT NULL,
		lesson TEXT NOT NULL DEFAULT '',
		quiz TEXT NOT NULL,
		value TEXT NOT NULL,
		at BIGINT NOT NULL
	);
	CREATE INDEX predictions_browser_quiz ON predictions (browser, quiz, id);`,
	// 2: rooms (live classes), their polls and predictions, and the class board.
	roomsMigration,
	// 3: which line of its cell a run was and whether it was the lesson's
	// own (Run.Line, Run.Own), and a prediction's kept grade.
	`ALTER TABLE runs ADD COLUMN line INTEGER NOT NULL DEFAULT -1;
	ALTER TABLE runs ADD COLUMN own INTEGER NOT NULL DEFAULT 0;
	ALTER TABLE predictions ADD COLUMN verdict TEXT NOT NULL DEFAULT ''`,
	// 4: a hash of each room's presenter secret; each board entry's
	// conditions beside its measures, its result in a table of its own.
	roomsMigration3,
	// 5: why a poll's measurement was made on a machine too busy to
	// judge predictions by (Poll.Busy).
	`ALTER TABLE polls ADD COLUMN busy TEXT NOT NULL DEFAULT ''`,
}

// migrate brings the database to schemaVersion in one transaction, or
// refuses one from a newer labserver. logf hears each step applied.
func (s *sqlStore) migrate(ctx context.Context, logf func(string, ...any)) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if s.d.lock != nil {
		if err := s.d.lock(ctx, tx); err != nil {
			return err
		}
	}
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)`); err != nil {
		return err
	}
	var v int
	switch err := tx.QueryRowContext(ctx, `SELECT version FROM schema_version`).Scan(&v); {
	case errors.Is(err, sql.ErrNoRows):
		if _, err := tx.ExecContext(ctx, `INSERT INTO schema_version (version) VALUES (0)`); err != nil {
			return err
		}
	case err != nil:
		return err
	}
	if v > schemaVersion {
		return fmt.Errorf("%w: %s has schema version %d, this labserver (%s) knows versions up to %d; run a newer labserver, or point it at another database",
			ErrNewerSchema, s.where, v, Version(), schemaVersion)
	}
	if v == schemaVersion {
		return tx.Commit()
	}
	for i := v; i < schemaVersion; i++ {
		ddl := strings.ReplaceAll(migrations[i], "{{id}}", s.d.idColumn)
		for _, stmt := range strings.Split(ddl, ";") {
			if strings.TrimSpace(stmt) == "" {
				continue
			}
			if _, err := tx.ExecContext(ctx, stmt); err != nil {
				return fmt.Errorf("archive: migrating %s to schema version %d: %w", s.where, i+1, err)
			}
		}
	}
	if _, err := tx.ExecContext(ctx, s.d.rebind(`UPDATE schema_version SET version = ?`), schemaVersion); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	if v > 0 {
		logf("archive: %s migrated from schema version %d to %d", s.where, v, schemaVersion)
	}
	return nil
}

// use runs fn unless the store is closed.
func (s *sqlStore) use(fn func() error) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return ErrClosed
	}
	return fn()
}

func nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func fromNanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

func text(m json.RawMessage) string { return string(m) }

func raw(s string) json.RawMessage {
	if s == "" {
		return nil
	}
	return json.RawMessage(s)
}

const runColumns = `kind, spec, spec_full, engine, sync, workload, result, probe, timeline, source, lesson, cell, quiz, browser, version, host, started, ended, line, own`

// insertRun is the statement that stores one run, its id returned.
const insertRun = `INSERT INTO runs (` + runColumns + `) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?) RETURNING id`

func runArgs(r *Run) []any {
	return []any{r.Kind, r.Spec, r.SpecFull, r.Engine, r.Sync, r.Workload, text(r.Result), text(r.Probe), text(r.Timeline),
		r.Source, r.Lesson, r.Cell, r.Quiz, r.Browser, r.Version, r.Host, nanos(r.Started), nanos(r.Ended), r.Line, boolInt(r.Own)}
}

// Add implements Archive.
func (s *sqlStore) Add(ctx context.Context, r *Run) (int64, error) {
	if err := checkRun(r); err != nil {
		return 0, err
	}
	var id int64
	err := s.use(func() error {
		return s.db.QueryRowContext(ctx, s.d.rebind(insertRun), runArgs(r)...).Scan(&id)
	})
	if err != nil {
		return 0, fmt.Errorf("archive: adding a %s run to %s: %w", r.Kind, s.where, err)
	}
	r.ID = id
	return id, nil
}

// checkRun refuses a run no page could show.
func checkRun(r *Run) error {
	switch {
	case r == nil:
		return fmt.Errorf("archive: nil run")
	case r.Kind == "":
		return fmt.Errorf("archive: run has no kind: allowed: bench, sweep, crash, probe, model")
	case r.Spec == "":
		return fmt.Errorf("archive: %s run has no spec", r.Kind)
	}
	for name, m := range map[string]json.RawMessage{"result": r.Result, "probe": r.Probe, "timeline": r.Timeline} {
		if len(m) > 0 && !json.Valid(m) {
			return fmt.Errorf("archive: %s run: %s is not valid JSON", r.Kind, name)
		}
	}
	return nil
}

// Get implements Archive.
func (s *sqlStore) Get(ctx context.Context, id int64) (*Run, error) {
	r := &Run{ID: id}
	var result, probe, timeline string
	var started, ended, own int64
	err := s.use(func() error {
		return s.db.QueryRowContext(ctx, s.d.rebind(`SELECT `+runColumns+` FROM runs WHERE id = ?`), id).Scan(
			&r.Kind, &r.Spec, &r.SpecFull, &r.Engine, &r.Sync, &r.Workload, &result, &probe, &timeline,
			&r.Source, &r.Lesson, &r.Cell, &r.Quiz, &r.Browser, &r.Version, &r.Host, &started, &ended, &r.Line, &own)
	})
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("%w: run %d is not in %s", ErrNotFound, id, s.where)
	}
	if err != nil {
		return nil, fmt.Errorf("archive: reading run %d from %s: %w", id, s.where, err)
	}
	r.Result, r.Probe, r.Timeline = raw(result), raw(probe), raw(timeline)
	r.Started, r.Ended, r.Own = fromNanos(started), fromNanos(ended), own != 0
	return r, nil
}

// List implements Archive.
func (s *sqlStore) List(ctx context.Context, q Query) ([]Run, error) {
	var where []string
	var args []any
	for _, f := range []struct{ col, val string }{
		{"lesson", q.Lesson}, {"cell", q.Cell}, {"engine", q.Engine}, {"sync", q.Sync},
		{"workload", q.Workload}, {"browser", q.Browser}, {"kind", q.Kind}, {"source", q.Source},
	} {
		if f.val != "" {
			where = append(where, f.col+" = ?")
			args = append(args, f.val)
		}
	}
	if q.Before > 0 {
		where = append(where, "id < ?")
		args = append(args, q.Before)
	}
	if !q.StartedAfter.IsZero() {
		where = append(where, "started > ?")
		args = append(args, nanos(q.StartedAfter))
	}
	limit := q.Limit
	if limit <= 0 {
		limit = DefaultLimit
	}
	limit = min(limit, MaxLimit)
	stmt := `SELECT id, kind, spec, spec_full, engine, sync, workload, result, source, lesson, cell, quiz, browser, version, host, started, ended, line, own FROM runs`
	if len(where) > 0 {
		stmt += " WHERE " + strings.Join(where, " AND ")
	}
	order := " ORDER BY id DESC"
	if q.Oldest {
		order = " ORDER BY id"
	}
	stmt += order + " LIMIT " + strconv.Itoa(limit)
	var out []Run
	err := s.use(func() error {
		return s.queryEach(ctx, stmt, args, func(rows *sql.Rows) error {
			var r Run
			var result string
			var started, ended, own int64
			if err := rows.Scan(&r.ID, &r.Kind, &r.Spec, &r.SpecFull, &r.Engine, &r.Sync, &r.Workload, &result,
				&r.Source, &r.Lesson, &r.Cell, &r.Quiz, &r.Browser, &r.Version, &r.Host, &started, &ended, &r.Line, &own); err != nil {
				return err
			}
			r.Result = raw(result)
			r.Started, r.Ended, r.Own = fromNanos(started), fromNanos(ended), own != 0
			out = append(out, r)
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("archive: listing runs in %s: %w", s.where, err)
	}
	return out, nil
}

// AddPrediction implements Archive.
func (s *sqlStore) AddPrediction(ctx context.Context, p *Prediction) (int64, error) {
	if p == nil || p.Browser == "" || p.Quiz == "" {
		return 0, fmt.Errorf("archive: a prediction needs a browser and a quiz")
	}
	if p.At.IsZero() {
		p.At = time.Now() // when accepted, not when its group commits
	}
	var id int64
	err := s.grouped(func(tx *sql.Tx) error {
		return tx.QueryRowContext(ctx, s.d.rebind(`INSERT INTO predictions (browser, lesson, quiz, value, at) VALUES (?,?,?,?,?) RETURNING id`),
			p.Browser, p.Lesson, p.Quiz, p.Value, nanos(p.At)).Scan(&id)
	})
	if err != nil {
		return 0, fmt.Errorf("archive: adding a prediction to %s: %w", s.where, err)
	}
	p.ID = id
	return id, nil
}

// Predictions implements Archive.
func (s *sqlStore) Predictions(ctx context.Context, browser, quiz string) ([]Prediction, error) {
	var out []Prediction
	err := s.use(func() error {
		return s.queryEach(ctx, `SELECT id, browser, lesson, quiz, value, at, verdict FROM predictions WHERE browser = ? AND quiz = ? ORDER BY id`, []any{browser, quiz}, func(rows *sql.Rows) error {
			var p Prediction
			var at int64
			var verdict string
			if err := rows.Scan(&p.ID, &p.Browser, &p.Lesson, &p.Quiz, &p.Value, &at, &verdict); err != nil {
				return err
			}
			p.At, p.Verdict = fromNanos(at), raw(verdict)
			out = append(out, p)
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("archive: reading predictions from %s: %w", s.where, err)
	}
	return out, nil
}

// SetVerdict implements Archive: the UPDATE sets the verdict only where
// none is kept, so of two graders racing the first one's verdict stays.
func (s *sqlStore) SetVerdict(ctx context.Context, id int64, verdict json.RawMessage) (json.RawMessage, error) {
	if len(verdict) == 0 || !json.Valid(verdict) {
		return nil, fmt.Errorf("archive: prediction %d: a verdict must be valid JSON", id)
	}
	var kept string
	err := s.use(func() error {
		if _, err := s.db.ExecContext(ctx, s.d.rebind(`UPDATE predictions SET verdict = ? WHERE id = ? AND verdict = ''`), text(verdict), id); err != nil {
			return err
		}
		return s.db.QueryRowContext(ctx, s.d.rebind(`SELECT verdict FROM predictions WHERE id = ?`), id).Scan(&kept)
	})
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("%w: prediction %d is not in %s", ErrNotFound, id, s.where)
	}
	if err != nil {
		return nil, fmt.Errorf("archive: keeping the verdict of prediction %d in %s: %w", id, s.where, err)
	}
	return raw(kept), nil
}

// Where implements Archive.
func (s *sqlStore) Where() string { return s.where }

// Close implements Archive.
func (s *sqlStore) Close() error {
	s.stopGroup()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	err := s.db.Close()
	if s.onClose != nil {
		err = errors.Join(err, s.onClose())
	}
	return err
}
