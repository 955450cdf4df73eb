package archive

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"kvlab/harness"
	"kvlab/harness/calc"
)

// Gist is the one-line gist of a run's result, for the lists of runs
// (`labserver runs`, the /runs page).
type Gist struct {
	// Text reads "48213 ops/s, p99 1.20 ms" for a bench, "ext4:
	// fdatasync 1.10 ms" for a probe, and so on; "?" when the result
	// cannot be read.
	Text string
	// Benches is how many bench results the run holds: 1 for a bench
	// line, more for a sweep, several engines or -repeat, 0 for other
	// kinds. OpsPerSec and P99Ns are the first's: its throughput and the
	// p99 of its first measured operation kind (put, get, delete, scan),
	// P99Ns -1 when it measured none.
	Benches   int
	OpsPerSec float64
	P99Ns     int64
	Cancelled bool // the first bench result was cut short (Ctrl-C, a closed tab)
}

// Gist reads r's result into its gist.
func (r *Run) Gist() Gist {
	v, err := harness.DecodeResult(r.Result)
	if err != nil {
		return Gist{Text: "?"}
	}
	switch v := v.(type) {
	case *harness.BenchResult:
		return benchGist([]*harness.BenchResult{v})
	case []*harness.BenchResult:
		return benchGist(v)
	case *harness.ProbeResult:
		return Gist{Text: fmt.Sprintf("%s: fdatasync %s", v.FS, calc.FormatNs(v.FdatasyncNs))}
	case *harness.ModelResult:
		return Gist{Text: fmt.Sprintf("predicts %.0f ops/s", v.PredictedOpsPerSec)}
	case []*harness.ScriptResult:
		// The first engine's line after the floor: its units per second.
		for _, r := range v {
			if !r.Floor {
				return Gist{Text: fmt.Sprintf("script %s: %s %.0f wu/s, %.0f ops/s", r.Name, r.Engine, r.WUPerSec, r.OpsPerSec), Cancelled: r.Cancelled}
			}
		}
		return Gist{Text: "script"}
	case *harness.CrashResult:
		if v.OK {
			return Gist{Text: fmt.Sprintf("ok: %d trials, lost 0", v.Trials)}
		}
		return Gist{Text: fmt.Sprintf("FAILED: %d trials, lost %d, corrupt %d", v.Trials, v.Lost, v.Corrupt)}
	}
	return Gist{Text: "?"}
}

func benchGist(rs []*harness.BenchResult) Gist {
	if len(rs) == 0 {
		return Gist{Text: "?"}
	}
	r := rs[0]
	g := Gist{Benches: len(rs), OpsPerSec: r.OpsPerSec, P99Ns: -1, Cancelled: r.Cancelled}
	for _, op := range []string{"put", "get", "delete", "scan"} {
		if l := r.Latency[op]; l != nil && l.Count > 0 {
			g.P99Ns = l.P99Ns
			break
		}
	}
	g.Text = benchText(g.OpsPerSec, g.P99Ns)
	if len(rs) > 1 {
		g.Text = fmt.Sprintf("%d results; first: %s", len(rs), g.Text)
	}
	if r.Cancelled {
		g.Text += " (cancelled)"
	}
	return g
}

// benchText is "48213 ops/s, p99 1.20 ms" (without the p99 when p99Ns < 0).
func benchText(opsPerSec float64, p99Ns int64) string {
	s := fmt.Sprintf("%.0f ops/s", opsPerSec)
	if p99Ns >= 0 {
		s += ", p99 " + calc.FormatNs(float64(p99Ns))
	}
	return s
}

// MaxJobGap is the longest pause between two runs that Repeats still
// takes for rounds of one job. A job's runs follow each other with only
// a fresh directory between them (milliseconds); a reader's next click
// comes seconds later.
const MaxJobGap = 2 * time.Second

// Repeat is one line run several times back to back from one place: the
// rounds of a cell's "Repeat 5×", or the same line run again at once.
type Repeat struct {
	IDs []int64 // its runs, oldest first
	// Median is the gist of the rounds' medians (throughput and p99 each
	// the middle value, the mean of the two middle ones for an even
	// count), set when every round is one finished bench result.
	Median *Gist
}

// Repeats finds the repeated lines among runs (a page of List: any
// order). A job is a stretch of runs, consecutive by id, from the same
// source, lesson, cell, quiz and browser, each starting at most
// MaxJobGap after the one before ended; within a job, the runs of the
// same line (index, text and whether it is the lesson's own) form a
// Repeat when there are two or more. Rounds of a cell of several lines
// interleave, line by line, and still group. Each run is in at most one
// Repeat; Repeats come oldest first.
func Repeats(runs []Run) []Repeat {
	rs := slices.Clone(runs)
	slices.SortFunc(rs, func(a, b Run) int { return cmp.Compare(a.ID, b.ID) })
	var out []Repeat
	for start := 0; start < len(rs); {
		end := start + 1
		for end < len(rs) && sameJob(&rs[end-1], &rs[end]) {
			end++
		}
		type lineKey struct {
			line int
			spec string
			own  bool
		}
		var order []lineKey
		byLine := map[lineKey][]*Run{}
		for i := start; i < end; i++ {
			k := lineKey{rs[i].Line, rs[i].Spec, rs[i].Own}
			if byLine[k] == nil {
				order = append(order, k)
			}
			byLine[k] = append(byLine[k], &rs[i])
		}
		for _, k := range order {
			if rounds := byLine[k]; len(rounds) >= 2 {
				out = append(out, newRepeat(rounds))
			}
		}
		start = end
	}
	return out
}

// sameJob says run b (the next id after a) continues a's job.
func sameJob(a, b *Run) bool {
	if a.Source != b.Source || a.Lesson != b.Lesson || a.Cell != b.Cell || a.Quiz != b.Quiz || a.Browser != b.Browser {
		return false
	}
	if a.Ended.IsZero() || b.Started.IsZero() {
		return false
	}
	gap := b.Started.Sub(a.Ended)
	return gap >= -time.Millisecond && gap <= MaxJobGap
}

func newRepeat(rounds []*Run) Repeat {
	rep := Repeat{}
	var ops []float64
	var p99s []float64
	for _, r := range rounds {
		rep.IDs = append(rep.IDs, r.ID)
		g := r.Gist()
		if g.Benches != 1 || g.Cancelled {
			continue
		}
		ops = append(ops, g.OpsPerSec)
		if g.P99Ns >= 0 {
			p99s = append(p99s, float64(g.P99Ns))
		}
	}
	if len(ops) == len(rounds) {
		m := Gist{Benches: 1, OpsPerSec: harness.Median(ops), P99Ns: -1}
		if len(p99s) == len(rounds) {
			m.P99Ns = int64(harness.Median(p99s))
		}
		m.Text = benchText(m.OpsPerSec, m.P99Ns)
		rep.Median = &m
	}
	return rep
}
