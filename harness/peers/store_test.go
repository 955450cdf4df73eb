package peers

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"kvlab/harness"
)

// policiesFor lists the sync policies the shared suite runs each engine
// under: the ones every engine has, plus those that take a different code
// path in that engine's adapter.
func policiesFor(engineName string) []string {
	switch engineName {
	case "bbolt":
		return []string{"always", "group", "batch:3", "none"}
	case "pebble", "kv":
		return []string{"always", "group", "batch:3", "periodic:5ms", "none"}
	case "sqlite":
		return []string{"always", "batch:3", "periodic:5ms", "none"}
	case "redis", "postgres": // TestRedisEngine and TestPostgresEngine run them
		return nil
	case "pg-sync", "etcd": // TestPgSync* and TestEtcdStore run them: each open starts a group of servers
		return nil
	default:
		return []string{"always", "none"}
	}
}

// storesNothing reports whether an engine is the harness's null store
// (or drift, the null store made slower every second), which accepts
// every write and keeps nothing: the suite only checks that
// it opens, accepts the calls and closes.
func storesNothing(engineName string) bool { return engineName == "null" || engineName == "drift" }

// TestStoreSuiteOnEveryEngine runs one correctness suite, through the harness.Store
// interface only, against every registered engine.
func TestStoreSuiteOnEveryEngine(t *testing.T) {
	names := harness.Engines()
	for _, want := range []string{"bbolt", "pebble", "sqlite"} {
		if !slices.Contains(names, want) {
			t.Fatalf("harness.Engines() = %v, want it to contain %q", names, want)
		}
	}
	for _, name := range names {
		for _, policy := range policiesFor(name) {
			t.Run(name+"/"+policy, func(t *testing.T) {
				suite(t, name, policy)
			})
		}
	}
}

func suite(t *testing.T, name, policy string) {
	dir := openDir(t)
	s := openStore(t, name, dir, policy)
	if storesNothing(name) {
		for _, err := range []error{s.Put([]byte("k"), []byte("v")), s.Delete([]byte("k"))} {
			if err != nil {
				t.Fatalf("null store: got %v, want nil", err)
			}
		}
		if err := s.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		return
	}

	steps := []struct {
		op         string // put, del, get
		key, value string
		found      bool // for get
	}{
		{"get", "missing", "", false},
		{"put", "a", "1", false},
		{"get", "a", "1", true},
		{"put", "a", "22", false}, // overwrite, longer
		{"get", "a", "22", true},
		{"put", "a", "", false}, // overwrite with an empty value
		{"get", "a", "", true},
		{"put", "b", "2", false},
		{"del", "b", "", false},
		{"get", "b", "", false},
		{"del", "never-there", "", false}, // deleting a missing key is fine
		{"put", "b", "3", false},          // put after delete
		{"get", "b", "3", true},
	}
	for i, st := range steps {
		switch st.op {
		case "put":
			if err := s.Put([]byte(st.key), []byte(st.value)); err != nil {
				t.Fatalf("step %d: Put(%q): %v", i, st.key, err)
			}
		case "del":
			if err := s.Delete([]byte(st.key)); err != nil {
				t.Fatalf("step %d: Delete(%q): %v", i, st.key, err)
			}
		case "get":
			checkGet(t, s, fmt.Sprintf("step %d", i), st.key, st.value, st.found)
		}
	}

	// The caller may reuse its buffers as soon as Put returns.
	key, value := []byte("reused-key"), []byte("first")
	if err := s.Put(key, value); err != nil {
		t.Fatalf("Put: %v", err)
	}
	copy(key, "XXXXXXXXXX")
	copy(value, "XXXXX")
	checkGet(t, s, "after reusing buffers", "reused-key", "first", true)

	// Concurrent writers, as the harness's -threads does.
	const writers, each = 8, 20
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				if err := s.Put(fmt.Appendf(nil, "w%02d-%03d", w, i), fmt.Appendf(nil, "v%d", i)); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("concurrent Put: %v", err)
	}
	for w := range writers {
		for i := range each {
			checkGet(t, s, "after concurrent puts", fmt.Sprintf("w%02d-%03d", w, i), fmt.Sprintf("v%d", i), true)
		}
	}

	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}

	// Reopen: everything acknowledged before Close is still there.
	s = openStore(t, name, dir, policy)
	defer s.Close()
	checkGet(t, s, "after reopen", "a", "", true)
	checkGet(t, s, "after reopen", "b", "3", true)
	checkGet(t, s, "after reopen", "missing", "", false)
	checkGet(t, s, "after reopen", fmt.Sprintf("w%02d-%03d", writers-1, each-1), fmt.Sprintf("v%d", each-1), true)

	if sc, ok := s.(harness.Scanner); ok {
		checkScan(t, sc)
	}
}

func checkGet(t *testing.T, s harness.Store, when, key, want string, wantFound bool) {
	t.Helper()
	got, found, err := s.Get([]byte(key))
	if err != nil {
		t.Fatalf("%s: Get(%q): %v", when, key, err)
	}
	if found != wantFound || (found && string(got) != want) {
		t.Fatalf("%s: Get(%q) = %q, %v; want %q, %v", when, key, got, found, want, wantFound)
	}
}

// checkScan checks order, start, limit and early stop on the store the
// suite left behind (keys a, b, reused-key, w00-000 ... w07-019).
func checkScan(t *testing.T, sc harness.Scanner) {
	t.Helper()
	tests := []struct {
		start string
		limit int
		stop  int // fn returns false after this many keys; 0 = never
		want  []string
	}{
		{"", 3, 0, []string{"a", "b", "reused-key"}},
		{"b", 2, 0, []string{"b", "reused-key"}},
		{"c", 3, 0, []string{"reused-key", "w00-000", "w00-001"}},
		{"w07-018", 0, 0, []string{"w07-018", "w07-019"}}, // limit 0: to the end
		{"w01-005", 10, 2, []string{"w01-005", "w01-006"}},
		{"x", 5, 0, nil},
	}
	for _, tt := range tests {
		var got []string
		err := sc.Scan([]byte(tt.start), tt.limit, func(k, v []byte) bool {
			got = append(got, string(k))
			return tt.stop == 0 || len(got) < tt.stop
		})
		if err != nil {
			t.Fatalf("Scan(%q, %d): %v", tt.start, tt.limit, err)
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("Scan(%q, %d, stop after %d) = %q, want %q", tt.start, tt.limit, tt.stop, got, tt.want)
		}
	}

	// A full scan is strictly increasing in byte order.
	var prev []byte
	n := 0
	err := sc.Scan(nil, 0, func(k, v []byte) bool {
		if prev != nil && bytes.Compare(prev, k) >= 0 {
			t.Errorf("scan order: %q came after %q", k, prev)
		}
		prev = bytes.Clone(k) // k is valid only until fn returns
		n++
		return true
	})
	if err != nil {
		t.Fatalf("full Scan: %v", err)
	}
	if want := 3 + 8*20; n != want {
		t.Errorf("full Scan visited %d keys, want %d", n, want)
	}
}

func TestUnsupportedSync(t *testing.T) {
	tests := []struct {
		engine, policy string
		isUnsupported  bool     // wraps ErrUnsupportedSync (else: a parse error)
		mention        []string // substrings the message must contain
	}{
		{"bbolt", "periodic:10ms", true, []string{"bbolt", "periodic:10ms", "always, group, batch:N and none"}},
		{"bbolt", "periodic:0s", false, []string{"bbolt", "periodic:0s", "periodic:D needs a duration"}},
		{"bbolt", "sometimes", false, []string{"bbolt", "sometimes", "allowed: always, group, batch:N, periodic:D, none"}},
		{"pebble", "sometimes", false, []string{"pebble", "sometimes", "allowed: always, group, batch:N, periodic:D, none"}},
		{"pebble", "batch:0", false, []string{"pebble", "batch:0", "batch:N needs N between 1 and 1048576"}},
		{"pebble", "always:1", false, []string{"pebble", "always:1", "always takes no parameter"}},
		{"sqlite", "group", true, []string{"sqlite", "group", "always, batch:N, periodic:D and none"}},
		{"sqlite", "batch:0", false, []string{"sqlite", "batch:0", "batch:N needs N between 1 and 1048576"}},
	}
	for _, tt := range tests {
		t.Run(tt.engine+"/"+tt.policy, func(t *testing.T) {
			s, err := open(tt.engine)(t.TempDir(), tt.policy)
			if err == nil {
				s.Close()
				t.Fatalf("open with -sync %s: got nil error, want one", tt.policy)
			}
			if got := errors.Is(err, ErrUnsupportedSync); got != tt.isUnsupported {
				t.Errorf("errors.Is(%v, ErrUnsupportedSync) = %v, want %v", err, got, tt.isUnsupported)
			}
			for _, m := range tt.mention {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("error %q does not mention %q", err, m)
				}
			}
		})
	}
}

// open returns this package's OpenFunc for engine.
func open(engineName string) harness.OpenFunc {
	switch engineName {
	case "bbolt":
		return OpenBbolt
	case "sqlite":
		return OpenSQLite
	}
	return OpenPebble
}

// TestBboltBatchCommitsEveryN checks that under batch:N a write reaches a
// committed transaction exactly on the Nth write, and that Get sees it
// before that.
func TestBboltBatchCommitsEveryN(t *testing.T) {
	st, err := OpenBbolt(t.TempDir(), "batch:3")
	if err != nil {
		t.Fatal(err)
	}
	s := st.(*bboltStore)
	defer s.Close()
	committed := func(key string) bool {
		var ok bool
		// A fresh read-only transaction sees only committed data.
		s.db.View(func(tx *bolt.Tx) error {
			ok = tx.Bucket(bboltBucket).Get([]byte(key)) != nil
			return nil
		})
		return ok
	}
	checkBatch3Commits(t, s, committed)
}

// checkBatch3Commits puts k1..k4 into s, opened with -sync batch:3, and
// checks with committed (which must look past s, at what another reader
// of the files sees) that the writes commit together on the 3rd, and that
// s's own Get sees each one at once.
func checkBatch3Commits(t *testing.T, s harness.Store, committed func(key string) bool) {
	t.Helper()
	for i, k := range []string{"k1", "k2", "k3", "k4"} {
		if err := s.Put([]byte(k), []byte("v")); err != nil {
			t.Fatal(err)
		}
		checkGet(t, s, "batch", k, "v", true)
		wantCommitted := i >= 2 // k1..k3 commit together on the 3rd write
		if got := committed("k1"); got != wantCommitted {
			t.Errorf("after %d puts: k1 committed = %v, want %v", i+1, got, wantCommitted)
		}
	}
	if committed("k4") {
		t.Errorf("after 4 puts: k4 committed = true, want false (it waits for 2 more)")
	}
}

// openPebble opens a Pebble store under policy in a fresh directory,
// closed when the test ends, and returns it with its stats.
func openPebble(t *testing.T, policy string) (harness.Store, harness.StatsReporter) {
	t.Helper()
	st, err := OpenPebble(t.TempDir(), policy)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st, st.(harness.StatsReporter)
}

// TestPebbleSyncCounts checks the fsync count Pebble reports for a few
// writes under each policy: the WAL syncs the policy asks for, no more.
// With several writers, always must still sync once per write (the adapter
// serializes them); group may share syncs, so it gets an upper bound only.
func TestPebbleSyncCounts(t *testing.T) {
	const writes = 24
	tests := []struct {
		policy  string
		writers int
		want    int64
		atMost  bool // want is an upper bound
	}{
		{"always", 1, writes, false},
		{"always", 4, writes, false},
		{"group", 1, writes, false}, // one writer: nothing to share a sync with
		{"group", 4, writes, true},
		{"batch:5", 1, writes / 5, false},
		{"batch:7", 1, writes / 7, false},
		{"batch:7", 4, writes / 7, true}, // two sync writes at once may share an fdatasync
		{"none", 4, 0, false},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/%d-writers", tt.policy, tt.writers), func(t *testing.T) {
			st, r := openPebble(t, tt.policy)
			before := r.StoreStats()
			putConcurrently(t, st, writes, tt.writers)
			after := r.StoreStats()
			got := after.Fsyncs - before.Fsyncs
			if tt.atMost && (got < 1 || got > tt.want) {
				t.Errorf("fsyncs during %d writes = %d, want between 1 and %d", writes, got, tt.want)
			}
			if !tt.atMost && got != tt.want {
				t.Errorf("fsyncs during %d writes = %d, want %d", writes, got, tt.want)
			}
			if grew := after.FsyncTime > before.FsyncTime; grew != (got > 0) {
				t.Errorf("fsync time grew = %v, want %v (fsyncs %d -> %d)", grew, got > 0, before.Fsyncs, after.Fsyncs)
			}
		})
	}
}

// putConcurrently puts keys key0..key(writes-1), 100-byte values, from
// writers goroutines at once, and waits for them.
func putConcurrently(t *testing.T, st harness.Store, writes, writers int) {
	t.Helper()
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := w; i < writes; i += writers {
				if err := st.Put(fmt.Appendf(nil, "key%d", i), bytes.Repeat([]byte{'v'}, 100)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestPebbleStatsCountWrittenBytes checks that bytes reach the count
// once the WAL has them, which a Sync write guarantees.
func TestPebbleStatsCountWrittenBytes(t *testing.T) {
	st, r := openPebble(t, "always")
	before := r.StoreStats().BytesWritten
	const n, size = 10, 1000
	for i := range n {
		if err := st.Put(fmt.Appendf(nil, "key%d", i), bytes.Repeat([]byte{'v'}, size)); err != nil {
			t.Fatal(err)
		}
	}
	if got := r.StoreStats().BytesWritten - before; got < n*size {
		t.Errorf("bytes written for %d values of %d B = %d, want at least %d", n, size, got, n*size)
	}
}

// TestPebblePeriodicSyncs checks that periodic:D syncs the WAL on its own,
// with no write asking for it.
func TestPebblePeriodicSyncs(t *testing.T) {
	st, r := openPebble(t, "periodic:2ms")
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
