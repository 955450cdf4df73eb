package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"testing"
)

// BenchmarkPacerNull measures the open-loop pacer itself: with the null
// store, whose service time is a few hundred ns, whatever the corrected
// latency adds to the uncorrected one is the load generator's. Each
// iteration is `bench -engine null -rate R -duration 2s`; the metrics are
// medians over the iterations:
//
//   - corr-minus-unc-p50-ns: corrected p50 minus uncorrected p50 (target:
//     under 20 µs on a quiet machine);
//   - lag-p50-ns, lag-p99-ns, lag-max-ns: the pacer lag (target p99 under
//     100 µs on a quiet machine);
//   - delay-p99-ns: the generator's delay p99, lateness carried over
//     included;
//   - load: the 1-minute load average before the run. Above the core
//     count the machine was not quiet, and the tail figures say more
//     about its scheduler than about the pacer.
func BenchmarkPacerNull(b *testing.B) {
	for _, rate := range []int{100, 1000, 10000} {
		b.Run(fmt.Sprintf("rate=%d", rate), func(b *testing.B) {
			var diff, lag50, lag99, lagMax, delay99, load []float64
			for b.Loop() {
				r := execBench(b, fmt.Sprintf("bench -engine null -rate %d -duration 2s", rate))
				c, u := r.Latency["put"], r.LatencyUncorrected["put"]
				if c == nil || u == nil || r.PacerLag == nil {
					b.Fatalf("rate %d: no corrected, uncorrected or pacer-lag figures", rate)
				}
				diff = append(diff, float64(c.P50Ns-u.P50Ns))
				lag50 = append(lag50, float64(r.PacerLag.P50Ns))
				lag99 = append(lag99, float64(r.PacerLag.P99Ns))
				lagMax = append(lagMax, float64(r.PacerLag.MaxNs))
				delay99 = append(delay99, float64(r.PacerLag.DelayP99Ns))
				load = append(load, r.LoadAvg)
			}
			b.ReportMetric(medianOf(diff), "corr-minus-unc-p50-ns")
			b.ReportMetric(medianOf(lag50), "lag-p50-ns")
			b.ReportMetric(medianOf(lag99), "lag-p99-ns")
			b.ReportMetric(medianOf(lagMax), "lag-max-ns")
			b.ReportMetric(medianOf(delay99), "delay-p99-ns")
			b.ReportMetric(medianOf(load), "load")
		})
	}
}

// BenchmarkModelBatch puts the model beside the bench for batch:N, N = 1
// to 1024, both measured in the same iteration on the same directory:
// `model -sync batch:N` (T_fsync: the flush of N Puts' bytes into
// allocated space; T_write: a short kv run with no commit in it), then
// `bench -engine kv -sync batch:N`, in three interleaved rounds, since a
// shared disk's flush time drifts from one second to the next. The
// metrics are medians over the iterations:
//
//   - bench/model: the median measured ops/s of the three rounds over the
//     median prediction of the three model lines (target: within 20%, 0.8
//     to 1.2);
//   - bench/own-model: over the bench result's own model, fed by the
//     run's own figures (close to 1 by construction: it checks the
//     bookkeeping, not the model);
//   - t-write-ns, t-fsync-ns: the model line's inputs; run-fsync-ns: the
//     run's mean commit fdatasync; load: the load average before the run.
func BenchmarkModelBatch(b *testing.B) {
	for _, n := range []int{1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024} {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			ops := min(3000*n, 30000) // a few MiB at large N: several zero-fills, as the model's T_write run
			var vsModel, vsOwn, tw, tf, runTf, load []float64
			for b.Loop() {
				dir := b.TempDir()
				var measured, predicted []float64
				for range 3 {
					raw, err := Exec(context.Background(), fmt.Sprintf("model -sync batch:%d -dir %s", n, dir), Env{})
					if err != nil {
						b.Fatal(err)
					}
					var m ModelResult
					if err := json.Unmarshal(raw, &m); err != nil {
						b.Fatal(err)
					}
					r := execBench(b, fmt.Sprintf("bench -engine kv -sync batch:%d -ops %d -dir %s", n, ops, dir))
					if r.Model == nil {
						b.Fatal("the bench result has no model")
					}
					measured, predicted = append(measured, r.OpsPerSec), append(predicted, m.PredictedOpsPerSec)
					vsOwn = append(vsOwn, r.OpsPerSec/r.Model.PredictedOpsPerSec)
					tw, tf = append(tw, m.TWriteNs), append(tf, m.TFsyncNs)
					runTf, load = append(runTf, r.FsyncMeanNs), append(load, r.LoadAvg)
				}
				vsModel = append(vsModel, medianOf(measured)/medianOf(predicted))
			}
			b.ReportMetric(medianOf(vsModel), "bench/model")
			b.ReportMetric(medianOf(vsOwn), "bench/own-model")
			b.ReportMetric(medianOf(tw), "t-write-ns")
			b.ReportMetric(medianOf(tf), "t-fsync-ns")
			b.ReportMetric(medianOf(runTf), "run-fsync-ns")
			b.ReportMetric(medianOf(load), "load")
		})
	}
}

// execBench runs one bench line and decodes its result.
func execBench(b *testing.B, line string) *BenchResult {
	b.Helper()
	raw, err := Exec(context.Background(), line, Env{Dir: os.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	var r BenchResult
	if err := json.Unmarshal(raw, &r); err != nil {
		b.Fatal(err)
	}
	return &r
}

// medianOf is the middle value of v (the mean of the two middle ones).
func medianOf(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if n := len(s); n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return s[len(s)/2]
}
