package harness

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"kvlab/internal/suggest"
)

// The run-spec grammar. One parser serves the command line, the lesson
// cells and the quizzes: a line is exactly what a student could type after
// `labserver`, split on whitespace:
//
//	bench -engine kv -sync batch:64 -workload fillrandom -ops 8000
//	sweep -engine kv -sync group -threads 1,2,4,8,16 -duration 3s
//	probe
//	model -sync batch:64
//	crash -sync batch:100 -trials 20
//
// A leading "labserver" is accepted and ignored. Flags take "-name value"
// or "-name=value" (a double dash works too); boolean flags stand alone.
// Every error names the flag and what is allowed, and nothing runs.
//
// This file reads a line into a Spec and prints a Spec back; what the
// commands are and which flags each takes, with their defaults, ranges
// and help, is the table in grammar.go.

// Spec is one parsed and validated line.
type Spec struct {
	Cmd      string
	Engines  []string // bench, sweep: one run per engine
	Sync     string   // bench, sweep, model, crash
	Workload string
	// Script is bench -script: a shipped workload script's name
	// (kvlab/workloads) or, on the command line, a .lua file; Items,
	// Users and Index go with it (-items, -users, -index).
	Script       string
	Items, Users int
	Index        string
	Batch        int // fillbatch and -script: Puts per unit (ctx.batch); 1 for every other workload
	Dist         string
	Ops          int64         // bench/sweep: units; probe: iterations
	Duration     time.Duration // instead of Ops
	Threads      []int         // bench: one value; sweep: the list
	ValueSize    int
	Keys         int
	Warmup       int64
	// UntilSteady is -until-steady: warm up until steady state
	// (steady.go), at most MaxWarmup, instead of Warmup units;
	// SteadyTolerance is the spread allowed, in percent.
	UntilSteady     bool
	MaxWarmup       time.Duration
	SteadyTolerance float64
	Rate            float64
	// Arrivals is how an open loop (-rate) spaces its units' intended
	// starts: "even" (every 1/rate, the default) or "poisson" (random,
	// exponential gaps with mean 1/rate: the arrivals queueing theory's
	// M/M/1 formulas assume).
	Arrivals string
	Pipeline int    // bench, sweep: requests per batch on each client's connection; 1 = none
	Cache    string // bench, sweep: "warm" or "cold" (cache.go)
	// Replicas, Quorum and Net are the replicated engines' flags
	// (replication.go); Replicas 0 and a zero Net when not given.
	Replicas int
	Quorum   string
	Net      NetOptions
	// KillFollower is -kill follower@D; 0 when not given.
	KillFollower time.Duration
	// KillLeader is -kill leader@D; 0 when not given.
	KillLeader time.Duration
	Fanout     int     // bench, sweep: requests per unit (fanout.go); 1 = none
	Hedge      float64 // bench, sweep: -hedge pP's P (hedge.go); 0 = none
	Repeat     int
	Seed       int64
	Trials     int
	Power      bool
	PowerMode  string // crash -power-mode: prefix (the default), reorder, pages or dirent
	Points     bool   // crash -points: a power cut after every filesystem operation of a fixed workload
	FailSync   int    // crash -fail-sync N: the first fdatasync after N Puts fails; 0 when not given
	// WriteBuffer is crash -write-buffer: -1 when not given (the
	// engine's default), 0 for no buffer, else its size in bytes.
	WriteBuffer int
	TWrite      time.Duration // model: T_write given instead of probed
	TFsync      time.Duration // model: T_fsync given instead of probed
	TFixed      time.Duration // model: the replication model's T_fixed given instead of probed
	Dir         string
	Keep        bool
	Format      string
	Progress    bool
	Dishonest   dishonesty
	Methods     bool // probe -methods: the sync-primitive table

	given map[string]string // the flags given on the line, with their values as given
}

// has reports whether the line gave flag name.
func (s *Spec) has(name string) bool {
	_, ok := s.given[name]
	return ok
}

// splitLine splits a line into words, dropping a leading "labserver".
func splitLine(line string) []string {
	w := strings.Fields(line)
	if len(w) > 0 && w[0] == "labserver" {
		w = w[1:]
	}
	return w
}

// ParseSpec parses and validates one line against lim.
func ParseSpec(line string, lim Limits) (*Spec, error) {
	return parseArgs(splitLine(line), lim)
}

func parseArgs(args []string, lim Limits) (*Spec, error) {
	if len(args) == 0 {
		return nil, fmt.Errorf("empty line: expected one of %s", strings.Join(Commands, ", "))
	}
	cmd, ok := lookupCommand(args[0])
	if !ok {
		return nil, fmt.Errorf("unknown command %q%s: expected one of %s", args[0], didYouMean(args[0], Commands, ""), strings.Join(Commands, ", "))
	}
	given, err := cmd.splitFlags(args[1:])
	if err != nil {
		return nil, err
	}
	return cmd.fill(given, lim)
}

// didYouMean is " (did you mean `-ops`?)" when a name in among is one
// typo away from word (kvlab/internal/suggest), prefix before it; else "".
func didYouMean(word string, among []string, prefix string) string {
	if m := suggest.Closest(word, among); m != "" {
		return " (did you mean `" + prefix + m + "`?)"
	}
	return ""
}

// splitFlags reads a line's words after the command into each flag's
// value as given ("true" for a bool flag standing alone).
func (c *command) splitFlags(args []string) (map[string]string, error) {
	given := map[string]string{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") || a == "-" {
			return nil, fmt.Errorf("%s: unexpected argument %q: flags start with -, e.g. -ops 8000", c.name, a)
		}
		name, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		f, ok := c.lookupFlag(name)
		if !ok && (name == "archive" || name == "data") {
			return nil, fmt.Errorf("%s: -%s belongs to the labserver command line, not to a run line: a lesson cell or quiz cannot choose where its runs are recorded (the server records every run it executes); allowed:%s", c.name, name, c.flagList())
		}
		if !ok {
			return nil, fmt.Errorf("%s: unknown flag -%s%s; allowed:%s", c.name, name, didYouMean(name, c.flagNames(), "-"), c.flagList())
		}
		if _, twice := given[name]; twice {
			return nil, fmt.Errorf("-%s: given twice", name)
		}
		switch {
		case f.bool && hasVal && val != "true" && val != "false":
			return nil, fmt.Errorf("-%s=%s: must be true or false, or the flag alone", name, val)
		case f.bool && !hasVal:
			val = "true"
		case !f.bool && !hasVal:
			if i+1 >= len(args) {
				return nil, fmt.Errorf("-%s: needs a value (%s)", name, f.usage)
			}
			i++
			val = args[i]
		}
		given[name] = val
	}
	return given, nil
}

// fill builds the Spec of a line that gave the flags given: each flag of
// c, in table order, from its value or its default, then c's rules across
// flags.
func (c *command) fill(given map[string]string, lim Limits) (*Spec, error) {
	s := &Spec{Cmd: c.name, given: given}
	for _, f := range c.flags {
		v, ok := given[f.name]
		if err := f.fill(s, arg{name: f.name, v: v, given: ok}, lim); err != nil {
			return nil, err
		}
	}
	if c.check != nil {
		if err := c.check(s, lim); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// maxKeys bounds -keys: the key table is built in memory (16 bytes a key).
const maxKeys = 10_000_000

// parseThreads reads -threads: one count for bench, a list for sweep.
func (s *Spec) parseThreads(v string, lim Limits) error {
	hi := max(lim.MaxThreads, 1)
	parts := strings.Split(v, ",")
	if s.Cmd == "bench" && len(parts) > 1 {
		return fmt.Errorf("-threads %s: bench takes one count; use sweep for a list", v)
	}
	if len(parts) > 16 {
		return fmt.Errorf("-threads %s: at most 16 values", v)
	}
	for _, p := range parts {
		n, e := strconv.Atoi(p)
		if e != nil || n < 1 || n > hi {
			return fmt.Errorf("-threads %s: each count must be between 1 and %d", v, hi)
		}
		if slices.Contains(s.Threads, n) {
			return fmt.Errorf("-threads %s: %d is named twice; name each count once", v, n)
		}
		s.Threads = append(s.Threads, n)
	}
	return nil
}

// checkBytes enforces MaxTotalBytes on what a run will write.
func (s *Spec) checkBytes(lim Limits) error {
	if lim.MaxTotalBytes <= 0 {
		return nil
	}
	per := int64(keyLen+s.ValueSize) * int64(max(s.Batch, 1)) // bytes per unit
	var units int64 = s.Ops
	if s.Duration > 0 {
		units = 0 // bounded at run time by maxUnits
	}
	total := (units + s.Warmup) * per
	if wl, _ := lookupWorkload(s.Workload); wl.preload {
		total += int64(s.Keys) * int64(keyLen+s.ValueSize)
	}
	if total > lim.MaxTotalBytes {
		return fmt.Errorf("-ops %d with -value-size %d and -keys %d writes %s: must be at most %s in total",
			s.Ops, s.ValueSize, s.Keys, FormatBytes(total), FormatBytes(lim.MaxTotalBytes))
	}
	return nil
}

// maxUnits is how many units a -duration run may do before it stops
// anyway: as many as the byte cap allows (-ops caps only -ops runs; a
// -duration run is bounded by its duration).
func (s *Spec) maxUnits(lim Limits) int64 {
	if lim.MaxTotalBytes <= 0 {
		return 0 // no cap
	}
	return max(lim.MaxTotalBytes/(int64(keyLen+s.ValueSize)*int64(max(s.Batch, 1))), 1)
}

// String writes the spec back as a canonical line, every choice explicit:
// running it runs the same line again, -repeat included. (Each result's
// own "spec" leaves -repeat out: it describes one run.)
func (s *Spec) String() string {
	return s.print(runOf{strings.Join(s.Engines, ","), s.Threads}, partLine)
}

// line writes one run's line: the spec with the given engine and threads.
func (s *Spec) line(engine string, threads []int) string {
	return s.print(runOf{engine, threads}, partRun)
}

// print writes the command and its flags of every part up to last, part
// by part, each part's flags in table order.
func (s *Spec) print(r runOf, last part) string {
	var b strings.Builder
	b.WriteString(s.Cmd)
	cmd, ok := lookupCommand(s.Cmd)
	if !ok {
		return b.String() // a Spec not made by ParseSpec
	}
	for p := partRun; p <= last; p++ {
		for _, f := range cmd.flags {
			if f.part != p {
				continue
			}
			v, ok := s.given[f.name]
			if f.show != nil {
				v, ok = f.show(s, r)
			} else if f.bool {
				ok = ok && v == "true"
			}
			switch {
			case !ok:
			case f.bool:
				b.WriteString(" -" + f.name)
			default:
				fmt.Fprintf(&b, " -%s %s", f.name, v)
			}
		}
	}
	return b.String()
}

// FormatBytes prints n in B, KiB, MiB or GiB.
func FormatBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
