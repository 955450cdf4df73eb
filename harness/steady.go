package harness

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"
)

// Steady state, as db_bench's users define it: a number taken before it is
// noise, and reaching it takes two signals at once, throughput that has
// settled (the last window of one-second intervals varies by less than a
// few percent) and an engine whose background backlog has drained or
// stopped growing (kv's compaction debt; pebble's compaction debt and L0
// files). A store still ramping up, or one whose throughput looks flat
// while its debt grows, is not there yet: the debt comes due later, as
// slower writes or stalls.
//
// bench -until-steady warms a run up (warmUntilSteady) until FindSteady
// says the last window of its warm-up met both conditions, or -max-warmup
// has passed; then it measures as any run does. The result's
// steady_state says which, with the last window as evidence, and its
// warmup_timeline holds the warm-up's seconds beside the measured
// timeline.

// The detector's defaults: a window of five samples (seconds, at the
// default progress tick) whose throughput varies by at most 5%.
const (
	SteadyWindow           = 5
	DefaultSteadyTolerance = 5.0 // percent, -steady-tolerance's default
	DefaultMaxWarmup       = 60 * time.Second
)

// SteadySample is one second of a warm-up: its throughput and the
// engine's backlog at its end.
type SteadySample struct {
	Second    int     `json:"second"` // 1 for the first second
	OpsPerSec float64 `json:"ops_per_sec"`
	// Debt is the engine's background backlog at the end of the second,
	// in bytes (engine_metrics' compaction_debt_bytes); -1 when the
	// engine reports none, and only throughput decides.
	Debt int64 `json:"debt"`
	// L0Files is pebble's count of files in level 0 at the end of the
	// second (engine_metrics' l0_files), a backlog of its own: reads look
	// at each, and too many stall writes. -1 for an engine without it.
	L0Files int64 `json:"l0_files"`
}

// SteadyState is the verdict of FindSteady, and of a -until-steady
// warm-up.
type SteadyState struct {
	// Reached says whether a window of Window seconds met both
	// conditions; AtSecond is the last second of the first one that did
	// (measuring starts after it).
	Reached  bool `json:"reached"`
	AtSecond int  `json:"at_second"` // 0 when not reached
	Window   int  `json:"window_seconds"`
	// Tolerance is the largest spread allowed, as a fraction; Spread is
	// that of the window found, or of the last window when none was:
	// (max - min) / mean of its throughput.
	Tolerance float64 `json:"tolerance"`
	Spread    float64 `json:"spread"`
	// Evidence says, when Reached is false, which condition the last
	// window failed and by how much; when it is true, over which seconds
	// both conditions held (a quiz's show line reads it either way).
	Evidence string `json:"evidence,omitempty"`
	// LastWindow is the window the verdict is about: the one found, or
	// the last one looked at, or, when the warm-up ended (at the run's
	// byte cap) before a whole window, the seconds it had.
	LastWindow []SteadySample `json:"last_window,omitempty"`
	// WarmupSeconds is how long a -until-steady warm-up ran, and
	// MaxWarmupSeconds how long it was allowed to (-max-warmup).
	WarmupSeconds    float64 `json:"warmup_seconds,omitempty"`
	MaxWarmupSeconds float64 `json:"max_warmup_seconds,omitempty"`
	// WarmupOps is how many ops the warm-up did (thrown away).
	WarmupOps int64 `json:"warmup_ops,omitempty"`
}

// FindSteady returns the first second at which the last window samples
// had a throughput spread of at most tolerance and a backlog that was
// zero or flat: its spread, (max - min) / mean, also at most tolerance,
// and no higher at the end of the window than at its start (pebble's L0
// file count likewise). With fewer than window samples it is not
// reached, and the samples there are are the evidence.
func FindSteady(samples []SteadySample, window int, tolerance float64) SteadyState {
	st := SteadyState{Window: window, Tolerance: tolerance}
	if window < 2 || len(samples) < window {
		st.Evidence = fmt.Sprintf("%d seconds of warm-up, fewer than the %d-second window", len(samples), window)
		st.LastWindow = append([]SteadySample(nil), samples...)
		return st
	}
	for end := window; end <= len(samples); end++ {
		w := samples[end-window : end]
		spread := spreadOf(w, func(s SteadySample) float64 { return s.OpsPerSec })
		st.Spread = spread
		st.LastWindow = w
		debtOK, debtWhy := debtSettled(w, tolerance)
		if spread <= tolerance && debtOK {
			st.Reached, st.AtSecond = true, w[len(w)-1].Second
			st.Evidence = fmt.Sprintf("steady over seconds %d-%d: throughput varied by %.1f%%, within %.1f%%, and the backlog was zero or flat", w[0].Second, w[len(w)-1].Second, 100*spread, 100*tolerance)
			st.LastWindow = append([]SteadySample(nil), w...)
			return st
		}
		switch {
		case spread > tolerance:
			st.Evidence = fmt.Sprintf("throughput over seconds %d-%d varied by %.1f%%, more than %.1f%%", w[0].Second, w[len(w)-1].Second, 100*spread, 100*tolerance)
		default:
			st.Evidence = fmt.Sprintf("throughput settled over seconds %d-%d, but %s", w[0].Second, w[len(w)-1].Second, debtWhy)
		}
	}
	st.LastWindow = append([]SteadySample(nil), st.LastWindow...)
	return st
}

// debtSettled reports whether the backlog over w is zero or flat, and
// if not, why.
func debtSettled(w []SteadySample, tolerance float64) (bool, string) {
	if ok, why := gaugeSettled(w, tolerance, "the compaction debt", "bytes", func(s SteadySample) int64 { return s.Debt }); !ok {
		return false, why
	}
	return gaugeSettled(w, tolerance, "level 0", "files", func(s SteadySample) int64 { return s.L0Files })
}

// gaugeSettled reports whether one backlog gauge over w is zero or flat:
// every sample 0, or no higher at the end than at the start and moving by
// at most tolerance of its mean. A gauge the engine does not report (-1)
// is settled.
func gaugeSettled(w []SteadySample, tolerance float64, what, unit string, g func(SteadySample) int64) (bool, string) {
	if g(w[0]) < 0 {
		return true, "" // the engine reports no such backlog
	}
	first, last := g(w[0]), g(w[len(w)-1])
	allZero := true
	for _, s := range w {
		allZero = allZero && g(s) == 0
	}
	if allZero {
		return true, ""
	}
	if last > first {
		return false, fmt.Sprintf("%s grew from %d to %d %s", what, first, last, unit)
	}
	if spread := spreadOf(w, func(s SteadySample) float64 { return float64(g(s)) }); spread > tolerance {
		return false, fmt.Sprintf("%s moved by %.0f%% of its mean", what, 100*spread)
	}
	return true, ""
}

// spreadOf returns (max - min) / mean of f over w; 0 when the mean is 0.
func spreadOf(w []SteadySample, f func(SteadySample) float64) float64 {
	lo, hi, sum := f(w[0]), f(w[0]), 0.0
	for _, s := range w {
		v := f(s)
		lo, hi, sum = min(lo, v), max(hi, v), sum+v
	}
	mean := sum / float64(len(w))
	if mean == 0 {
		return 0
	}
	return (hi - lo) / mean
}

// backlogOf reads a store's backlog gauges for a SteadySample: its
// compaction debt and L0 file count, -1 for each it does not report.
func backlogOf(store Store) (debt, l0 int64) {
	debt, l0 = -1, -1
	m := storeStats(store).Metrics
	if v, ok := m["compaction_debt_bytes"]; ok {
		debt = v
	}
	if v, ok := m["l0_files"]; ok {
		l0 = v
	}
	return debt, l0
}

// warmUntilSteady is step 4 of a -until-steady run: every client runs
// closed loop, into recorders that are thrown away, while a sampler looks
// at their op counts and at the store's backlog once a tick (cfg.tick,
// a second by default) and asks FindSteady about the samples so far. The
// warm-up stops at the first steady window, at -max-warmup, when the
// clients have done as many units as the run's byte cap allows, or on
// cancel. It returns the verdict and the warm-up's timeline, each point
// marked "warmup". Progress events go out as in the measured part, with
// phase "warmup".
func warmUntilSteady(ctx context.Context, r *run, keys keyTable, clients []*worker, store Store) (*SteadyState, []TimelinePoint, error) {
	cfg := r.cfg
	tick := cfg.tick
	if tick <= 0 {
		tick = time.Second
	}
	// The warm-up has its own stop, so reaching steady state does not
	// stop the run; a cancel of the run stops it too.
	wr := &run{cfg: cfg, stopCh: make(chan struct{}), base: r.base, fake: r.fake}
	defer wr.haltOn(ctx)()
	warm := newSampleBudget(0) // histograms only: nothing is kept
	var wg sync.WaitGroup
	for _, w := range clients {
		w.setRecorders(warm)
		w.warming = true
		quota := int64(math.MaxInt64)
		if cfg.maxUnits > 0 {
			quota = int64(share(int(cfg.maxUnits), cfg.threads, w.id))
		}
		wg.Go(func() { w.loop(wr, keys, int64(len(w.plan.order)/2), quota, 0) })
	}
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()

	t0 := time.Now()
	ticker := time.NewTicker(tick)
	var samples []SteadySample
	var timeline []TimelinePoint
	var lastOps int64
	lastAt := time.Duration(0)
	capped := false
	verdict := FindSteady(nil, SteadyWindow, cfg.steadyTolerance)
	take := func(at time.Duration) {
		var total int64
		for _, w := range clients {
			total += w.live.done.Load()
		}
		dt := at - lastAt
		if dt <= 0 {
			return
		}
		delta := total - lastOps
		rate := float64(delta) / dt.Seconds()
		debt, l0 := backlogOf(store)
		n := len(samples) + 1
		samples = append(samples, SteadySample{Second: n, OpsPerSec: rate, Debt: debt, L0Files: l0})
		timeline = append(timeline, TimelinePoint{Second: n, Ops: delta, OpsPerSec: rate, Seconds: dt.Seconds(), Phase: PhaseWarmup})
		lastOps, lastAt = total, at
		verdict = FindSteady(samples, SteadyWindow, cfg.steadyTolerance)
		if cfg.progress != nil {
			cfg.progress(Progress{Elapsed: at, ElapsedSeconds: at.Seconds(), Ops: total, OpsPerSec: rate, Engine: cfg.engine, Phase: PhaseWarmup})
		}
	}
sampling:
	for {
		select {
		case now := <-ticker.C:
			at := now.Sub(t0)
			take(at)
			if verdict.Reached || at >= cfg.maxWarmup {
				break sampling
			}
		case <-finished:
			// Every client has done its share of the byte cap.
			take(time.Since(t0))
			capped = true
			break sampling
		case <-wr.stopCh:
			break sampling
		}
	}
	ticker.Stop()
	wr.halt()
	<-finished
	elapsed := time.Since(t0)
	var ops int64
	for _, w := range clients {
		ops += w.ops
		if w.err != nil {
			return nil, nil, fmt.Errorf("warmup: %w", w.err)
		}
		w.units, w.ops, w.gets, w.hits, w.warming = 0, 0, 0, 0, false
		w.live.done.Store(0)
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	verdict.WarmupSeconds = elapsed.Seconds()
	verdict.MaxWarmupSeconds = cfg.maxWarmup.Seconds()
	verdict.WarmupOps = ops
	if !verdict.Reached && verdict.Evidence != "" {
		stop := ""
		if capped {
			// A fast store on a quiet machine writes the run's byte cap
			// before -max-warmup is up: say so, not just "not steady".
			stop = ", stopped early at the run's byte cap"
		}
		verdict.Evidence = fmt.Sprintf("not steady within %v of warm-up%s: %s", roundDuration(elapsed), stop, verdict.Evidence)
	}
	return &verdict, timeline, nil
}

// roundDuration rounds d for a sentence: to the millisecond under a
// second, else to the tenth of a second.
func roundDuration(d time.Duration) time.Duration {
	if d < time.Second {
		return d.Round(time.Millisecond)
	}
	return d.Round(100 * time.Millisecond)
}

// The phases a -until-steady run's timeline points are marked with.
const (
	PhaseWarmup   = "warmup"
	PhaseMeasured = "measured"
)

// steadyLine is the table's line for a -until-steady run: when steady
// state was reached and on what evidence, or why it was not; "" for any
// other run.
func steadyLine(st *SteadyState) string {
	if st == nil {
		return ""
	}
	warm := fmt.Sprintf("warm-up %.1f s, %d ops discarded", st.WarmupSeconds, st.WarmupOps)
	if !st.Reached {
		return fmt.Sprintf("steady state NOT reached (%s): %s; the figures above may still be moving", warm, st.Evidence)
	}
	debt := "no backlog reported"
	if n := len(st.LastWindow); n > 0 {
		last := st.LastWindow[n-1]
		switch {
		case last.Debt >= 0 && last.L0Files >= 0:
			debt = fmt.Sprintf("compaction debt %s, %d L0 files", FormatBytes(last.Debt), last.L0Files)
		case last.Debt >= 0:
			debt = "compaction debt " + FormatBytes(last.Debt)
		}
	}
	return fmt.Sprintf("steady state reached at second %d (%s): throughput within %.1f%% over the last %d seconds (allowed %.1f%%), %s, zero or flat",
		st.AtSecond, warm, 100*st.Spread, st.Window, 100*st.Tolerance, debt)
}
