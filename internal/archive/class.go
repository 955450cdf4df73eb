package archive

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// The record of a class. A live class (its state is package classroom's,
// its web face package liveclass's) is a "room" while it is open; the
// archive keeps each one as a Room, the polls opened in it with every browser's
// last prediction and the measured value, and the results students shared
// to its board, so a restarted server picks the class up where it was and
// past classes can be shown side by side.

// Room is one recorded class.
type Room struct {
	ID        int64     `json:"id"`
	Code      string    `json:"code"` // canonical, no dash
	Lesson    string    `json:"lesson"`
	Section   int       `json:"section"`
	AllowRuns bool      `json:"allow_runs"`
	Created   time.Time `json:"created"`
	Closed    time.Time `json:"closed"`  // zero while open
	Expires   time.Time `json:"expires"` // the last presenter action plus the room's time to live
	// PresenterHash is the SHA-256 (hex) of the room's presenter secret;
	// never exported.
	PresenterHash string `json:"-"`
}

// Poll is one quiz opened to a room.
type Poll struct {
	ID             int64            `json:"id"`
	Room           int64            `json:"room"`
	Key            string           `json:"key"` // "p1", ... within the room
	Quiz           string           `json:"quiz"`
	Opened         time.Time        `json:"opened"`
	MeasureStarted time.Time        `json:"measure_started"` // zero while predictions are open
	Measured       *float64         `json:"measured"`        // nil until the measurement is known
	RunID          int64            `json:"run_id"`          // the run measured; 0 until known
	Busy           string           `json:"busy,omitempty"`  // why the machine was too busy to judge predictions by the measurement; "" when it was not
	Predictions    []RoomPrediction `json:"predictions,omitempty"`
}

// RoomPrediction is one browser's last prediction in a poll.
type RoomPrediction struct {
	Poll    int64     `json:"poll"`
	Browser string    `json:"browser"`
	Value   float64   `json:"value"`
	At      time.Time `json:"at"`
}

// BoardEntry is one result shared to a room's board.
type BoardEntry struct {
	ID       int64              `json:"id"`
	Room     int64              `json:"room"`
	At       time.Time          `json:"at"`
	Kind     string             `json:"kind"`     // probe or bench
	Measures map[string]float64 `json:"measures"` // the board's values taken from Result
	// Conditions are the sharer's machine and run as the board shows
	// them (os, fs, device, ...), taken from Result once, when shared.
	// They are kept as JSON, and passed on as they are.
	Conditions json.RawMessage `json:"conditions"`
	Result     json.RawMessage `json:"result"` // BoardEntries leaves it out; BoardResult reads it
	Label      string          `json:"label"`
	AddrHash   string          `json:"addr_hash"` // a hash of the sharer's address and the room: counts shares, names no one
}

// RoomArchive is the part of Archive that records rooms.
type RoomArchive interface {
	// AddRoom stores r and sets r.ID.
	AddRoom(ctx context.Context, r *Room) (int64, error)
	// UpdateRoom stores r's section, allow_runs, closed and expires.
	UpdateRoom(ctx context.Context, r *Room) error
	// GetRoom returns one room, or an error wrapping ErrNotFound.
	GetRoom(ctx context.Context, id int64) (*Room, error)
	// Rooms lists rooms newest first (at most limit; 0 = DefaultLimit,
	// capped at MaxLimit).
	Rooms(ctx context.Context, limit int) ([]Room, error)
	// OpenRooms lists the rooms neither closed nor expired at now.
	OpenRooms(ctx context.Context, now time.Time) ([]Room, error)
	// AddPoll stores p and sets p.ID.
	AddPoll(ctx context.Context, p *Poll) (int64, error)
	// UpdatePoll stores p's measure_started, measured, run_id and busy.
	UpdatePoll(ctx context.Context, p *Poll) error
	// RoomPolls returns a room's polls in the order opened, each with
	// its predictions (oldest first).
	RoomPolls(ctx context.Context, room int64) ([]Poll, error)
	// PutRoomPrediction stores a browser's prediction in a poll,
	// replacing its earlier one.
	PutRoomPrediction(ctx context.Context, p *RoomPrediction) error
	// AddBoardEntry stores e and sets e.ID.
	AddBoardEntry(ctx context.Context, e *BoardEntry) (int64, error)
	// BoardEntries returns a room's board, oldest first, without the
	// stored results: reading it costs in proportion to the entries, not
	// their bytes. (An entry stored before conditions were kept comes
	// with its Result and no Conditions.)
	BoardEntries(ctx context.Context, room int64) ([]BoardEntry, error)
	// BoardResult returns one entry's stored result, or an error
	// wrapping ErrNotFound.
	BoardResult(ctx context.Context, room, id int64) (json.RawMessage, error)
	// DeleteBoardEntry removes one entry from a room's board; an entry
	// that is not there is an error wrapping ErrNotFound.
	DeleteBoardEntry(ctx context.Context, room, id int64) error
}

const roomsMigration = `CREATE TABLE rooms (
		id {{id}},
		code TEXT NOT NULL,
		lesson TEXT NOT NULL,
		section INTEGER NOT NULL DEFAULT 0,
		allow_runs INTEGER NOT NULL DEFAULT 0,
		created BIGINT NOT NULL,
		closed BIGINT NOT NULL DEFAULT 0,
		expires BIGINT NOT NULL
	);
	CREATE INDEX rooms_open ON rooms (closed, expires);
	CREATE TABLE polls (
		id {{id}},
		room BIGINT NOT NULL,
		poll_key TEXT NOT NULL,
		quiz TEXT NOT NULL,
		opened BIGINT NOT NULL,
		measure_started BIGINT NOT NULL DEFAULT 0,
		measured DOUBLE PRECISION,
		run_id BIGINT NOT NULL DEFAULT 0
	);
	CREATE INDEX polls_room ON polls (room, id);
	CREATE TABLE room_predictions (
		poll BIGINT NOT NULL,
		browser TEXT NOT NULL,
		value DOUBLE PRECISION NOT NULL,
		at BIGINT NOT NULL
	);
	CREATE UNIQUE INDEX room_predictions_poll_browser ON room_predictions (poll, browser);
	CREATE TABLE board_entries (
		id {{id}},
		room BIGINT NOT NULL,
		at BIGINT NOT NULL,
		kind TEXT NOT NULL,
		measures TEXT NOT NULL,
		result TEXT NOT NULL,
		label TEXT NOT NULL DEFAULT '',
		addr_hash TEXT NOT NULL DEFAULT ''
	);
	CREATE INDEX board_entries_room ON board_entries (room, id)`

// roomsMigration3 keeps a hash of each room's presenter secret, and each
// board entry's conditions beside its measures, and its result (up to 64 KiB) in a table of its own, so
// reading a board reads small rows and decodes no result. (In a row of
// board_entries the result lay before label and addr_hash: SQLite had to
// walk its overflow pages to reach them.) An entry stored before keeps
// its result in board_entries and has no conditions.
const roomsMigration3 = `ALTER TABLE rooms ADD COLUMN presenter_hash TEXT NOT NULL DEFAULT '';
	ALTER TABLE board_entries ADD COLUMN conditions TEXT NOT NULL DEFAULT '';
	CREATE TABLE board_results (
		entry BIGINT PRIMARY KEY,
		result TEXT NOT NULL
	)`

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// insertID runs an INSERT ... RETURNING id.
func (s *sqlStore) insertID(ctx context.Context, what, stmt string, args ...any) (int64, error) {
	var id int64
	err := s.use(func() error { return s.db.QueryRowContext(ctx, s.d.rebind(stmt), args...).Scan(&id) })
	if err != nil {
		return 0, fmt.Errorf("archive: adding %s to %s: %w", what, s.where, err)
	}
	return id, nil
}

// exec runs a statement that changes rows.
func (s *sqlStore) exec(ctx context.Context, what, stmt string, args ...any) error {
	err := s.use(func() error {
		_, err := s.db.ExecContext(ctx, s.d.rebind(stmt), args...)
		return err
	})
	if err != nil {
		return fmt.Errorf("archive: %s in %s: %w", what, s.where, err)
	}
	return nil
}

// AddRoom implements Archive.
func (s *sqlStore) AddRoom(ctx context.Context, r *Room) (int64, error) {
	if r == nil || r.Code == "" || r.Lesson == "" {
		return 0, fmt.Errorf("archive: a room needs a code and a lesson")
	}
	id, err := s.insertID(ctx, "a room", `INSERT INTO rooms (code, lesson, section, allow_runs, created, closed, expires, presenter_hash) VALUES (?,?,?,?,?,?,?,?) RETURNING id`,
		r.Code, r.Lesson, r.Section, boolInt(r.AllowRuns), nanos(r.Created), nanos(r.Closed), nanos(r.Expires), r.PresenterHash)
	r.ID = id
	return id, err
}

// UpdateRoom implements Archive.
func (s *sqlStore) UpdateRoom(ctx context.Context, r *Room) error {
	return s.exec(ctx, fmt.Sprintf("updating room %d", r.ID), `UPDATE rooms SET section = ?, allow_runs = ?, closed = ?, expires = ? WHERE id = ?`,
		r.Section, boolInt(r.AllowRuns), nanos(r.Closed), nanos(r.Expires), r.ID)
}

// queryEach runs a query and calls scan for each row. REQUIRES: inside use.
func (s *sqlStore) queryEach(ctx context.Context, stmt string, args []any, scan func(*sql.Rows) error) error {
	rows, err := s.db.QueryContext(ctx, s.d.rebind(stmt), args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := scan(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

const roomColumns = `id, code, lesson, section, allow_runs, created, closed, expires, presenter_hash`

func (s *sqlStore) queryRooms(ctx context.Context, stmt string, args ...any) ([]Room, error) {
	var out []Room
	err := s.use(func() error {
		return s.queryEach(ctx, stmt, args, func(rows *sql.Rows) error {
			var r Room
			var allow int
			var created, closed, expires int64
			if err := rows.Scan(&r.ID, &r.Code, &r.Lesson, &r.Section, &allow, &created, &closed, &expires, &r.PresenterHash); err != nil {
				return err
			}
			r.AllowRuns = allow != 0
			r.Created, r.Closed, r.Expires = fromNanos(created), fromNanos(closed), fromNanos(expires)
			out = append(out, r)
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("archive: reading rooms from %s: %w", s.where, err)
	}
	return out, nil
}

// GetRoom implements Archive.
func (s *sqlStore) GetRoom(ctx context.Context, id int64) (*Room, error) {
	rs, err := s.queryRooms(ctx, `SELECT `+roomColumns+` FROM rooms WHERE id = ?`, id)
	if err != nil {
		return nil, err
	}
	if len(rs) == 0 {
		return nil, fmt.Errorf("%w: room %d is not in %s", ErrNotFound, id, s.where)
	}
	return &rs[0], nil
}

// Rooms implements Archive.
func (s *sqlStore) Rooms(ctx context.Context, limit int) ([]Room, error) {
	if limit <= 0 {
		limit = DefaultLimit
	}
	return s.queryRooms(ctx, `SELECT `+roomColumns+` FROM rooms ORDER BY id DESC LIMIT ?`, min(limit, MaxLimit))
}

// OpenRooms implements Archive.
func (s *sqlStore) OpenRooms(ctx context.Context, now time.Time) ([]Room, error) {
	return s.queryRooms(ctx, `SELECT `+roomColumns+` FROM rooms WHERE closed = 0 AND expires > ? ORDER BY id`, nanos(now))
}

// AddPoll implements Archive.
func (s *sqlStore) AddPoll(ctx context.Context, p *Poll) (int64, error) {
	if p == nil || p.Room == 0 || p.Key == "" || p.Quiz == "" {
		return 0, fmt.Errorf("archive: a poll needs a room, a key and a quiz")
	}
	id, err := s.insertID(ctx, "a poll", `INSERT INTO polls (room, poll_key, quiz, opened, measure_started, measured, run_id, busy) VALUES (?,?,?,?,?,?,?,?) RETURNING id`,
		p.Room, p.Key, p.Quiz, nanos(p.Opened), nanos(p.MeasureStarted), nullFloat(p.Measured), p.RunID, p.Busy)
	p.ID = id
	return id, err
}

func nullFloat(f *float64) sql.NullFloat64 {
	if f == nil {
		return sql.NullFloat64{}
	}
	return sql.NullFloat64{Float64: *f, Valid: true}
}

// UpdatePoll implements Archive.
func (s *sqlStore) UpdatePoll(ctx context.Context, p *Poll) error {
	return s.exec(ctx, fmt.Sprintf("updating poll %d", p.ID), `UPDATE polls SET measure_started = ?, measured = ?, run_id = ?, busy = ? WHERE id = ?`,
		nanos(p.MeasureStarted), nullFloat(p.Measured), p.RunID, p.Busy, p.ID)
}

// RoomPolls implements Archive.
func (s *sqlStore) RoomPolls(ctx context.Context, room int64) ([]Poll, error) {
	var out []Poll
	byID := map[int64]int{}
	err := s.use(func() error {
		err := s.queryEach(ctx, `SELECT id, room, poll_key, quiz, opened, measure_started, measured, run_id, busy FROM polls WHERE room = ? ORDER BY id`, []any{room}, func(rows *sql.Rows) error {
			var p Poll
			var opened, started int64
			var measured sql.NullFloat64
			if err := rows.Scan(&p.ID, &p.Room, &p.Key, &p.Quiz, &opened, &started, &measured, &p.RunID, &p.Busy); err != nil {
				return err
			}
			p.Opened, p.MeasureStarted = fromNanos(opened), fromNanos(started)
			if measured.Valid {
				p.Measured = &measured.Float64
			}
			byID[p.ID] = len(out)
			out = append(out, p)
			return nil
		})
		if err != nil {
			return err
		}
		return s.queryEach(ctx, `SELECT p.poll, p.browser, p.value, p.at FROM room_predictions p JOIN polls q ON q.id = p.poll WHERE q.room = ? ORDER BY p.at, p.browser`, []any{room}, func(rows *sql.Rows) error {
			var p RoomPrediction
			var at int64
			if err := rows.Scan(&p.Poll, &p.Browser, &p.Value, &at); err != nil {
				return err
			}
			p.At = fromNanos(at)
			if i, ok := byID[p.Poll]; ok {
				out[i].Predictions = append(out[i].Predictions, p)
			}
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("archive: reading room %d's polls from %s: %w", room, s.where, err)
	}
	return out, nil
}

// PutRoomPrediction implements Archive.
func (s *sqlStore) PutRoomPrediction(ctx context.Context, p *RoomPrediction) error {
	if p == nil || p.Poll == 0 || p.Browser == "" {
		return fmt.Errorf("archive: a room prediction needs a poll and a browser")
	}
	if p.At.IsZero() {
		p.At = time.Now() // when accepted, not when its group commits
	}
	err := s.grouped(func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, s.d.rebind(`INSERT INTO room_predictions (poll, browser, value, at) VALUES (?,?,?,?) ON CONFLICT (poll, browser) DO UPDATE SET value = excluded.value, at = excluded.at`),
			p.Poll, p.Browser, p.Value, nanos(p.At))
		return err
	})
	if err != nil {
		return fmt.Errorf("archive: storing a prediction for poll %d in %s: %w", p.Poll, s.where, err)
	}
	return nil
}

// AddBoardEntry implements Archive.
func (s *sqlStore) AddBoardEntry(ctx context.Context, e *BoardEntry) (int64, error) {
	if e == nil || e.Room == 0 || e.Kind == "" || !json.Valid(e.Result) {
		return 0, fmt.Errorf("archive: a board entry needs a room, a kind and a JSON result")
	}
	m, err := json.Marshal(e.Measures)
	if err != nil {
		return 0, fmt.Errorf("archive: board entry measures: %w", err)
	}
	c := e.Conditions
	if len(c) == 0 {
		c = json.RawMessage(`{}`)
	}
	if !json.Valid(c) {
		return 0, fmt.Errorf("archive: board entry conditions: not JSON")
	}
	if e.At.IsZero() {
		e.At = time.Now()
	}
	var id int64
	err = s.grouped(func(tx *sql.Tx) error {
		err := tx.QueryRowContext(ctx, s.d.rebind(`INSERT INTO board_entries (room, at, kind, measures, conditions, result, label, addr_hash) VALUES (?,?,?,?,?,'',?,?) RETURNING id`),
			e.Room, nanos(e.At), e.Kind, string(m), string(c), e.Label, e.AddrHash).Scan(&id)
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, s.d.rebind(`INSERT INTO board_results (entry, result) VALUES (?,?)`), id, string(e.Result))
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("archive: adding a board entry to %s: %w", s.where, err)
	}
	e.ID = id
	return id, nil
}

// BoardEntries implements Archive.
func (s *sqlStore) BoardEntries(ctx context.Context, room int64) ([]BoardEntry, error) {
	var out []BoardEntry
	err := s.use(func() error {
		return s.queryEach(ctx, `SELECT id, room, at, kind, measures, conditions, CASE WHEN conditions = '' THEN result ELSE '' END, label, addr_hash
			FROM board_entries WHERE room = ? ORDER BY id`, []any{room}, func(rows *sql.Rows) error {
			var e BoardEntry
			var at int64
			var measures, conditions, result string
			if err := rows.Scan(&e.ID, &e.Room, &at, &e.Kind, &measures, &conditions, &result, &e.Label, &e.AddrHash); err != nil {
				return err
			}
			e.At = fromNanos(at)
			if result != "" {
				e.Result = raw(result)
			}
			if err := json.Unmarshal([]byte(measures), &e.Measures); err != nil {
				return errors.Join(fmt.Errorf("board entry %d: measures", e.ID), err)
			}
			if conditions != "" {
				e.Conditions = raw(conditions)
			}
			out = append(out, e)
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("archive: reading room %d's board from %s: %w", room, s.where, err)
	}
	return out, nil
}

// BoardResult implements Archive.
func (s *sqlStore) BoardResult(ctx context.Context, room, id int64) (json.RawMessage, error) {
	var result string
	err := s.use(func() error {
		return s.db.QueryRowContext(ctx, s.d.rebind(`SELECT COALESCE(r.result, e.result) FROM board_entries e LEFT JOIN board_results r ON r.entry = e.id
			WHERE e.room = ? AND e.id = ?`), room, id).Scan(&result)
	})
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("%w: board entry %d of room %d is not in %s", ErrNotFound, id, room, s.where)
	}
	if err != nil {
		return nil, fmt.Errorf("archive: reading board entry %d from %s: %w", id, s.where, err)
	}
	return raw(result), nil
}

// DeleteBoardEntry implements Archive.
func (s *sqlStore) DeleteBoardEntry(ctx context.Context, room, id int64) error {
	var n int64
	err := s.use(func() error {
		tx, err := s.db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		res, err := tx.ExecContext(ctx, s.d.rebind(`DELETE FROM board_entries WHERE room = ? AND id = ?`), room, id)
		if err != nil {
			return err
		}
		if n, err = res.RowsAffected(); err != nil || n == 0 {
			return err
		}
		if _, err := tx.ExecContext(ctx, s.d.rebind(`DELETE FROM board_results WHERE entry = ?`), id); err != nil {
			return err
		}
		return tx.Commit()
	})
	if err != nil {
		return fmt.Errorf("archive: removing board entry %d from %s: %w", id, s.where, err)
	}
	if n == 0 {
		return fmt.Errorf("%w: board entry %d of room %d is not in %s", ErrNotFound, id, room, s.where)
	}
	return nil
}
