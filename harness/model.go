package harness

import (
	"context"
	"strings"
	"time"

	"kvlab/engine"
	"kvlab/harness/calc"
)

// The batch/periodic model (the math is in kvlab/harness/calc) wired to
// measurements: `labserver model -sync batch:64` feeds it this disk's
// figures for the kv engine; a bench result with -sync batch:N or
// periodic:D carries the prediction beside the measurement, fed by the
// run's own mean fdatasync time when the store reports one (t_fsync_source
// "run") and the probe's otherwise.
//
// T_fsync from the probe is the case the engine under test pays
// (ProbeFsyncFor; probe.go describes the cases): kv overwrites allocated
// space, pebble appends to its WAL, bbolt pays both per commit. A flush
// also costs more the more bytes it carries: batch:1024 flushes 1024
// records (160 KiB of 128-byte values) at once, and measured here that
// flush took 1.4 ms where one record's took 0.63 ms, which at N = 1024 is
// 1.4 µs per Put against a T_write of about 2 µs. So a model line of
// batch:N times the flush of N Puts' bytes (flushCost, t_fsync_source
// "probe_batch_flush"), the bytes per Put taken from the T_write run.
//
// T_write is the mean cost of a Put outside the flush: throughput is a
// mean figure, N Puts take N*T_write + T_fsync, so the statistic that
// predicts it is the mean, not the median. A store with a write buffer
// (the kv engine under batch:N, periodic:D and none) does not call
// write(2) per Put at all, so the probe's raw write(2) is not its T_write,
// and neither is its median Put: most Puts only copy into the buffer
// (about 1 µs here), while one in a few hundred writes the buffer out and
// one in several thousand zero-fills the next MiB of the segment, which
// the mean includes (2.0-4.5 µs). Taking the median made the bench's own
// model line drift to 0.60x at batch:1024.
//
// A bench result's own model is fed by the run itself, so for batch:N its
// throughput is the run's own by construction (N*T_write + T_fsync is the
// run's wall time for N Puts): it checks the bookkeeping (the result says
// so, "bookkeeping": true, and the table prints it as bookkeeping, not as
// a prediction), and its use is the p99 fork and the loss window. The
// model line is the prediction, made before the run from inputs measured
// without the policy: T_fsync from the probe's flush, T_write from a
// write-only kv run. Lesson 5 runs it in the same cell as the bench it
// predicts, in mirrored rounds (BenchmarkModelBatch compares the two with
// the bench).
//
// So a one-writer bench run's T_write is its own: the wall time per Put
// minus the commit flushes' time divided among the Puts (t_write_source
// "run_wall"); a workload that also reads uses the mean Put latency
// instead of the wall ("run_mean"); a -rate run uses the mean service
// time, the uncorrected latency, since its wall clock includes the time
// the generator waited and its corrected latency the time units queued
// ("run_service"). Only batch:N flushes inside a Put; periodic's timer
// flushes beside them, and nothing is subtracted. Where the run cannot say
// (several writers, or a store that does not count its flushes under
// batch:N) it is the probe's write(2) ("probe"). A model line, which has
// no run, measures the same figure in parts (model_inputs.go, "kv_run"):
// T_put from short kv runs under batch with an N larger than the run and
// no zero-fill in their timed region, plus a Put's share of the zero-fill
// the engine makes every MiB under batch:N, timed by its own probe. One
// long run with both in it, as before, charged T_write with zero-fills
// that flushed records no commit had flushed, and missed batch:1024 by 2x.

// ModelResult is the JSON object of kind "model".
type ModelResult struct {
	Kind string `json:"kind"` // "model"
	calc.Prediction
	Source string `json:"source"` // where T_write and T_fsync came from: "probe" or "given"

	// Where each input came from: TWriteSource "given" or "kv_run" (the
	// wall time per Put of a short kv run with no commit in it, on the
	// directory: modelTWrite); TFsyncSource "given",
	// "probe_batch_flush" (batch:N: the mean commit, a write of N Puts'
	// bytes into allocated space and the fdatasync after it, flushCost) or "probe_overwrite"
	// (periodic:D: the probe's flush of one small write into allocated
	// space, kv's case).
	TWriteSource string `json:"t_write_source"`
	TFsyncSource string `json:"t_fsync_source"`

	// What T_write is made of, when it was measured (model_inputs.go):
	// TPutNs, the mean Put outside commits and zero-fills (kv_run); under
	// batch:N, TFillNs, one zero-fill ahead (FillBytes of zeros appended
	// and flushed), and TFillShareNs, a Put's share of it (TFillNs x
	// BytesPerPut / FillBytes). T_write = TPutNs + TFillShareNs.
	// BytesPerPut is what a Put adds to the segment, its share of a
	// commit's sync mark included; N x BytesPerPut is what flushCost
	// flushes.
	TPutNs       float64 `json:"t_put_ns,omitempty"`
	TFillNs      float64 `json:"t_fill_ns,omitempty"`
	TFillShareNs float64 `json:"t_fill_share_ns,omitempty"`
	FillBytes    int64   `json:"fill_bytes,omitempty"`
	BytesPerPut  float64 `json:"bytes_per_put,omitempty"`

	// Replication holds the replication model's predictions, one per
	// engine, for a line with -replicas, -net-delay or -engine
	// (model_replication.go); the batch model's fields are then zero.
	Replication []ReplicationPrediction `json:"replication,omitempty"`
}

// Predict runs the model for a -sync policy text (batch:N or periodic:D).
// ok is false for policies the model does not cover; text that is not a
// policy is an error.
func Predict(sync string, tWriteNs, tFsyncNs float64) (p calc.Prediction, ok bool, err error) {
	policy, err := parseSync(sync)
	if err != nil {
		return p, false, err
	}
	switch policy.Mode {
	case engine.SyncBatch:
		p, err = calc.Batch(policy.N, tWriteNs, tFsyncNs)
	case engine.SyncPeriodic:
		p, err = calc.Periodic(policy.Interval, tWriteNs, tFsyncNs)
		p.Sync = sync
	default:
		return p, false, nil
	}
	return p, err == nil, err
}

// modelLine answers a model line of the kv engine, measuring on dir
// whichever cost was not given on the line (model_inputs.go): T_write
// with modelPutCost and, under batch:N, the Put's share of a zero-fill
// (fillCost); T_fsync with flushCost (batch:N) or the probe's overwrite
// case (periodic:D).
func modelLine(ctx context.Context, s *Spec, dir string) (*ModelResult, error) {
	if isReplicationModel(s) {
		return replicationModelLine(ctx, s, dir)
	}
	policy, err := parseSync(s.Sync)
	if err != nil {
		return nil, err
	}
	tw, tf := float64(s.TWrite), float64(s.TFsync)
	m := &ModelResult{Kind: "model", Source: "given", TWriteSource: "given", TFsyncSource: "given"}
	bytesPerPut := float64(kvRecordBytes) // unless the T_write runs say
	if s.TWrite == 0 {
		if m.TPutNs, bytesPerPut, err = modelPutCost(ctx, dir); err != nil {
			return nil, err
		}
		tw = m.TPutNs
		m.Source, m.TWriteSource = "probe", "kv_run"
	}
	// The CPU time of a Put (T_put measured, or the T_write given), which
	// the flush probes spend computing between flushes as the writer does.
	putNs := tw
	batch := policy.Mode == engine.SyncBatch
	if batch {
		bytesPerPut += float64(syncMarkBytes) / float64(policy.N)
	}
	m.BytesPerPut = bytesPerPut
	if s.TWrite == 0 && batch {
		// Under periodic:D the engine does not zero-fill ahead (engine.Open).
		c, err := fillCost(ctx, dir, engine.DefaultPreallocate, busyFor(engine.DefaultPreallocate/bytesPerPut, putNs), modelFills, modelFillTime)
		if err != nil {
			return nil, err
		}
		m.TFillNs, m.FillBytes = c.MeanNs, engine.DefaultPreallocate
		m.TFillShareNs = c.MeanNs * bytesPerPut / engine.DefaultPreallocate
		tw += m.TFillShareNs
	}
	if !s.has("t-fsync") {
		m.Source = "probe"
		if batch {
			c, err := flushCost(ctx, dir, int64(float64(policy.N)*bytesPerPut), busyFor(float64(policy.N), putNs), modelFlushes, modelFlushTime)
			if err != nil {
				return nil, err
			}
			tf, m.TFsyncSource = c.MeanNs, "probe_batch_flush"
		} else {
			b, err := quickProbe(ctx, dir)
			if err != nil {
				return nil, err
			}
			tf, _ = ProbeFsyncFor("kv", b)
			m.TFsyncSource = "probe_overwrite"
		}
	}
	p, _, err := Predict(s.Sync, max(tw, 1), tf)
	if err != nil {
		return nil, err
	}
	m.Prediction = p
	return m, nil
}

// ProbeFsyncFor is the probe's T_fsync for an engine, in nanoseconds, and
// the case it is (probe.go): "overwrite" for kv (it writes into space it
// zero-filled ahead) and for anything else that syncs in place, "append"
// for pebble (its WAL grows with every write until a file is recycled),
// "append+overwrite" for bbolt (each commit flushes pages written into
// space grown as a hole, then the meta page rewritten in place). A brief
// from before the overwrite case existed has only the append figure.
func ProbeFsyncFor(engine string, b *ProbeBrief) (ns float64, kind string) {
	switch {
	case b.FdatasyncOverwriteNs == 0:
		return b.FdatasyncNs, "append"
	case engine == "pebble":
		return b.FdatasyncNs, "append"
	case engine == "bbolt":
		return b.FdatasyncNs + b.FdatasyncOverwriteNs, "append+overwrite"
	}
	return b.FdatasyncOverwriteNs, "overwrite"
}

// benchModel is the prediction for a finished bench run, or nil when its
// policy has no model. Throughput is a mean figure, so the model is fed the
// run's mean fdatasync time and mean Put cost (runTWrite); the p99 fork is
// a tail question, so the measured path compares p99 with medians
// (calc.MeasuredP99Path); the loss window is counted at the Put rate the
// run reached. On a -rate run every Put figure is the service time (the
// uncorrected latency): the corrected latency includes the time a unit
// waited to start, which is the queue's, not the store's cost.
func benchModel(sync string, r *BenchResult, b *ProbeBrief) *BenchModel {
	put := r.Latency["put"]
	if u := r.LatencyUncorrected["put"]; r.Rate > 0 && u != nil {
		put = u
	}
	if b == nil || put == nil {
		return nil
	}
	tf, src := b.FdatasyncNs, "probe"
	var fcase string
	if r.Fsyncs > 0 {
		tf, src = r.FsyncMeanNs, "run"
	} else {
		tf, fcase = ProbeFsyncFor(r.Engine, b)
	}
	tw, wsrc, ok := runTWrite(sync, r, put)
	if !ok {
		tw, wsrc = b.WriteNs, "probe"
	}
	p, ok, err := Predict(sync, max(tw, 1), tf)
	if !ok || err != nil {
		return nil
	}
	if r.WallSeconds > 0 {
		p.AtRate(float64(put.Count) / r.WallSeconds)
	}
	m := &BenchModel{
		PredictedOpsPerSec: p.PredictedOpsPerSec, TWriteNs: p.TWriteNs, TFsyncNs: p.TFsyncNs,
		TWriteSource: wsrc, TFsyncSource: src, TFsyncCase: fcase, P99Path: p.P99Path,
		LossWindowWrites: p.LossWindowWrites, LossWindowMs: p.LossWindowMs,
		RateSource: p.RateSource, WriteRate: p.WriteRate,
		Bookkeeping: src == "run" && strings.HasPrefix(wsrc, "run"),
	}
	// Which path the measured p99 is on: compared with the run's median
	// fdatasync when the harness timed them, else with the figure the
	// model was fed (the probe's, or this run's mean).
	fsyncP50, fsrc := tf, src
	if r.FsyncSamples > 0 {
		fsyncP50, fsrc = float64(r.FsyncP50Ns), "run_p50"
	} else if r.FsyncsCounted && r.Fsyncs == 0 {
		fsyncP50, fsrc = 0, "none" // no fdatasync ran: nothing to wait for
	}
	m.FsyncP50Source = fsrc
	m.P99ThresholdNs = calc.P99Threshold(float64(put.P50Ns), fsyncP50)
	m.MeasuredP99Path = calc.MeasuredP99Path(float64(put.P99Ns), float64(put.P50Ns), fsyncP50)
	return m
}

// runTWrite is a one-writer run's own T_write (the file comment): the mean
// cost of a Put outside the flush, from put, the run's Put latencies
// (service times on a -rate run), and its source. ok is false when the run
// cannot say: several writers, or batch:N on a store that does not count
// its flushes, or a flush share that leaves nothing.
func runTWrite(sync string, r *BenchResult, put *LatencySummary) (ns float64, source string, ok bool) {
	if r.Threads != 1 || put.Count == 0 {
		return 0, "", false
	}
	var flushNs float64 // the commit flushes done inside Puts: batch:N's
	if p, err := parseSync(sync); err == nil && p.Mode == engine.SyncBatch {
		if !r.FsyncsCounted {
			return 0, "", false
		}
		// Only the policy's own flushes are T_fsync/N; a segment seal's
		// flush is a cost of the Puts like any other, so it stays in
		// T_write. fsyncs counts seals too; the split, where the store
		// gives one, names the commits.
		commits := r.Fsyncs
		if n, ok := r.FsyncsByCause["commit"]; ok {
			commits = n
		}
		flushNs = float64(commits) * r.FsyncMeanNs
	}
	perPut, source := put.MeanNs, "run_mean"
	switch {
	case r.Rate > 0:
		source = "run_service"
	case r.Ops == put.Count && r.WallSeconds > 0:
		perPut, source = r.WallSeconds*1e9/float64(put.Count), "run_wall"
	}
	ns = perPut - flushNs/float64(put.Count)
	return ns, source, ns > 0
}

// modelFlushes and modelFlushTime bound a model line's timing of the
// batch:N flush (flushCost): that many commits, or that long. A second:
// the mean is what predicts throughput, and on a shared disk it is set by
// stalls that come a few times a second (another writer's flush, the
// journal's commit), which a window of 200 ms, the bound before, caught
// in some model lines and missed in others. Measured against the bench
// line next to it (load 21–33, three pairs each), measured ÷ predicted
// spread 0.34–1.70 at batch:1 and 0.07–1.24 at batch:16 with 200 ms, and
// 0.60–0.88 and 0.34–1.19 with a second.
var (
	modelFlushes   = 5000
	modelFlushTime = time.Second
)
