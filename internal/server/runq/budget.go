package runq

import (
	"context"
	"fmt"
	"strings"
	"time"

	"kvlab/harness"
)

// Budget bounds what one job (a cell, or one quiz's run: lines) may cost
// as a whole. harness.Limits bound each flag of a line; a line can still
// ask for many runs (engines x thread counts x repeats), each up to those
// caps, and a cell holds several lines. The budget counts them together.
//
// A job whose specs alone show it cannot fit is refused before it is
// queued (CheckLines), with the flag, the computed total and the allowed
// maximum; the time budget is also enforced while it runs: it covers the
// job from its start to its end, preload and every run included, and a
// job still running when it is spent is stopped with an error that says
// so.
type Budget struct {
	MaxRunsPerLine int           // runs one line may make (-max-line-runs)
	MaxRunsPerCell int           // runs all of a cell's lines may make (-max-cell-runs)
	MaxCellTime    time.Duration // wall clock for the whole cell (-max-cell-time)
	MaxMemory      int64         // bytes one run may hold, by harness.Spec.MemoryBytes (-max-memory)
	// Addresses are the servers a line may name by an address
	// (-allow-engine, and whether the server serves others): not a cost,
	// but checked with the rest of a job before it queues (addresses.go).
	Addresses Addresses
}

// DefaultBudget is the server's budget: a lesson's largest cell (a
// six-count sweep of 2 s runs) fits several times over.
func DefaultBudget() Budget {
	return Budget{MaxRunsPerLine: 32, MaxRunsPerCell: 64, MaxCellTime: 3 * time.Minute, MaxMemory: 1 << 30}
}

// WithDefaults returns b with its zero fields taken from DefaultBudget.
func (b Budget) WithDefaults() Budget {
	d := DefaultBudget()
	if b.MaxRunsPerLine <= 0 {
		b.MaxRunsPerLine = d.MaxRunsPerLine
	}
	if b.MaxRunsPerCell <= 0 {
		b.MaxRunsPerCell = d.MaxRunsPerCell
	}
	if b.MaxCellTime <= 0 {
		b.MaxCellTime = d.MaxCellTime
	}
	if b.MaxMemory <= 0 {
		b.MaxMemory = d.MaxMemory
	}
	return b
}

// check refuses specs (already checked one by one against the limits)
// that cannot fit the budget when run rounds times (0 or 1: once). bad is
// the 0-based line at fault, or -1 when the cell as a whole is over.
func (b Budget) check(specs []*harness.Spec, rounds int) (bad int, err error) {
	runs := 0
	var minTime time.Duration
	for i, spec := range specs {
		n := spec.SubRuns()
		if n > b.MaxRunsPerLine {
			return i, fmt.Errorf("-max-line-runs: this line makes %d runs (%d engines x %d thread counts x %d repeats); the server allows %d per line",
				n, len(spec.Engines), len(spec.Threads), spec.Repeat, b.MaxRunsPerLine)
		}
		if m := spec.MemoryBytes(); m > b.MaxMemory {
			return i, fmt.Errorf("-max-memory: one run of this line needs about %s (-keys %d, -value-size %d, -engine %s, latency samples kept); the server allows %s",
				harness.FormatBytes(m), spec.Keys, spec.ValueSize, strings.Join(spec.Engines, ","), harness.FormatBytes(b.MaxMemory))
		}
		runs += n
		minTime += spec.MinTime()
	}
	rounds = max(rounds, 1)
	runs *= rounds
	minTime *= time.Duration(rounds)
	if runs > b.MaxRunsPerCell {
		return -1, fmt.Errorf("-max-cell-runs: the cell makes %d runs in all; the server allows %d per cell", runs, b.MaxRunsPerCell)
	}
	if minTime > b.MaxCellTime {
		return -1, fmt.Errorf("-max-cell-time: the cell's runs take at least %v in all (their -duration, or -ops / -rate, times their runs); the server allows %v per cell", minTime, b.MaxCellTime)
	}
	return -1, nil
}

// withBudget is ctx bounded by the job's time budget.
func (b Budget) withBudget(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeoutCause(ctx, b.MaxCellTime, budgetSpentError{b.MaxCellTime})
}
