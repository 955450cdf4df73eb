package archive

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"kvlab/internal/pgtest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	closeBenchArchives()
	pgtest.StopShared()
	os.Exit(code)
}

// backend opens archives of one kind for the shared suite.
type backend struct {
	name string
	// fresh returns a target and data directory for an empty archive;
	// opening the same pair again reopens it.
	fresh func(t *testing.T) (target, dataDir string)
}

// backends lists SQLite and PostgreSQL. The PostgreSQL one starts a
// real throwaway server (pgtest): it skips without the binaries, and
// fails under KVLAB_REQUIRE_TOOLS=1.
var backends = []backend{
	{"sqlite", func(t *testing.T) (string, string) { return "sqlite", t.TempDir() }},
	{"postgres", func(t *testing.T) (string, string) { return pgtest.Shared(t).NewDatabase(t), "" }},
}

// forEach runs fn once per backend, as a subtest named after it.
func forEach(t *testing.T, fn func(t *testing.T, b backend)) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) { fn(t, b) })
	}
}

// openFresh opens an empty archive of b's kind, closed when the test ends.
func openFresh(t *testing.T, b backend) Archive {
	t.Helper()
	target, dir := b.fresh(t)
	return open(t, target, dir)
}

func open(t *testing.T, target, dir string) Archive {
	t.Helper()
	a, err := Open(context.Background(), target, dir, t.Logf)
	if err != nil {
		t.Fatalf("Open(%q, %q): %v", target, dir, err)
	}
	t.Cleanup(func() { a.Close() })
	return a
}

func fullRun() *Run {
	t0 := time.Date(2026, 3, 4, 5, 6, 7, 891011121, time.UTC)
	return &Run{
		Kind: "bench", Spec: "bench -sync batch:64", SpecFull: "bench -engine kv -sync batch:64 -workload fillrandom -ops 1000",
		Engine: "kv", Sync: "batch:64", Workload: "fillrandom",
		Result:   json.RawMessage(`{"kind":"bench","ops_per_sec":12345.5,"z":1,"a":[1,2]}`),
		Probe:    json.RawMessage(`{"fs":"ext4"}`),
		Timeline: json.RawMessage(`[{"elapsed_seconds":1,"ops":100}]`),
		Source:   "cell", Lesson: "03-batching", Cell: "c2", Quiz: "q1", Browser: "b-42",
		Version: "v1.2.3+abc", Host: "lab/123456789abc", Started: t0, Ended: t0.Add(1500 * time.Millisecond),
		Line: 2, Own: true,
	}
}

func TestAddGet(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		a := openFresh(t, b)
		ctx := context.Background()
		want := fullRun()
		id, err := a.Add(ctx, want)
		if err != nil {
			t.Fatal(err)
		}
		if id <= 0 || want.ID != id {
			t.Fatalf("Add: id %d, r.ID %d: want a positive id set in both", id, want.ID)
		}
		got, err := a.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if !sameRun(got, want) {
			t.Errorf("Get(%d):\ngot  %+v\nwant %+v", id, got, want)
		}
		// JSON is kept byte for byte, key order included (not re-encoded).
		if !bytes.Equal(got.Result, want.Result) {
			t.Errorf("result: got %s, want %s", got.Result, want.Result)
		}
		id2, err := a.Add(ctx, &Run{Kind: "probe", Spec: "probe"})
		if err != nil {
			t.Fatal(err)
		}
		if id2 <= id {
			t.Errorf("second id %d: want above the first, %d", id2, id)
		}
		if _, err := a.Get(ctx, id2+100); !errors.Is(err, ErrNotFound) {
			t.Errorf("Get of a missing id: got %v, want ErrNotFound", err)
		}
	})
}

func sameRun(a, b *Run) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb) && a.Started.Equal(b.Started) && a.Ended.Equal(b.Ended)
}

func TestAddRefusesBadRuns(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		a := openFresh(t, b)
		for _, tc := range []struct {
			r    *Run
			want string
		}{
			{&Run{Spec: "bench"}, "no kind"},
			{&Run{Kind: "bench"}, "no spec"},
			{&Run{Kind: "bench", Spec: "bench", Result: json.RawMessage(`{"a":`)}, "result is not valid JSON"},
			{&Run{Kind: "bench", Spec: "bench", Timeline: json.RawMessage(`[`)}, "timeline is not valid JSON"},
		} {
			if _, err := a.Add(context.Background(), tc.r); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Add(%+v): got %v, want an error containing %q", tc.r, err, tc.want)
			}
		}
	})
}

func TestList(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		a := openFresh(t, b)
		ctx := context.Background()
		if err := Fill(ctx, a, 120, 3); err != nil {
			t.Fatal(err)
		}
		all, err := a.List(ctx, Query{Limit: MaxLimit})
		if err != nil {
			t.Fatal(err)
		}
		if len(all) != 120 {
			t.Fatalf("List: %d runs, want 120", len(all))
		}
		for i := 1; i < len(all); i++ {
			if all[i].ID >= all[i-1].ID {
				t.Fatalf("List is not newest first: id %d after %d", all[i].ID, all[i-1].ID)
			}
		}
		if len(all[0].Timeline) != 0 || len(all[0].Probe) != 0 || len(all[0].Result) == 0 {
			t.Errorf("a List summary: timeline %d bytes, probe %d, result %d: want only the result", len(all[0].Timeline), len(all[0].Probe), len(all[0].Result))
		}
		if got, _ := a.List(ctx, Query{}); len(got) != DefaultLimit {
			t.Errorf("List with no limit: %d runs, want DefaultLimit %d", len(got), DefaultLimit)
		}

		// Each filter returns exactly the runs that match, newest first.
		byHand := func(keep func(Run) bool) []int64 {
			var ids []int64
			for _, r := range all {
				if keep(r) {
					ids = append(ids, r.ID)
				}
			}
			return ids
		}
		for _, tc := range []struct {
			q    Query
			keep func(Run) bool
		}{
			{Query{Lesson: "02-lesson"}, func(r Run) bool { return r.Lesson == "02-lesson" }},
			{Query{Lesson: "02-lesson", Cell: "c3"}, func(r Run) bool { return r.Lesson == "02-lesson" && r.Cell == "c3" }},
			{Query{Engine: "pebble"}, func(r Run) bool { return r.Engine == "pebble" }},
			{Query{Sync: "batch:64", Workload: "readrandom"}, func(r Run) bool { return r.Sync == "batch:64" && r.Workload == "readrandom" }},
			{Query{Browser: "b007"}, func(r Run) bool { return r.Browser == "b007" }},
			{Query{Kind: "bench", Source: "cell", Engine: "kv"}, func(r Run) bool { return r.Engine == "kv" }},
			{Query{Source: "cli"}, func(r Run) bool { return false }},
		} {
			tc.q.Limit = MaxLimit
			got, err := a.List(ctx, tc.q)
			if err != nil {
				t.Fatal(err)
			}
			var ids []int64
			for _, r := range got {
				ids = append(ids, r.ID)
			}
			if want := byHand(tc.keep); fmt.Sprint(ids) != fmt.Sprint(want) {
				t.Errorf("List(%+v): got ids %v, want %v", tc.q, ids, want)
			}
		}

		// Paging with Before visits every run once.
		var seen []int64
		q := Query{Limit: 7}
		for {
			page, err := a.List(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			if len(page) == 0 {
				break
			}
			for _, r := range page {
				seen = append(seen, r.ID)
			}
			q.Before = page[len(page)-1].ID
		}
		if fmt.Sprint(seen) != fmt.Sprint(byHand(func(Run) bool { return true })) {
			t.Errorf("paging by Before: got %v", seen)
		}
	})
}

func TestPredictions(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		a := openFresh(t, b)
		ctx := context.Background()
		at := time.Date(2026, 5, 6, 7, 8, 9, 10, time.UTC)
		for _, p := range []*Prediction{
			{Browser: "b1", Lesson: "03", Quiz: "q1", Value: "10000", At: at},
			{Browser: "b2", Lesson: "03", Quiz: "q1", Value: "5"},
			{Browser: "b1", Lesson: "03", Quiz: "q2", Value: "x"},
			{Browser: "b1", Lesson: "03", Quiz: "q1", Value: "20000"},
		} {
			if _, err := a.AddPrediction(ctx, p); err != nil {
				t.Fatal(err)
			}
		}
		got, err := a.Predictions(ctx, "b1", "q1")
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 || got[0].Value != "10000" || got[1].Value != "20000" {
			t.Fatalf("Predictions(b1, q1): got %+v, want 10000 then 20000", got)
		}
		if !got[0].At.Equal(at) || got[1].At.IsZero() {
			t.Errorf("times: got %v and %v, want %v and a time set by AddPrediction", got[0].At, got[1].At, at)
		}
		if _, err := a.AddPrediction(ctx, &Prediction{Quiz: "q1"}); err == nil {
			t.Error("a prediction with no browser was stored")
		}
	})
}

// A prediction keeps the first verdict set: a second one is not stored.
func TestSetVerdictKeepsTheFirst(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		a := openFresh(t, b)
		ctx := context.Background()
		p := &Prediction{Browser: "b1", Lesson: "03", Quiz: "q1", Value: "8"}
		if _, err := a.AddPrediction(ctx, p); err != nil {
			t.Fatal(err)
		}
		first, second := json.RawMessage(`{"correct":true,"want":"8.2"}`), json.RawMessage(`{"correct":false,"want":"0.02"}`)
		for _, v := range []json.RawMessage{first, second} {
			kept, err := a.SetVerdict(ctx, p.ID, v)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(kept, first) {
				t.Errorf("SetVerdict(%s): kept %s, want the first, %s", v, kept, first)
			}
		}
		got, err := a.Predictions(ctx, "b1", "q1")
		if err != nil || len(got) != 1 || !bytes.Equal(got[0].Verdict, first) {
			t.Errorf("Predictions: got %+v, %v; want one with verdict %s", got, err, first)
		}
		if _, err := a.SetVerdict(ctx, p.ID+100, first); !errors.Is(err, ErrNotFound) {
			t.Errorf("SetVerdict of a missing id: got %v, want ErrNotFound", err)
		}
		if _, err := a.SetVerdict(ctx, p.ID, json.RawMessage(`{`)); err == nil {
			t.Error("SetVerdict stored invalid JSON")
		}
	})
}

// StartedAfter and Oldest find the first run after a moment.
func TestListStartedAfterOldest(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		a := openFresh(t, b)
		ctx := context.Background()
		t0 := time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)
		for i := range 4 {
			r := &Run{Kind: "bench", Spec: "bench", Source: "cell", Cell: "c", Started: t0.Add(time.Duration(i) * time.Second), Line: i}
			if _, err := a.Add(ctx, r); err != nil {
				t.Fatal(err)
			}
		}
		got, err := a.List(ctx, Query{Cell: "c", StartedAfter: t0.Add(time.Second), Oldest: true})
		if err != nil {
			t.Fatal(err)
		}
		var lines []int
		for _, r := range got {
			lines = append(lines, r.Line)
		}
		if fmt.Sprint(lines) != "[2 3]" {
			t.Errorf("runs started after t0+1s, oldest first: got lines %v, want [2 3]", lines)
		}
	})
}

func TestClosed(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		target, dir := b.fresh(t)
		a := open(t, target, dir)
		if err := a.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := a.Add(context.Background(), fullRun()); !errors.Is(err, ErrClosed) {
			t.Errorf("Add after Close: got %v, want ErrClosed", err)
		}
		if _, err := a.List(context.Background(), Query{}); !errors.Is(err, ErrClosed) {
			t.Errorf("List after Close: got %v, want ErrClosed", err)
		}
	})
}

// TestReopen: what was added is there after a reopen, and ids go on
// growing.
func TestReopen(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		target, dir := b.fresh(t)
		ctx := context.Background()
		a := open(t, target, dir)
		id1, err := a.Add(ctx, fullRun())
		if err != nil {
			t.Fatal(err)
		}
		a.Close()
		a = open(t, target, dir)
		if _, err := a.Get(ctx, id1); err != nil {
			t.Fatalf("after reopening: %v", err)
		}
		id2, err := a.Add(ctx, fullRun())
		if err != nil || id2 <= id1 {
			t.Errorf("after reopening: Add gave id %d (%v), want above %d", id2, err, id1)
		}
	})
}

// rawExec runs a statement on the archive's database behind its back.
func rawExec(t *testing.T, a Archive, stmt string) {
	t.Helper()
	if _, err := a.(*sqlStore).db.Exec(stmt); err != nil {
		t.Fatal(err)
	}
}

func TestNewerSchemaRefused(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		target, dir := b.fresh(t)
		a := open(t, target, dir)
		a.Add(context.Background(), fullRun())
		rawExec(t, a, fmt.Sprintf("UPDATE schema_version SET version = %d", schemaVersion+1))
		a.Close()
		var logs []string
		_, err := Open(context.Background(), target, dir, func(f string, args ...any) { logs = append(logs, fmt.Sprintf(f, args...)) })
		if !errors.Is(err, ErrNewerSchema) {
			t.Fatalf("Open of a newer database: got %v, want ErrNewerSchema", err)
		}
		if msg := err.Error(); !strings.Contains(msg, "newer labserver") || !strings.Contains(msg, fmt.Sprint(schemaVersion+1)) {
			t.Errorf("message %q: want it to say a newer labserver wrote it, and its version", msg)
		}
		if len(logs) > 0 {
			t.Errorf("logged %q: a newer database is refused, not moved aside", logs)
		}
		if b.name == "sqlite" {
			if m, _ := globAside(dir); len(m) > 0 {
				t.Errorf("a newer database was moved aside: %v", m)
			}
		}
	})
}

// TestMigrates: a database at the previous schema version is brought up
// to date on open, with its runs kept and the step logged.
func TestMigrates(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		target, dir := b.fresh(t)
		ctx := context.Background()
		a := open(t, target, dir)
		id, _ := a.Add(ctx, fullRun())
		a.Close()

		// A labserver one migration newer.
		saved := migrations
		migrations = append(append([]string{}, saved...), `ALTER TABLE runs ADD COLUMN note TEXT NOT NULL DEFAULT 'migrated'`)
		schemaVersion = len(migrations)
		defer func() { migrations = saved; schemaVersion = len(saved) }()

		var logs []string
		a, err := Open(ctx, target, dir, func(f string, args ...any) { logs = append(logs, fmt.Sprintf(f, args...)) })
		if err != nil {
			t.Fatal(err)
		}
		defer a.Close()
		want := fmt.Sprintf("from schema version %d to %d", len(saved), len(saved)+1)
		if len(logs) != 1 || !strings.Contains(logs[0], want) {
			t.Errorf("logs %q: want one saying %q", logs, want)
		}
		var v int
		var note string
		s := a.(*sqlStore)
		s.db.QueryRow(`SELECT version FROM schema_version`).Scan(&v)
		s.db.QueryRow(s.d.rebind(`SELECT note FROM runs WHERE id = ?`), id).Scan(&note)
		if v != len(saved)+1 || note != "migrated" {
			t.Errorf("after migrating: version %d, note %q; want %d and \"migrated\"", v, note, len(saved)+1)
		}
		if _, err := a.Get(ctx, id); err != nil {
			t.Errorf("the run added before migrating: %v", err)
		}
	})
}

// TestConcurrentWriters: two archives on one database (two labservers
// sharing it) add at the same time; every Add succeeds and every id is
// distinct.
func TestConcurrentWriters(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		target, dir := b.fresh(t)
		ctx := context.Background()
		as := []Archive{open(t, target, dir), open(t, target, dir)}
		var mu sync.Mutex
		ids := map[int64]bool{}
		var wg sync.WaitGroup
		errs := make(chan error, 100)
		for w := range 4 {
			wg.Go(func() {
				for range 10 {
					id, err := as[w%2].Add(ctx, fullRun())
					if err != nil {
						errs <- err
						return
					}
					mu.Lock()
					ids[id] = true
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		if len(ids) != 40 {
			t.Errorf("%d distinct ids, want 40", len(ids))
		}
	})
}

func TestOpenTargets(t *testing.T) {
	for _, target := range []string{"mysql://x", "kvlab.db", "sqlite3"} {
		if _, err := Open(context.Background(), target, t.TempDir(), nil); !errors.Is(err, ErrBadTarget) || !strings.Contains(err.Error(), "postgres://") {
			t.Errorf("Open(%q): got %v, want ErrBadTarget naming what is allowed", target, err)
		}
	}
	if _, err := Open(context.Background(), "", "", nil); err == nil {
		t.Error("Open of sqlite with no data directory succeeded")
	}
}

func TestRedact(t *testing.T) {
	got := redact("postgres://kv:s3cret@db.example:5432/lab?sslmode=disable")
	if strings.Contains(got, "s3cret") || !strings.Contains(got, "db.example:5432/lab") {
		t.Errorf("redact: got %q, want the password hidden and the rest kept", got)
	}
}
