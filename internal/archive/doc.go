// Package archive keeps a record of every run: the line as written and
// with its defaults filled in, the full JSON result, the conditions, the
// per-second timeline, where it came from (a lesson cell, a quiz, the
// command line), the labserver version and host, and when it started
// and ended. "Archive what you ran: the next person has nothing else."
//
// Two stores implement one interface, Archive:
//
//   - SQLite (the default): one file, kvlab.db, in the data directory,
//     through modernc.org/sqlite (pure Go: labserver still cross-builds
//     without cgo). WAL mode, synchronous=FULL (an Add that returned is
//     on disk), a busy timeout for several processes sharing the file.
//   - PostgreSQL: Open with a postgres:// URL, so several labservers
//     serving one cohort keep one record (pgx v5).
//
// Both carry a schema version in the table schema_version and migrate
// on open; a database written by a newer labserver is refused
// (ErrNewerSchema). A SQLite file that is not a database, or fails its
// integrity check, is moved aside as kvlab.db.corrupt-TIMESTAMP (named
// in the log) and a fresh one started: never silently overwritten.
//
// Recording happens after a run's timed region: callers Add a run once
// its result is in hand, never while it measures.
//
// Compare (compare.go) sets two groups of runs side by side per metric
// with the statistics benchstat uses (golang.org/x/perf/benchmath).
package archive
