package runq

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"testing"

	"kvlab/harness"
	"kvlab/internal/archive"
)

// discardArchive records nothing: the baseline for BenchmarkRecordedRun.
type discardArchive struct{ archive.Archive }

func (discardArchive) Add(ctx context.Context, r *archive.Run) (int64, error) { return 0, nil }

// BenchmarkRecordedRun runs one null-engine line through the runner,
// recorded in SQLite or not recorded at all, and reports what the line's
// own timed region measured: ns per op from its wall_seconds and ops.
// Recording happens after the harness returns, so the two must agree
// within noise; the wall time per line (ns/op) shows what recording costs
// outside the timed region.
func BenchmarkRecordedRun(b *testing.B) {
	for _, mode := range []string{"sqlite", "none"} {
		b.Run(mode, func(b *testing.B) {
			dir := b.TempDir()
			a, err := archive.Open(context.Background(), "", dir, b.Logf)
			if err != nil {
				b.Fatal(err)
			}
			defer a.Close()
			var arch archive.Archive = a
			if mode == "none" {
				arch = discardArchive{a}
			}
			lim, budget := harness.DefaultLimits(), DefaultBudget()
			r := New(Config{RunsDir: filepath.Join(dir, "runs"), Name: "bench", Limits: lim, Budget: budget, MaxWaiting: 1,
				Archive: arch, Version: "bench", HostID: "bench"})
			defer r.Close()
			lines := []string{"bench -engine null -ops 20000"}
			specs, _, err := CheckLines(lines, 0, lim, budget)
			if err != nil {
				b.Fatal(err)
			}
			var inRegion []float64
			for b.Loop() {
				j := NewJob(context.Background())
				j.ID, j.Lines, j.Specs, j.Out, j.From = "b", lines, specs, Discard{}, Origin{Source: "cell"}
				if r.runJob(j) || j.err != nil || len(j.results) != 1 {
					b.Fatalf("the run failed: %v", j.err)
				}
				var res struct {
					Ops         float64 `json:"ops"`
					WallSeconds float64 `json:"wall_seconds"`
				}
				json.Unmarshal(j.results[0], &res)
				inRegion = append(inRegion, res.WallSeconds*1e9/res.Ops)
			}
			slices.Sort(inRegion)
			b.ReportMetric(inRegion[len(inRegion)/2], "timed-ns/op-median")
		})
	}
}
