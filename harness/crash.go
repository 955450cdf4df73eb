package harness

import (
	"context"
	"fmt"
	"io"
	"os"
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
	Cancelled bool              `json:"cancelled,omitempty"`
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
	cfg := crashtest.Config{Sync: p, Trials: s.Trials, Power: s.Power, PowerMode: mode, Exe: env.Exe, Seed: s.Seed}
	switch {
	case s.WriteBuffer == 0:
		cfg.WriteBuffer = -1 // engine.Options: negative = no buffer
	case s.WriteBuffer > 0:
		cfg.WriteBuffer = s.WriteBuffer
	}
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
		FailedReopens: rep.Failed, OK: rep.OK(), Invariant: Invariant, PerTrial: rep.Trials, Cancelled: cancelled,
	}
	if r.PerTrial == nil {
		r.PerTrial = []crashtest.Trial{}
	}
	return r, nil
}

func writeCrashTable(w io.Writer, r *CrashResult) error {
	kind := "SIGKILL of a writing process (the page cache survives; the store's write buffer does not)"
	if r.Power {
		kind = "simulated power loss (" + powerModeText[r.PowerMode] + ")"
	}
	fmt.Fprintf(w, "%s\ncrash: %s, sync %s, %d trials\n", r.Spec, kind, r.Sync, r.Trials)
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
	if !r.OK {
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

// powerModeText says in the crash table what each -power-mode keeps.
var powerModeText = map[string]string{
	"":        "synced bytes survive, plus an in-order prefix of the unsynced ones",
	"prefix":  "synced bytes survive, plus an in-order prefix of the unsynced ones",
	"reorder": "synced bytes survive, plus any subset of the unsynced 512 B sectors",
	"pages":   "synced bytes survive, plus any subset of the unsynced 4 KiB pages",
	"dirent":  "synced bytes survive; unsynced file names may persist without their data",
}
