package archive

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Run is one recorded run. The JSON names are what `labserver runs show
// -format json` prints and the server's pages read: add, never rename.
type Run struct {
	ID       int64           `json:"id"`        // assigned by Add; newer runs have larger ids within one archive
	Kind     string          `json:"kind"`      // bench, sweep, crash, probe, model
	Spec     string          `json:"spec"`      // the line as written
	SpecFull string          `json:"spec_full"` // with every default filled in (harness Spec.String)
	Engine   string          `json:"engine"`    // for filters; "" when not applicable; a multi-engine line: comma-joined
	Sync     string          `json:"sync"`
	Workload string          `json:"workload"`
	Result   json.RawMessage `json:"result,omitempty"`   // the full JSON result (an object, or an array for sweep/-repeat)
	Probe    json.RawMessage `json:"probe,omitempty"`    // the conditions the run was measured under
	Timeline json.RawMessage `json:"timeline,omitempty"` // the per-second progress events, a JSON array
	Source   string          `json:"source"`             // "cell", "quiz" or "cli"
	Lesson   string          `json:"lesson,omitempty"`
	Cell     string          `json:"cell,omitempty"`
	Quiz     string          `json:"quiz,omitempty"`
	Browser  string          `json:"browser,omitempty"` // an id the page keeps (not a person)
	Version  string          `json:"version"`           // labserver version (Version())
	Host     string          `json:"host"`              // where it ran (HostID())
	Started  time.Time       `json:"started"`
	Ended    time.Time       `json:"ended"`

	// Line is the 0-based index of the line in the cell (or run: quiz) it
	// was run from, -1 when it has none (command-line runs, and runs
	// recorded before schema version 3). Own says the line is the lesson's own line
	// at that index, after the page's normalisation (lesson.CellLines:
	// trimmed, comments and blank lines dropped); an edited cell's line
	// is recorded with Own false. Quizzes grade only from own lines, or
	// from edits a quiz allows (package quiz, "edit:").
	Line int  `json:"line"`
	Own  bool `json:"own"`
}

// Query selects runs for List. Empty fields do not filter; the others
// must match exactly (Engine, Sync and Workload match the Run's fields,
// so a multi-engine line matches only its comma-joined text).
type Query struct {
	Lesson, Cell, Engine, Sync, Workload, Browser string
	Kind                                          string // bench, sweep, ...; "" for every kind
	Source                                        string // cell, quiz, cli; "" for every source
	Before                                        int64  // only ids below this (a cursor for the next page); 0 = from the newest
	Limit                                         int    // at most this many; 0 = DefaultLimit, capped at MaxLimit

	// StartedAfter, when not zero, selects only runs whose Started is
	// after it; with Oldest the list is oldest (smallest id) first, so the
	// first run after a moment comes first.
	StartedAfter time.Time
	Oldest       bool
}

// Page sizes for List.
const (
	DefaultLimit = 50
	MaxLimit     = 1000
)

// Prediction is a student's answer to a quiz, stored before the
// measurement it predicts starts, so the record shows it came first.
type Prediction struct {
	ID      int64     `json:"id"`
	Browser string    `json:"browser"`
	Lesson  string    `json:"lesson"`
	Quiz    string    `json:"quiz"`
	Value   string    `json:"value"`
	At      time.Time `json:"at"` // when the server accepted it, not when a write committed

	// Verdict is the grade of this prediction, kept once given (see
	// SetVerdict): the quiz feedback as JSON, empty until graded.
	Verdict json.RawMessage `json:"verdict,omitempty"`
}

// Archive stores runs and predictions. Implementations are safe for
// concurrent use, also by several processes sharing one database.
type Archive interface {
	// Add stores r and returns its new id (also set in r.ID). When it
	// returns nil the run is durable. A zero Started/Ended is stored as
	// is; Version and Host are the caller's to fill (Version(), HostID()).
	Add(ctx context.Context, r *Run) (int64, error)
	// Get returns one run in full, or an error wrapping ErrNotFound.
	Get(ctx context.Context, id int64) (*Run, error)
	// List returns the runs q selects, newest (largest id) first. Each
	// is a summary: every field except Timeline and Probe, which are
	// left empty for speed (Get has them).
	List(ctx context.Context, q Query) ([]Run, error)
	// AddPrediction stores p and returns its id (also set in p.ID); a
	// zero At is set to now.
	AddPrediction(ctx context.Context, p *Prediction) (int64, error)
	// Predictions returns a browser's predictions for one quiz, oldest
	// first, each with its verdict when it has one.
	Predictions(ctx context.Context, browser, quiz string) ([]Prediction, error)
	// SetVerdict keeps verdict as prediction id's grade unless it already
	// has one, and returns the verdict the prediction keeps: the first
	// one set wins, so a prediction is graded once. An unknown id is an
	// error wrapping ErrNotFound.
	SetVerdict(ctx context.Context, id int64, verdict json.RawMessage) (json.RawMessage, error)
	// Rooms: live classes, their polls and the class board (class.go).
	RoomArchive
	// Close releases the database. Methods called after it return
	// ErrClosed.
	Close() error
	// Where says where the records are, for messages: a file path, or a
	// PostgreSQL URL without its password.
	Where() string
}

// FileName is the SQLite archive's file name inside the data directory.
const FileName = "kvlab.db"

// Open opens (creating and migrating as needed) the archive target names:
// "" or "sqlite" for kvlab.db in dataDir, or a postgres:// or
// postgresql:// URL. logf, which may be nil, receives the notices a
// person should see: a corrupt file moved aside, a migration applied.
func Open(ctx context.Context, target string, dataDir string, logf func(format string, args ...any)) (Archive, error) {
	if logf == nil {
		logf = func(string, ...any) {}
	}
	switch {
	case target == "" || target == "sqlite":
		if dataDir == "" {
			return nil, fmt.Errorf("archive: sqlite: no data directory given")
		}
		return openSQLite(ctx, filepath.Join(dataDir, FileName), logf)
	case strings.HasPrefix(target, "postgres://") || strings.HasPrefix(target, "postgresql://"):
		return openPostgres(ctx, target, logf)
	}
	return nil, fmt.Errorf("%w %q: allowed: sqlite (kvlab.db in the data directory), a postgres:// or postgresql:// URL", ErrBadTarget, target)
}

// DefaultDataDir is the data directory labserver uses without -data: a
// folder "kvlab" in the user's cache directory (the temporary directory
// when there is none).
func DefaultDataDir() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		dir = os.TempDir()
	}
	return filepath.Join(dir, "kvlab")
}
