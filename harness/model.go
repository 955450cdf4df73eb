package harness

import (
	"context"

	"kvlab/engine"
	"kvlab/harness/calc"
)

// The batch/periodic model (the math is in kvlab/harness/calc) wired to
// measurements: `labserver model -sync batch:64` feeds it this disk's probe
// figures; a bench result with -sync batch:N or periodic:D carries the
// prediction beside the measurement, fed by the run's own mean fdatasync
// time when the store reports one (t_fsync_source "run") and the probe's
// otherwise.
//
// T_write is the cost of a Put that does not fdatasync. A store with a
// write buffer (the kv engine under batch:N and periodic:D) does not call
// write(2) per Put at all, so the probe's raw write(2) is not its T_write:
// its own per-Put cost is, the cost of a Put under none. A one-writer run
// of batch:N (N >= 2) or periodic:D has that cost in it: most of its Puts
// take exactly that path, so its median Put is one of them. benchModel uses
// that median (t_write_source "run") and the probe's write(2) otherwise
// ("probe").

// ModelResult is the JSON object of kind "model".
type ModelResult struct {
	Kind string `json:"kind"` // "model"
	calc.Prediction
	Source string `json:"source"` // where T_write and T_fsync came from: "probe" or "given"
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

// modelLine answers a model line, probing dir for whichever cost was not
// given on the line.
func modelLine(ctx context.Context, s *Spec, dir string) (*ModelResult, error) {
	tw, tf := float64(s.TWrite), float64(s.TFsync)
	source := "given"
	if s.TWrite == 0 || !s.has("t-fsync") {
		b, err := quickProbe(ctx, dir)
		if err != nil {
			return nil, err
		}
		source = "probe"
		if s.TWrite == 0 {
			tw = b.WriteNs
		}
		if !s.has("t-fsync") {
			tf = b.FdatasyncNs
		}
	}
	p, _, err := Predict(s.Sync, max(tw, 1), tf)
	if err != nil {
		return nil, err
	}
	return &ModelResult{Kind: "model", Prediction: p, Source: source}, nil
}

// benchModel is the prediction for a finished bench run, or nil when its
// policy has no model. Throughput is a mean figure, so the model is fed the
// run's mean fdatasync time; the p99 fork is a tail question, so the
// measured path compares p99 with medians (calc.MeasuredP99Path); the loss
// window is counted at the Put rate the run reached.
func benchModel(sync string, r *BenchResult, b *ProbeBrief) *BenchModel {
	if b == nil || r.Latency["put"] == nil {
		return nil
	}
	tf, src := b.FdatasyncNs, "probe"
	if r.Fsyncs > 0 {
		tf, src = r.FsyncMeanNs, "run"
	}
	tw, wsrc := b.WriteNs, "probe"
	if put := r.Latency["put"]; r.Threads == 1 && put.P50Ns > 0 && medianSkipsSync(sync) {
		tw, wsrc = float64(put.P50Ns), "run"
	}
	p, ok, err := Predict(sync, max(tw, 1), tf)
	if !ok || err != nil {
		return nil
	}
	put := r.Latency["put"]
	if r.WallSeconds > 0 {
		p.AtRate(float64(put.Count) / r.WallSeconds)
	}
	m := &BenchModel{
		PredictedOpsPerSec: p.PredictedOpsPerSec, TWriteNs: p.TWriteNs, TFsyncNs: p.TFsyncNs,
		TWriteSource: wsrc, TFsyncSource: src, P99Path: p.P99Path,
		LossWindowWrites: p.LossWindowWrites, LossWindowMs: p.LossWindowMs,
		RateSource: p.RateSource, WriteRate: p.WriteRate,
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

// medianSkipsSync reports whether most Puts under the policy return without
// an fdatasync of their own (batch:N with N >= 2, periodic:D), so that a
// one-writer run's median Put measures T_write.
func medianSkipsSync(sync string) bool {
	p, err := parseSync(sync)
	return err == nil && (p.Mode == engine.SyncPeriodic || (p.Mode == engine.SyncBatch && p.N >= 2))
}
