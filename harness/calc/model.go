package calc

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// The durability model for the two policies that trade durability for
// speed.
//
// batch:N makes every N-th Put pay for an fdatasync; the other N-1 pay only
// for a write(2) into the page cache. N Puts therefore take
// N*T_write + T_fsync, and
//
//	throughput(N) = N / (N*T_write + T_fsync) = 1 / (T_write + T_fsync/N)
//
// A fraction 1/N of the Puts is slow. Once that fraction reaches 1%, the p99
// lands among the slow ones: the "p99 fork" at 1/N >= 0.01, i.e. N <= 100.
// N = 100 is the knife edge: with exactly one slow Put in a hundred, the
// nearest-rank p99 is the slowest fast Put, so any other slow event (a
// page-cache writeback, a scheduler pause) tips it onto the slow path; the
// model calls it slow.
// What a crash can lose is the Puts since the last fdatasync: up to N-1
// acknowledged writes.
//
// periodic:D fdatasyncs from a timer goroutine every D, beside the writers:
// the sync does not hold the log, so (given a spare core) no Put waits for
// it and
//
//	throughput(D) = 1 / T_write
//
// with the p99 on the fast path whatever D is: periodic's p99 is stable.
// This holds for the engine (package kvlab/engine, commit.go): the timer
// goroutine calls syncActive, which takes the write lock only to flush
// queued group records and read the active segment and its last seq,
// releases it, and then fdatasyncs under syncMu alone, which no Put takes.
// A closed-loop writer (each Put issued when the previous one returned)
// therefore does not wait for the timer's flush; it can be slowed by the
// flush indirectly, by competing for the disk or a core, and directly in
// one case: a Put that seals the segment fdatasyncs under syncMu too, so
// it waits for a timer flush in flight. That is one Put per segment
// (engine.DefaultSegmentSize, 64 MiB) written: with 128-byte values about
// 1 in 400,000, far below p99. (Under periodic:D the engine does not
// zero-fill ahead by default; with engine.Options.Preallocate set, a Put
// that zero-fills the next MiB fdatasyncs under syncMu as well: with
// values of tens of KiB, more than 1 in 100, and then p99 can land on it.)
//
// An open-loop stream (-rate: arrivals on a schedule, whatever the store is
// doing) sees more of it. With one writer, a Put that waits (for the seal's
// fdatasync above, or a write stalled behind the flush on a busy device)
// holds up every arrival due during the wait, and the corrected latencies
// count the wait once per arrival queued behind it: at 5000 Puts/s, one
// 80 ms wait delays 400 arrivals, which is 4% of a second's Puts, enough
// to put p99 on the slow path although the utilization (rate x mean
// service time) is far below 1. A closed loop records that wait once.
//
// The price moves to durability, and it is measured in time, not writes.
// The writes a power cut can lose are those acknowledged since the last
// completed fdatasync started: up to D (the timer's wait) plus T_fsync (the
// sync in flight, which covers only what was written before it started).
// At a write rate of R per second that is
//
//	loss window = R x (D + T_fsync) acknowledged writes
//
// A model line has no run, so it takes the fastest rate the writer can
// reach, R = 1/T_write (RateSource "t_write"); a bench result uses the
// Put rate it measured (AtRate, RateSource "run").

// P99Slow and P99Fast name the two paths a p99 can land on.
const (
	P99Slow = "slow"
	P99Fast = "fast"
)

// Prediction is what the model says about one sync policy.
type Prediction struct {
	Sync               string  `json:"sync"`
	TWriteNs           float64 `json:"t_write_ns"`
	TFsyncNs           float64 `json:"t_fsync_ns"`
	PredictedOpsPerSec float64 `json:"predicted_ops_per_sec"`
	// SlowFraction is the share of Puts that wait for an fdatasync.
	SlowFraction float64 `json:"slow_fraction"`
	// P99Path is P99Slow when SlowFraction >= 0.01, else P99Fast.
	P99Path string `json:"p99_path"`
	// PredictedP99Ns is T_write+T_fsync on the slow path, T_write on the fast.
	PredictedP99Ns   float64 `json:"predicted_p99_ns"`
	LossWindowWrites float64 `json:"loss_window_writes"`
	LossWindowMs     float64 `json:"loss_window_ms"`
	// RateSource says which write rate converts the loss window between
	// writes and time: "t_write" (1/T_write, the fastest a writer goes:
	// a model line) or "run" (the Puts per second a run measured; AtRate).
	RateSource string `json:"rate_source"`
	// WriteRate is that rate, in writes per second.
	WriteRate float64 `json:"write_rate"`
}

// Rate sources of a loss window.
const (
	RateFromTWrite = "t_write"
	RateFromRun    = "run"
)

// Batch predicts batch:n from the cost of one write and one fdatasync, in
// nanoseconds.
func Batch(n int, tWriteNs, tFsyncNs float64) (Prediction, error) {
	if n < 1 {
		return Prediction{}, fmt.Errorf("calc: batch:%d: N must be at least 1", n)
	}
	if err := checkCosts(tWriteNs, tFsyncNs); err != nil {
		return Prediction{}, err
	}
	perOp := tWriteNs + tFsyncNs/float64(n)
	p := Prediction{
		Sync:               fmt.Sprintf("batch:%d", n),
		TWriteNs:           tWriteNs,
		TFsyncNs:           tFsyncNs,
		PredictedOpsPerSec: 1e9 / perOp,
		SlowFraction:       1 / float64(n),
		LossWindowWrites:   float64(n - 1),
		LossWindowMs:       float64(n-1) * perOp / 1e6,
		RateSource:         RateFromTWrite,
		WriteRate:          1e9 / perOp,
	}
	p.fork()
	return p, nil
}

// Periodic predicts periodic:interval from the cost of one write and one
// fdatasync, in nanoseconds.
func Periodic(interval time.Duration, tWriteNs, tFsyncNs float64) (Prediction, error) {
	if interval <= 0 {
		return Prediction{}, fmt.Errorf("calc: periodic:%v: the interval must be positive", interval)
	}
	if err := checkCosts(tWriteNs, tFsyncNs); err != nil {
		return Prediction{}, err
	}
	window := float64(interval.Nanoseconds()) + tFsyncNs
	p := Prediction{
		Sync:               "periodic:" + interval.String(),
		TWriteNs:           tWriteNs,
		TFsyncNs:           tFsyncNs,
		PredictedOpsPerSec: 1e9 / tWriteNs,
		SlowFraction:       0, // the timer's sync is off the write path
		LossWindowMs:       window / 1e6,
		LossWindowWrites:   math.Round(window / tWriteNs),
		RateSource:         RateFromTWrite,
		WriteRate:          1e9 / tWriteNs,
	}
	p.fork()
	return p, nil
}

// AtRate restates the loss window at a measured write rate (writes per
// second): periodic's window is a time, D + T_fsync, holding
// rate x (D + T_fsync) writes; batch's is a count, N-1 writes, lasting
// (N-1) / rate. RateSource becomes "run". A rate that is not positive
// and finite leaves p unchanged.
func (p *Prediction) AtRate(writesPerSec float64) {
	if !(writesPerSec > 0) || math.IsInf(writesPerSec, 0) {
		return
	}
	p.RateSource, p.WriteRate = RateFromRun, writesPerSec
	if strings.HasPrefix(p.Sync, "periodic:") { // the window is a time
		p.LossWindowWrites = math.Round(writesPerSec * p.LossWindowMs / 1e3)
		return
	}
	p.LossWindowMs = p.LossWindowWrites / writesPerSec * 1e3
}

// fork sets P99Path and PredictedP99Ns from SlowFraction.
func (p *Prediction) fork() {
	if p.SlowFraction >= 0.01 {
		p.P99Path = P99Slow
		p.PredictedP99Ns = p.TWriteNs + p.TFsyncNs
	} else {
		p.P99Path = P99Fast
		p.PredictedP99Ns = p.TWriteNs
	}
}

func checkCosts(tWriteNs, tFsyncNs float64) error {
	if !(tWriteNs > 0) || math.IsInf(tWriteNs, 0) {
		return fmt.Errorf("calc: T_write %v ns: must be a positive number of nanoseconds", tWriteNs)
	}
	if !(tFsyncNs >= 0) || math.IsInf(tFsyncNs, 0) {
		return fmt.Errorf("calc: T_fsync %v ns: must be zero or a positive number of nanoseconds", tFsyncNs)
	}
	return nil
}
