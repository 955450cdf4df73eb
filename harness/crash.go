package harness

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"kvlab/engine"
	"kvlab/engine/crashtest"
)

// `labserver crash` drives the engine's own crash test
// (kvlab/engine/crashtest) as a demonstration: the same code the engine's
// tests run. Each trial crashes a writing store (SIGKILL of a child
// process, or with -power a simulated power loss on the crashable
// in-memory filesystem), reopens it and counts what came back. The
// invariant is Invariant, checked write by write: lost, corrupt and
// unwritten are all 0 (a count such as recovered >= durable_acked could
// hold while one particular durable write is missing).
//
// Two more kinds of line run no trials. -points crashes a fixed workload
// once after each of its filesystem operations (crashtest.RunPoints), so
// every window between two operations is tried, however short, and not
// just the ones a random moment tends to land in. -fail-sync fails one
// fdatasync on purpose (crashtest.RunSyncFailure) and shows what the
// store acknowledges after it: nothing.

// Invariant is what a crash trial checks, word for word as the crash
// result's "invariant" field and the course state it.
const Invariant = "every write acknowledged as durable is present with its value (or its later durable overwrite/delete); writes not yet synced may be lost; nothing is returned that was never written or is corrupt"

// CrashResult is the JSON object of kind "crash".
type CrashResult struct {
	Kind         string `json:"kind"` // "crash"
	Spec         string `json:"spec"`
	Sync         string `json:"sync"`
	Power        bool   `json:"power"`
	PowerMode    string `json:"power_mode,omitempty"` // with power: prefix, reorder, pages or dirent
	Trials       int    `json:"trials"`
	Writes       int64  `json:"writes"`        // acknowledged writes, all trials
	DurableAcked int64  `json:"durable_acked"` // of those, the ones the store called durable
	Recovered    int64  `json:"recovered"`
	Lost         int64  `json:"lost"`         // durable-acknowledged writes missing: must be 0
	LostWritten  int64  `json:"lost_written"` // SIGKILL: writes handed to the OS before the kill, missing: must be 0
	LostAcked    int64  `json:"lost_acked"`   // acknowledged writes missing, durable or not
	// lost_acked by the layer the write was in at the crash: the
	// store's write buffer, or the OS's page cache (handed over, not
	// yet durable).
	LostBuffered  int64 `json:"lost_buffered"`
	LostPageCache int64 `json:"lost_page_cache"`
	Corrupt       int64 `json:"corrupt"`
	Unwritten     int64 `json:"unwritten"`
	Resurrected   int64 `json:"resurrected"` // deleted keys back after a durable Delete (also in lost)
	FailedReopens int64 `json:"failed_reopens"`
	OK            bool  `json:"ok"` // every trial reopened and lost, lost_written, corrupt and unwritten are all 0
	// Invariant states what ok checks, in words.
	Invariant string            `json:"invariant"`
	PerTrial  []crashtest.Trial `json:"per_trial"`
	// CrashPoints is set by -points, which crashes a fixed workload once
	// after each of its filesystem operations instead of running trials
	// (trials is then 0, per_trial empty, and the sums above are over the
	// points; lost_acked is not split by layer).
	CrashPoints *CrashPoints `json:"crash_points,omitempty"`
	// SyncFailure is set by -fail-sync, which runs one store to one
	// failed fdatasync instead of crashing it (trials 0, per_trial empty;
	// writes, durable_acked, recovered, lost and lost_acked are the
	// story's).
	SyncFailure *crashtest.SyncFailReport `json:"sync_failure,omitempty"`
	Cancelled   bool                      `json:"cancelled,omitempty"`
}

// CrashPoints is what crash -points found: one power cut after each
// filesystem operation of crashtest.RunPoints's fixed workload.
type CrashPoints struct {
	Workload string `json:"workload"` // the fixed workload, in words
	Points   int    `json:"points"`   // crash points: one per filesystem operation of the workload
	// Intact counts the points after which every acknowledged write came
	// back: the points the policy survived with nothing lost, durable or
	// not. ByLostAcked[n] counts the points that lost n acknowledged
	// writes; MaxLostAcked is the most one point lost.
	Intact       int64   `json:"intact"`
	ByLostAcked  []int64 `json:"by_lost_acked"`
	MaxLostAcked int64   `json:"max_lost_acked"`
	// Damaged counts the crash images checked once more with a durable
	// write's record damaged; Undetected those whose reopen did not
	// refuse the damage (must be 0). Inconsistent counts reopens whose
	// own statements (DurableSeq, LastSeq) contradicted what they
	// recovered (must be 0).
	Damaged      int64 `json:"damaged"`
	Undetected   int64 `json:"undetected_damage"`
	Inconsistent int64 `json:"inconsistent"`
	// Findings describes the first points that broke the invariant.
	Findings []string `json:"findings,omitempty"`
}

// writeBuffer is -write-buffer as engine.Options.WriteBuffer takes it:
// 0 (the engine's default) when not given, negative for no buffer.
func (s *Spec) writeBuffer() int {
	switch {
	case s.WriteBuffer == 0:
		return -1
	case s.WriteBuffer > 0:
		return s.WriteBuffer
	}
	return 0
}

// pointsTick is how many writes apart periodic:D's timer fires in a -points
// run: the enumeration reruns the workload once per point, so its syncs
// must fall at the same steps every time, not at the wall clock's moments.
const pointsTick = 5

// pointsLine runs crash -points: the workload of crashtest.RunPoints,
// crashed by a power cut in s's mode after each filesystem operation in
// turn, and the invariant checked after each cut.
func pointsLine(ctx context.Context, s *Spec, p engine.SyncPolicy, mode engine.PowerMode) (*CrashResult, error) {
	cfg := crashtest.PointsConfig{Sync: p, Mode: mode, Seed: uint64(s.Seed)}
	cfg.WriteBuffer = s.writeBuffer()
	if p.Mode == engine.SyncPeriodic {
		cfg.TickEvery = pointsTick
	}
	rep, err := crashtest.RunPoints(ctx, cfg)
	cancelled := false
	if err != nil {
		if ctx.Err() == nil {
			return nil, fmt.Errorf("crash -points: %w", err)
		}
		cancelled = true
	}
	cp := &CrashPoints{Workload: cfg.Describe(), Points: rep.Points, Intact: rep.Intact, ByLostAcked: rep.ByLostAcked,
		Damaged: rep.Damaged, Undetected: rep.Undetected, Inconsistent: rep.Inconsistent, Findings: rep.Findings}
	if cp.ByLostAcked == nil {
		cp.ByLostAcked = []int64{}
	}
	cp.MaxLostAcked = int64(max(len(cp.ByLostAcked)-1, 0))
	return &CrashResult{
		Kind: "crash", Spec: s.line("", nil), Sync: p.String(), Power: true, PowerMode: mode.String(),
		Writes: rep.Writes, DurableAcked: rep.DurableAcked, Recovered: rep.Recovered, Lost: rep.Lost,
		LostAcked: rep.LostAcked, Corrupt: rep.Corrupt, Unwritten: rep.Unwritten, Resurrected: rep.Resurrected,
		FailedReopens: rep.Failed, OK: rep.OK() && !cancelled, Invariant: Invariant, PerTrial: []crashtest.Trial{},
		CrashPoints: cp, Cancelled: cancelled,
	}, nil
}

func crashLine(ctx context.Context, s *Spec, dir string, env Env) (*CrashResult, error) {
	p, err := engine.ParseSync(s.Sync)
	if err != nil {
		return nil, fmt.Errorf("-sync %s: %w", s.Sync, err)
	}
	mode := engine.PowerPrefix
	if s.PowerMode != "" {
		mode, err = engine.ParsePowerMode(s.PowerMode)
	}
	if err != nil {
		return nil, fmt.Errorf("-power-mode %s: allowed: %s", s.PowerMode, engine.PowerModes)
	}
	if s.Points {
		return pointsLine(ctx, s, p, mode)
	}
	if s.FailSync > 0 {
		return syncFailLine(ctx, s, p)
	}
	cfg := crashtest.Config{Sync: p, Trials: s.Trials, Power: s.Power, PowerMode: mode, Exe: env.Exe, Seed: s.Seed}
	cfg.WriteBuffer = s.writeBuffer()
	if !s.Power {
		d, err := os.MkdirTemp(dir, "kvlab-crash-")
		if err != nil {
			return nil, fmt.Errorf("-dir %s: %w", dir, err)
		}
		if !s.Keep {
			defer os.RemoveAll(d)
		}
		cfg.Dir = d
	}
	start := time.Now()
	var done int64
	rep, err := crashtest.Run(ctx, cfg, func(t crashtest.Trial) {
		done++
		if env.Progress != nil {
			el := time.Since(start)
			env.Progress(Progress{Elapsed: el, ElapsedSeconds: el.Seconds(), Ops: done, OpsPerSec: float64(done) / el.Seconds()})
		}
	})
	cancelled := false
	if err != nil {
		if ctx.Err() == nil {
			return nil, fmt.Errorf("crash: %w", err)
		}
		cancelled = true
	}
	r := &CrashResult{
		Kind: "crash", Spec: s.line("", nil), Sync: rep.Sync, Power: rep.Power, PowerMode: rep.PowerMode, Trials: len(rep.Trials),
		Writes: rep.Writes, DurableAcked: rep.DurableAcked, Recovered: rep.Recovered, Lost: rep.Lost, LostWritten: rep.LostWritten,
		LostAcked: rep.LostAcked, LostBuffered: rep.LostBuffered, LostPageCache: rep.LostPageCache, Corrupt: rep.Corrupt, Unwritten: rep.Unwritten, Resurrected: rep.Resurrected,
		FailedReopens: rep.Failed, OK: rep.OK() && !cancelled, Invariant: Invariant, PerTrial: rep.Trials, Cancelled: cancelled,
	}
	if r.PerTrial == nil {
		r.PerTrial = []crashtest.Trial{}
	}
	return r, nil
}

func writeCrashTable(w io.Writer, r *CrashResult) error {
	if r.CrashPoints != nil {
		return writePointsTable(w, r)
	}
	if r.SyncFailure != nil {
		return writeSyncFailTable(w, r)
	}
	kind := "SIGKILL of a writing process (the page cache survives; the store's write buffer does not)"
	if r.Power {
		kind = "simulated power loss (" + powerModeText[r.PowerMode] + ")"
	}
	fmt.Fprintf(w, "%s\ncrash: %s, sync %s, %d trials\n", r.Spec, kind, r.Sync, r.Trials)
	if r.Cancelled {
		fmt.Fprintln(w, "CANCELLED: the figures cover only the trials that ran before the stop")
	}
	fmt.Fprintf(w, "%6s %10s %14s %10s %6s %11s %8s\n", "trial", "acked", "durable_acked", "recovered", "lost", "lost_acked", "corrupt")
	for _, t := range r.PerTrial {
		fmt.Fprintf(w, "%6d %10d %14d %10d %6d %11d %8d", t.N, t.Writes, t.DurableAcked, t.Recovered, t.Lost, t.LostAcked, t.Corrupt)
		if t.Error != "" {
			fmt.Fprintf(w, "  %s", t.Error)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "%6s %10d %14d %10d %6d %11d %8d\n", "total", r.Writes, r.DurableAcked, r.Recovered, r.Lost, r.LostAcked, r.Corrupt)
	if !r.Power {
		fmt.Fprintf(w, "lost_written %d: acknowledged writes handed to the OS before the kill that did not come back (must be 0)\n", r.LostWritten)
	}
	verdict := "HELD: in every trial each durable-acknowledged write came back with its value, and nothing corrupt or never written"
	switch {
	case r.Cancelled && r.Lost+r.LostWritten+r.Corrupt+r.Unwritten+r.FailedReopens == 0:
		verdict = cancelledVerdict
	case !r.OK:
		verdict = "BROKEN: a durable-acknowledged write (or, after a kill, one handed to the OS) was lost, or a value came back wrong"
	}
	fmt.Fprintln(w, "invariant "+verdict)
	if r.LostAcked > 0 {
		fmt.Fprintf(w, "lost_acked by layer: %d from the write buffer, %d from the page cache (handed to the OS, not yet durable)\n", r.LostBuffered, r.LostPageCache)
	}
	if r.Resurrected > 0 {
		fmt.Fprintf(w, "%d deleted keys came back after a durable Delete\n", r.Resurrected)
	}
	return nil
}

// cancelledVerdict is the verdict of a run stopped early that had found
// nothing wrong by then: not ok, and not broken either.
const cancelledVerdict = "NOT DECIDED: the run was cancelled; what ran kept it, the rest was never tried"

// maxSyncFailAfter is the largest -fail-sync: the store lives in memory,
// and 100,000 Puts under always took 7 s and 180 MB on a 2-core VM.
const maxSyncFailAfter = 100_000

// syncFailLine runs crash -fail-sync: crashtest.RunSyncFailure, one
// store on the fault-injecting in-memory filesystem, to its first failed
// fdatasync, ten more Puts and a reopen in the same boot.
func syncFailLine(ctx context.Context, s *Spec, p engine.SyncPolicy) (*CrashResult, error) {
	cfg := crashtest.SyncFailConfig{Sync: p, FailAfter: s.FailSync}
	cfg.WriteBuffer = s.writeBuffer()
	rep, err := crashtest.RunSyncFailure(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("crash -fail-sync %d: %w", s.FailSync, err)
	}
	return &CrashResult{
		Kind: "crash", Spec: s.line("", nil), Sync: rep.Sync,
		Writes: rep.Acked, DurableAcked: rep.DurableAcked, Recovered: rep.Recovered, Lost: rep.Lost, LostAcked: rep.LostAcked,
		OK: rep.OK(), Invariant: Invariant, PerTrial: []crashtest.Trial{}, SyncFailure: &rep,
	}, nil
}

// writeSyncFailTable prints a crash -fail-sync result as the story it
// tells: before the failure, the failure, after it, the reopen.
func writeSyncFailTable(w io.Writer, r *CrashResult) error {
	f := r.SyncFailure
	fmt.Fprintf(w, "%s\nfdatasync failure: the first fdatasync of a segment after %d acknowledged Puts fails with EIO, on the in-memory filesystem that marks the failed pages clean as Linux does; sync %s\n", r.Spec, f.FailAfter, r.Sync)
	fmt.Fprintf(w, "before: %d Puts acknowledged (%.0f ns each), %d of them covered by an fdatasync that succeeded (DurableSeq %d)\n", f.Acked, f.PutMeanNs, f.DurableAcked, f.DurableSeqAtFailure)
	fmt.Fprintf(w, "failure: %s failed; the first Put to fail returned: %s\n", f.FailedSync, f.FirstError)
	fmt.Fprintf(w, "after, with the fault gone: %d of %d Puts acknowledged (must be 0), %d refused with the same error; DurableSeq %d (was %d)\n", f.AckedAfter, f.Tried, f.SameError, f.DurableSeqAfter, f.DurableSeqAtFailure)
	if f.ReopenError != "" {
		fmt.Fprintf(w, "reopen in the same boot FAILED: %s\n", f.ReopenError)
	} else {
		fmt.Fprintf(w, "reopen in the same boot (the page cache still holds the failed bytes): %d acknowledged writes back, %d lost (lost_acked), %d durable ones lost (must be 0), %d not durable returned\n", f.Recovered, f.LostAcked, f.Lost, f.ReturnedUndurable)
	}
	verdict := "HELD: nothing acknowledged after the failure, DurableSeq unmoved, after the reopen every durable write back and no other"
	if !r.OK {
		verdict = "BROKEN: a Put was acknowledged after the failure, DurableSeq moved, a durable write was lost or one no fdatasync covered came back"
	}
	fmt.Fprintln(w, "sticky error "+verdict)
	return nil
}

// writePointsTable prints a crash -points result: the sums over the
// points, and how many points lost how many acknowledged writes.
func writePointsTable(w io.Writer, r *CrashResult) error {
	cp := r.CrashPoints
	fmt.Fprintf(w, "%s\ncrash points: a simulated power loss (%s) after each of the %d filesystem operations of a fixed workload (%s), sync %s\n",
		r.Spec, powerModeText[r.PowerMode], cp.Points, cp.Workload, r.Sync)
	if r.Cancelled {
		fmt.Fprintln(w, "CANCELLED: the figures cover only the points checked before the stop")
	}
	fmt.Fprintf(w, "%7s %7s %11s %15s %6s %8s %10s\n", "points", "intact", "lost_acked", "max_lost_acked", "lost", "corrupt", "unwritten")
	fmt.Fprintf(w, "%7d %7d %11d %15d %6d %8d %10d\n", cp.Points, cp.Intact, r.LostAcked, cp.MaxLostAcked, r.Lost, r.Corrupt, r.Unwritten)
	var parts []string
	for n, c := range cp.ByLostAcked {
		if c > 0 {
			parts = append(parts, fmt.Sprintf("%d at %d", n, c))
		}
	}
	if len(parts) > 0 {
		fmt.Fprintf(w, "acknowledged writes lost per point: %s points\n", strings.Join(parts, ", "))
	}
	fmt.Fprintf(w, "damage check: %d crash images reopened again with a durable write's record damaged, %d not refused (must be 0)\n", cp.Damaged, cp.Undetected)
	verdict := "HELD: after every point each durable-acknowledged write came back with its value, and nothing corrupt or never written"
	switch {
	case r.Cancelled && r.Lost+r.Corrupt+r.Unwritten+r.FailedReopens+cp.Undetected+cp.Inconsistent == 0:
		verdict = cancelledVerdict
	case !r.OK:
		verdict = "BROKEN: a point lost a durable-acknowledged write, returned a wrong value, failed to reopen or missed damage"
	}
	fmt.Fprintln(w, "invariant "+verdict)
	for _, f := range cp.Findings {
		fmt.Fprintln(w, "  "+f)
	}
	return nil
}

// powerModeText says in the crash table what each -power-mode keeps.
var powerModeText = map[string]string{
	"":        "synced bytes survive, plus an in-order prefix of the unsynced ones",
	"prefix":  "synced bytes survive, plus an in-order prefix of the unsynced ones",
	"reorder": "synced bytes survive, plus any subset of the unsynced 512 B sectors",
	"pages":   "synced bytes survive, plus any subset of the unsynced 4 KiB pages",
	"dirent":  "synced bytes survive; unsynced file names may persist without their data",
}
