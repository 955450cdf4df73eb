package archive

import (
	"context"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"kvlab/internal/pgtest"
)

// Benchmarks of the archive. Run with
//
//	go test -run '^$' -bench . -benchtime 200x ./internal/archive/
//
// BenchmarkList reads one page (50 runs, newest first) from an archive of
// 100,000 runs, with each filter the /runs page offers, and reports the
// p99 of the calls beside the mean. The archive is filled once per
// backend and kept for every sub-benchmark (filling takes about a minute).
// BenchmarkAdd is the cost of recording one run, which the command line
// and the server pay after a run, never inside it.

const listRuns = 100_000

var (
	listOnce sync.Map // backend name -> *listArchive
)

type listArchive struct {
	once sync.Once
	a    Archive
	dir  string
	err  error
}

func filledArchive(b *testing.B, name string) Archive {
	v, _ := listOnce.LoadOrStore(name, &listArchive{})
	la := v.(*listArchive)
	la.once.Do(func() {
		ctx := context.Background()
		var target string
		switch name {
		case "sqlite":
			la.dir, la.err = os.MkdirTemp("", "kvlab-bench-")
			if la.err != nil {
				return
			}
			target = "sqlite"
		case "postgres":
			target = pgtest.Shared(b).NewDatabase(b)
		}
		start := time.Now()
		la.a, la.err = Open(ctx, target, la.dir, b.Logf)
		if la.err == nil {
			// Short timelines: List never reads them, and 100,000
			// minute-long ones would be a gigabyte of disk.
			la.err = Fill(ctx, la.a, listRuns, 3)
		}
		b.Logf("%s: filled %d runs in %v", name, listRuns, time.Since(start).Round(time.Second))
	})
	if la.err != nil {
		b.Fatal(la.err)
	}
	return la.a
}

// closeBenchArchives runs after the benchmarks (TestMain).
func closeBenchArchives() {
	listOnce.Range(func(_, v any) bool {
		la := v.(*listArchive)
		if la.a != nil {
			la.a.Close()
		}
		if la.dir != "" {
			os.RemoveAll(la.dir)
		}
		return true
	})
}

func BenchmarkList(b *testing.B) {
	for _, backend := range []string{"sqlite", "postgres"} {
		b.Run(backend, func(b *testing.B) {
			a := filledArchive(b, backend)
			for _, tc := range []struct {
				name string
				q    Query
			}{
				{"newest", Query{}},
				{"lesson+cell", Query{Lesson: "03-lesson", Cell: "c2"}},
				{"engine", Query{Engine: "pebble"}},
				{"sync+workload", Query{Sync: "batch:64", Workload: "overwrite"}},
				{"browser", Query{Browser: "b017"}},
				{"page-deep", Query{Before: listRuns / 2}},
				{"engine+page-deep", Query{Engine: "kv", Before: listRuns / 3}},
				{"no-match", Query{Lesson: "99-none"}},
			} {
				b.Run(tc.name, func(b *testing.B) {
					ctx := context.Background()
					var lat []time.Duration
					for b.Loop() {
						t0 := time.Now()
						if _, err := a.List(ctx, tc.q); err != nil {
							b.Fatal(err)
						}
						lat = append(lat, time.Since(t0))
					}
					slices.Sort(lat)
					p99 := lat[min(len(lat)-1, (len(lat)*99+99)/100-1)]
					b.ReportMetric(float64(p99.Nanoseconds()), "p99-ns")
				})
			}
		})
	}
}

func BenchmarkAdd(b *testing.B) {
	a, err := Open(context.Background(), "", b.TempDir(), b.Logf)
	if err != nil {
		b.Fatal(err)
	}
	defer a.Close()
	r := Synthetic(1, 10)
	for b.Loop() {
		r.ID = 0
		if _, err := a.Add(context.Background(), r); err != nil {
			b.Fatal(err)
		}
	}
}
