// Package archivetest is test support for the packages that keep runs in
// an archive: a reproducible series of made-up runs (Synthetic) and a
// fast way to fill an archive with many of them (Fill), for the tests and
// benchmarks of the archive and of the /runs page.
package archivetest

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"kvlab/internal/archive"
)

// Synthetic returns the i-th of a reproducible series of made-up bench
// runs, for benchmarks and tests that need a full archive: a realistic
// result (latency table, probe, a timeline of seconds points) spread over
// 4 lessons, 5 cells each, 3 engines, 4 sync policies and 3 workloads.
func Synthetic(i int, seconds int) *archive.Run {
	engines := []string{"kv", "bbolt", "pebble"}
	syncs := []string{"always", "group", "batch:64", "none"}
	workloads := []string{"fillrandom", "readrandom", "overwrite"}
	e, s, w := engines[i%3], syncs[(i/3)%4], workloads[(i/12)%3]
	ops := 1000.0 + float64(i%997)
	spec := fmt.Sprintf("bench -engine %s -sync %s -workload %s -ops 8000", e, s, w)
	var tl, points strings.Builder
	tl.WriteString("[")
	points.WriteString("[")
	for sec := 1; sec <= seconds; sec++ {
		if sec > 1 {
			tl.WriteString(",")
			points.WriteString(",")
		}
		fmt.Fprintf(&tl, `{"elapsed_seconds":%d,"ops":%d,"ops_per_sec":%.1f,"p50_ns":%d,"p99_ns":%d,"engine":%q}`,
			sec, int(ops)*sec, ops, 40000+i%1000, 900000+i%5000, e)
		fmt.Fprintf(&points, `{"second":%d,"ops":%d,"ops_per_sec":%.1f,"seconds":1}`, sec, int(ops), ops)
	}
	tl.WriteString("]")
	points.WriteString("]")
	// The latency table's spectrum and histogram, shaped like a real
	// run's (12 points, 23 buckets), so sizes measured on these runs hold
	// for real ones.
	var spectrum, hist strings.Builder
	for k, p := range []string{"0", "10", "25", "50", "75", "90", "95", "99", "99.5", "99.9", "99.99", "100"} {
		if k > 0 {
			spectrum.WriteString(",")
		}
		fmt.Fprintf(&spectrum, `{"p":%s,"ns":%d}`, p, 20000+k*k*9000+i%1000)
	}
	le := 2512.0
	for k := range 23 {
		if k > 0 {
			hist.WriteString(",")
		}
		fmt.Fprintf(&hist, `{"le_ns":%.0f,"count":%d}`, le, (i*7+k*13)%2000)
		le *= 1.585
	}
	probe := `{"fs":"ext4","device":"vda","rotational":false,"write_ns":1800,"fdatasync_ns":950000,"sync_call":"fdatasync","cores":2,"go":"go1.26"}`
	result := fmt.Sprintf(`{"kind":"bench","spec":%q,"engine":%q,"sync":%q,"workload":%q,"threads":1,"ops":8000,"units":8000,`+
		`"wall_seconds":%.3f,"ops_per_sec":%.1f,"units_per_sec":%.1f,"value_size":128,"keys":8000,"dist":"uniform","warmup":800,`+
		`"latency":{"put":{"count":8000,"mean_ns":%d,"min_ns":20000,"p50_ns":%d,"p95_ns":800000,"p99_ns":%d,"p999_ns":2000000,"max_ns":3000000,"exact":true,"spectrum":[%s],"histogram":[%s]}},`+
		`"fsyncs":8000,"fsyncs_counted":true,"fsync_mean_ns":950000,"bytes_written":1200000,"timeline":%s,"probe":%s,"load_avg":0.5}`,
		spec+" -threads 1 -value-size 128 -keys 8000 -dist uniform -warmup 800", e, s, w, 8000/ops, ops, ops,
		500000+i%1000, 40000+i%1000, 900000+i%5000, spectrum.String(), hist.String(), points.String(), probe)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Minute)
	return &archive.Run{
		Kind: "bench", Spec: spec, SpecFull: spec + " -threads 1 -value-size 128 -keys 8000 -dist uniform -warmup 800",
		Engine: e, Sync: s, Workload: w, Result: json.RawMessage(result), Probe: json.RawMessage(probe),
		Timeline: json.RawMessage(tl.String()), Source: "cell",
		Lesson: fmt.Sprintf("%02d-lesson", 1+i%4), Cell: fmt.Sprintf("c%d", 1+(i/4)%5), Browser: fmt.Sprintf("b%03d", i%40),
		Version: "devel+synthetic", Host: "synthetic/000000000000",
		Started: t0, Ended: t0.Add(time.Duration(seconds) * time.Second),
	}
}

// Fill adds n runs made by Synthetic (timelines of seconds points) to a.
// An SQLite archive (one whose Where is an existing kvlab.db) is filled
// through a connection of Fill's own to that file, in transactions of
// 1000 runs, so 100,000 runs take seconds, not an fsync each; statistics
// are then refreshed (ANALYZE), as a SQLite that has seen "PRAGMA
// optimize" would have them by then. Any other archive (PostgreSQL) gets
// one Add per run.
func Fill(ctx context.Context, a archive.Archive, n, seconds int) error {
	where := a.Where()
	if st, err := os.Stat(where); err != nil || !st.Mode().IsRegular() || filepath.Base(where) != archive.FileName {
		for i := range n {
			if _, err := a.Add(ctx, Synthetic(i, seconds)); err != nil {
				return err
			}
		}
		return nil
	}
	if err := fillSQLite(ctx, where, n, seconds); err != nil {
		return fmt.Errorf("archivetest: filling %s: %w", where, err)
	}
	return nil
}

// runColumns are the columns of the archive's runs table that a run sets,
// as archive.Run stores them: times in integer nanoseconds since 1970
// (0 for a zero time), JSON as text, Own as 0 or 1.
const runColumns = `kind, spec, spec_full, engine, sync, workload, result, probe, timeline, source, lesson, cell, quiz, browser, version, host, started, ended, line, own`

func runArgs(r *archive.Run) []any {
	nanos := func(t time.Time) int64 {
		if t.IsZero() {
			return 0
		}
		return t.UnixNano()
	}
	own := 0
	if r.Own {
		own = 1
	}
	return []any{r.Kind, r.Spec, r.SpecFull, r.Engine, r.Sync, r.Workload, string(r.Result), string(r.Probe), string(r.Timeline),
		r.Source, r.Lesson, r.Cell, r.Quiz, r.Browser, r.Version, r.Host, nanos(r.Started), nanos(r.Ended), r.Line, own}
}

// fillSQLite adds n synthetic runs to the SQLite archive at path.
func fillSQLite(ctx context.Context, path string, n, seconds int) error {
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_txlock", "immediate")
	db, err := sql.Open("sqlite", "file:"+(&url.URL{Path: path}).EscapedPath()+"?"+q.Encode())
	if err != nil {
		return err
	}
	defer db.Close()
	insert := `INSERT INTO runs (` + runColumns + `) VALUES (?` + strings.Repeat(",?", strings.Count(runColumns, ",")) + `)`
	for start := 0; start < n; start += 1000 {
		if err := addChunk(ctx, db, insert, start, min(start+1000, n), seconds); err != nil {
			return err
		}
	}
	_, err = db.ExecContext(ctx, "ANALYZE")
	return err
}

// addChunk adds synthetic runs start to end-1 in one transaction.
func addChunk(ctx context.Context, db *sql.DB, insert string, start, end, seconds int) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	st, err := tx.PrepareContext(ctx, insert)
	if err != nil {
		return err
	}
	defer st.Close()
	for i := start; i < end; i++ {
		r := Synthetic(i, seconds)
		if !json.Valid(r.Result) || !json.Valid(r.Probe) || !json.Valid(r.Timeline) {
			return fmt.Errorf("synthetic run %d is not valid JSON", i)
		}
		if _, err := st.ExecContext(ctx, runArgs(r)...); err != nil {
			return err
		}
	}
	return tx.Commit()
}
