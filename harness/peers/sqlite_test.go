package peers

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"kvlab/harness"
)

// openSQLite opens a SQLite store under policy in a fresh directory,
// closed when the test ends, and returns it with its stats and directory.
func openSQLite(t *testing.T, policy string) (harness.Store, harness.StatsReporter, string) {
	t.Helper()
	dir := t.TempDir()
	st, err := OpenSQLite(dir, policy)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st, st.(harness.StatsReporter), dir
}

// TestSQLiteSyncCounts checks the syncs the counting VFS sees for a few
// writes under each policy: FULL syncs the WAL once per commit, NORMAL
// never (the writes are far below a checkpoint's 1000 pages), and batch:N
// once per N writes. (Open's schema commit has already created the WAL,
// whose header sync is not part of the count.)
func TestSQLiteSyncCounts(t *testing.T) {
	const writes = 24
	tests := []struct {
		policy  string
		writers int
		want    int64
	}{
		{"always", 1, writes},
		{"always", 4, writes}, // one writer at a time: no sharing
		{"batch:5", 1, writes / 5},
		{"batch:6", 3, writes / 6},
		{"none", 4, 0},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/%d-writers", tt.policy, tt.writers), func(t *testing.T) {
			st, r, _ := openSQLite(t, tt.policy)
			before := r.StoreStats()
			putConcurrently(t, st, writes, tt.writers)
			after := r.StoreStats()
			if got := after.Fsyncs - before.Fsyncs; got != tt.want {
				t.Errorf("syncs during %d writes = %d, want %d", writes, got, tt.want)
			}
			if grew := after.FsyncTime > before.FsyncTime; grew != (tt.want > 0) {
				t.Errorf("sync time grew = %v, want %v", grew, tt.want > 0)
			}
			// Every policy writes each commit's pages to the WAL.
			if got := after.BytesWritten - before.BytesWritten; got < writes*100 {
				t.Errorf("bytes written for %d values of 100 B = %d, want at least %d", writes, got, writes*100)
			}
		})
	}
}

// TestSQLitePeriodicSyncs checks that periodic:D syncs the WAL on its own,
// with no write asking for it, and that the writes themselves do not.
func TestSQLitePeriodicSyncs(t *testing.T) {
	st, r, _ := openSQLite(t, "periodic:2ms")
	before := r.StoreStats().Fsyncs
	if err := st.Put([]byte("k"), []byte("v")); err != nil {
		t.Fatal(err)
	}
	// Wait (without a deadline of our own: go test's -timeout bounds it)
	// until the timer has synced.
	for r.StoreStats().Fsyncs == before {
		time.Sleep(time.Millisecond)
	}
}

// TestSQLiteBatchCommitsEveryN checks that under batch:N a write reaches a
// committed transaction exactly on the Nth write, as another connection to
// the file sees it, and that Get sees it before that.
func TestSQLiteBatchCommitsEveryN(t *testing.T) {
	st, _, dir := openSQLite(t, "batch:3")
	other, err := sql.Open("sqlite", filepath.Join(dir, sqliteFile))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	committed := func(key string) bool {
		var n int
		if err := other.QueryRow("SELECT count(*) FROM kv WHERE k = ?", []byte(key)).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n == 1
	}
	checkBatch3Commits(t, st, committed)
}

// TestSQLiteStoresApart checks that two stores open at once count their
// own syncs, each through its own counting VFS.
func TestSQLiteStoresApart(t *testing.T) {
	a, ra, _ := openSQLite(t, "always")
	_, rb, _ := openSQLite(t, "always")
	before := rb.StoreStats().Fsyncs
	for i := range 5 {
		if err := a.Put(fmt.Appendf(nil, "k%d", i), []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	if ra.StoreStats().Fsyncs < 5 {
		t.Errorf("store a: %d syncs after 5 always writes, want at least 5", ra.StoreStats().Fsyncs)
	}
	if got := rb.StoreStats().Fsyncs - before; got != 0 {
		t.Errorf("store b counted %d syncs of store a's writes, want 0", got)
	}
}
