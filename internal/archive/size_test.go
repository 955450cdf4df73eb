package archive

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// sizeRuns and sizeSeconds are the archive the size target is about:
// 10,000 runs, each with a one-minute timeline (cells' runs are
// seconds long; a minute is generous).
const (
	sizeRuns    = 10_000
	sizeSeconds = 60
	sizeLimit   = 200 << 20
)

// TestArchiveSize checks the on-disk size of a SQLite archive of 10,000
// runs with timelines against 200 MB, and reports it. A size, not a
// time: it does not depend on the machine's speed.
func TestArchiveSize(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a large archive")
	}
	r := Synthetic(0, sizeSeconds)
	if !json.Valid(r.Result) || !json.Valid(r.Timeline) {
		t.Fatal("Synthetic made invalid JSON")
	}
	dir := t.TempDir()
	ctx := context.Background()
	a, err := Open(ctx, "", dir, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	if err := Fill(ctx, a, sizeRuns, sizeSeconds); err != nil {
		t.Fatal(err)
	}
	// Fold the WAL into the file, as a clean close does.
	if _, err := a.(*sqlStore).db.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		t.Fatal(err)
	}
	a.Close()
	var total int64
	m, _ := filepath.Glob(filepath.Join(dir, FileName+"*"))
	for _, f := range m {
		st, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		total += st.Size()
	}
	perRun := len(r.Result) + len(r.Timeline) + len(r.Probe) + len(r.SpecFull) + len(r.Spec)
	t.Logf("%d runs with %d-second timelines (about %d bytes of JSON each): %s is %.1f MB with its WAL (limit %d MB)",
		sizeRuns, sizeSeconds, perRun, FileName, float64(total)/(1<<20), sizeLimit>>20)
	if total > sizeLimit {
		t.Errorf("archive of %d runs: %d bytes, want at most %d", sizeRuns, total, sizeLimit)
	}
	// The file must be reopenable (and pass its integrity check, which
	// reads all of it: the time is reported, not checked).
	start := time.Now()
	a, err = Open(ctx, "", dir, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("reopening it, integrity check included, took %v", time.Since(start).Round(time.Millisecond))
	a.Close()
}
