package peers

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"kvlab/harness"
	"kvlab/harness/harnesstest"
)

// TestPostgresUnderAClosedDirectory: a labserver run as root keeps its
// runs under a directory nobody cannot enter (/root/.cache, /root being
// 0700), and PostgreSQL runs as nobody. The run must still work, its data
// in a directory of its own under os.TempDir(), and that directory must
// be gone when the harness has removed the run directory (the old code
// refused the run: "nobody ... cannot enter").
func TestPostgresUnderAClosedDirectory(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("only root's PostgreSQL runs as another user (nobody); as this user PostgreSQL can enter any directory the run can")
	}
	requirePostgres(t)
	for _, line := range []string{
		"bench -engine postgres -sync always -ops 20 -warmup 2",
		"bench -engine pg-sync -sync always -ops 20 -warmup 2",
	} {
		closed, err := os.MkdirTemp("", "kvlab-closed-") // 0700, as /root is
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(closed)
		dir := filepath.Join(closed, "runs")
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if _, err := harnesstest.Exec(context.Background(), line+" -format json", harness.Env{Dir: dir}); err != nil {
			t.Errorf("%s in %s: %v", line, dir, err)
			continue
		}
		// The harness removed its run directory, and with it (at once: a
		// command-line run exits right after) the data's directory.
		if left := pgHomesUnder(t, closed); len(left) != 0 {
			t.Errorf("%s: %v outlived the run", line, left)
		}
	}
}

// pgHomesUnder lists the PostgreSQL directories under os.TempDir() whose
// run directory is under parent.
func pgHomesUnder(t *testing.T, parent string) []string {
	t.Helper()
	ds, _ := filepath.Glob(filepath.Join(os.TempDir(), pgHomePrefix+"*"))
	var out []string
	for _, d := range ds {
		if b, err := os.ReadFile(filepath.Join(d, "run-dir")); err == nil && strings.HasPrefix(string(b), parent+string(filepath.Separator)) {
			out = append(out, d)
		}
	}
	return out
}

// TestSweepPgHomes: a PostgreSQL directory left by a killed labserver (its
// run directory gone, no watcher of this process) is removed by the next
// sweep; one whose run directory exists stays.
func TestSweepPgHomes(t *testing.T) {
	tmp := t.TempDir()
	gone := filepath.Join(tmp, pgHomePrefix+"gone")
	kept := filepath.Join(tmp, pgHomePrefix+"kept")
	// Half removed long ago (no run-dir), and one just made (run-dir not
	// yet written).
	half := filepath.Join(tmp, pgHomePrefix+"half")
	fresh := filepath.Join(tmp, pgHomePrefix+"fresh")
	for _, d := range []string{half, fresh} {
		if err := os.MkdirAll(filepath.Join(d, "pg"), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-2 * pgHomeHalfRemoved)
	if err := os.Chtimes(half, old, old); err != nil {
		t.Fatal(err)
	}
	for d, run := range map[string]string{gone: filepath.Join(tmp, "no-such-run"), kept: tmp} {
		if err := os.MkdirAll(filepath.Join(d, "pg"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "run-dir"), []byte(run), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	pgHomes.Lock()
	sweepPgHomes(tmp)
	pgHomes.Unlock()
	if _, err := os.Stat(gone); !os.IsNotExist(err) {
		t.Errorf("%s: %v, want it removed (its run directory is gone)", gone, err)
	}
	if _, err := os.Stat(half); !os.IsNotExist(err) {
		t.Errorf("%s: %v, want it removed (half removed long ago)", half, err)
	}
	for _, d := range []string{kept, fresh} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s: %v, want it kept (its run directory exists, or it is being made)", d, err)
		}
	}
}
