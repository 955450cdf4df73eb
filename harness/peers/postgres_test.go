package peers

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"testing"

	"kvlab/harness"
	"kvlab/harness/harnesstest"
	"kvlab/internal/browsertest"
	"kvlab/internal/localserver"
)

// requirePostgres skips (or, with KVLAB_REQUIRE_TOOLS=1, fails) a test
// when PostgreSQL's server binaries are not installed.
func requirePostgres(t *testing.T) {
	t.Helper()
	if localserver.PostgresBinDir() == "" {
		browsertest.Missing(t, ErrPostgresMissing.Error())
	}
}

// openDir returns a fresh directory that every user can enter, removed
// when the test ends: as root a PostgreSQL cluster runs as nobody, and
// t.TempDir's parent is private. The shared suite and workload runs use it
// for every engine.
func openDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "kvlab-pgtest-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(d, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

func TestPostgresSettings(t *testing.T) {
	tests := []struct {
		policy           string
		syncCommit, dely string
		walDelayMs       int64
		err              string
	}{
		{"always", "on", "0", 0, ""},
		{"group", "on", "200", 0, ""},
		{"periodic:10ms", "off", "", 10, ""},
		{"none", "off", "", 200, ""},
		{"periodic:20s", "", "", 0, "wal_writer_delay takes 1ms to 10s"},
		{"batch:4", "", "", 0, "never after every N writes"},
	}
	for _, tt := range tests {
		session, wd, err := postgresSettings(tt.policy)
		if tt.err != "" {
			if !errors.Is(err, ErrUnsupportedSync) || !strings.Contains(err.Error(), tt.err) || !strings.Contains(err.Error(), postgresSupported) {
				t.Errorf("postgresSettings(%s) error = %v, want ErrUnsupportedSync saying %q and what is supported", tt.policy, err, tt.err)
			}
			continue
		}
		if tt.policy == "group" && session.Get("commit_siblings") != "5" {
			t.Errorf("postgresSettings(group): commit_siblings %q, want it set to 5", session.Get("commit_siblings"))
		}
		if err != nil || session.Get("synchronous_commit") != tt.syncCommit || session.Get("commit_delay") != tt.dely || wd.Milliseconds() != tt.walDelayMs {
			t.Errorf("postgresSettings(%s) = %v, %v, %v; want synchronous_commit=%s commit_delay=%q wal_writer_delay %d ms",
				tt.policy, session, wd, err, tt.syncCommit, tt.dely, tt.walDelayMs)
		}
	}
}

func TestPostgresURLRefusesPassword(t *testing.T) {
	for _, sch := range []string{"postgres", "postgresql"} {
		_, err := harnesstest.Exec(context.Background(), "bench -engine "+sch+"://u:secret@127.0.0.1:5432/db -ops 10", harness.Env{Dir: t.TempDir()})
		if err == nil || !strings.Contains(err.Error(), "holds a password") || strings.Contains(err.Error(), "secret") {
			t.Errorf("a %s:// URL with a password: error = %v, want it refused without printing the password", sch, err)
		}
	}
}

// TestPostgresEngine runs the store suite on a throwaway cluster under
// each policy, and checks the WAL flush counts: one per commit under
// always with one writer, far fewer under none.
func TestPostgresEngine(t *testing.T) {
	requirePostgres(t)
	for _, policy := range []string{"always", "group", "none"} {
		t.Run(policy, func(t *testing.T) {
			suite(t, "postgres", policy)
		})
	}
	const writes = 20
	for _, tt := range []struct {
		policy   string
		min, max int64
	}{
		{"always", writes, writes + 3}, // the server's own background work may flush a few more
		{"none", 0, writes / 2},
	} {
		t.Run("fsyncs/"+tt.policy, func(t *testing.T) {
			st, err := OpenPostgres(openDir(t), tt.policy)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			r := st.(harness.StatsReporter)
			before := r.StoreStats().Fsyncs
			for i := range writes {
				if err := st.Put(fmt.Appendf(nil, "k%d", i), []byte("v")); err != nil {
					t.Fatal(err)
				}
			}
			if got := r.StoreStats().Fsyncs - before; got < tt.min || got > tt.max {
				t.Errorf("%d writes under %s: %d WAL syncs in pg_stat_wal, want %d..%d", writes, tt.policy, got, tt.min, tt.max)
			}
		})
	}
}

// TestPostgresURL drives a server this test started itself through
// -engine postgres://, and checks that a -sync needing another
// wal_writer_delay is refused.
func TestPostgresURL(t *testing.T) {
	requirePostgres(t)
	srv, err := startPostgres(context.Background(), localserver.PostgresBinDir(), openDir(t), url.Values{"synchronous_commit": {"on"}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.stop() })
	url := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres", srv.port) // a line takes no ?parameters
	suite(t, url, "always")
	// The same server by libpq's other spelling of the scheme.
	suite(t, "postgresql"+strings.TrimPrefix(url, "postgres"), "always")
	_, err = harness.OpenEngine(url, t.TempDir(), "periodic:10ms")
	if !errors.Is(err, ErrUnsupportedSync) || !strings.Contains(err.Error(), "wal_writer_delay = 200 ms") {
		t.Errorf("periodic:10ms against wal_writer_delay 200ms: error = %v, want one naming the server's setting", err)
	}
	raw, err := harnesstest.Exec(context.Background(), "bench -engine "+url+" -sync always -workload seekrandom -ops 50 -keys 50", harness.Env{Dir: t.TempDir()})
	if err != nil {
		t.Fatalf("seekrandom on postgres: %v", err)
	}
	var r respResult
	decodeJSON(t, raw, &r)
	if r.Latency["scan"].Count != 50 {
		t.Errorf("seekrandom: %d scans, want 50", r.Latency["scan"].Count)
	}
}

// OpenPostgres is openPostgres without a run's context, for the tests.
func OpenPostgres(dir, syncText string) (harness.Store, error) {
	return openPostgres(context.Background(), dir, syncText)
}
