package harness

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"kvlab/engine"
	scripts "kvlab/workloads"
)

// The run-spec grammar as one table. Each command is one entry of
// commands: what it does and its examples (the usage text), and every
// flag it takes, each with its help line, its default, its allowed range
// and how it is printed back. Parsing (spec.go), printing (Spec.String
// and each result's "spec") and the usage text (cli.go) all read this
// table; nothing else lists a command's flags but the tests' ScaleLine
// (kvlab/harness/harnesstest), which names the size budgets it scales.
// The workloads have their own table (workload.go).

// command is one entry of the grammar.
type command struct {
	name     string
	what     string // one line, for the usage text
	examples string // the usage text's examples, one per line
	// flags are filled, checked, printed and documented in this order,
	// so a default may depend on the flags before it.
	flags []flagDef
	// check applies the rules that tie flags together once every flag is
	// filled; nil when there are none.
	check func(s *Spec, lim Limits) error
}

// flagDef is one -name that one command takes.
type flagDef struct {
	name  string
	usage string
	bool  bool // stands alone, no value
	part  part
	// fill sets the flag's Spec field from its argument (or its default,
	// when the line leaves it out) and checks it against lim.
	fill func(s *Spec, a arg, lim Limits) error
	// show is the flag's value in a printed line, and whether the line
	// has it; a bool flag that is printed stands alone. nil for partAsGiven
	// flags, which are never printed.
	show func(s *Spec, r runOf) (string, bool)
}

// part is where a flag appears when a Spec is printed.
type part int

const (
	// partRun flags say what a run did: every result's "spec" has them.
	partRun part = iota
	// partLine flags say how many runs the line makes (-repeat): the
	// whole line (Spec.String) has them after the run's flags.
	partLine
	// partAsGiven flags say where and how results are kept and shown:
	// no printed form has them; they stay as the line gave them.
	partAsGiven
)

// runOf is the engine and thread count a printed line names: one run's,
// or the whole line's comma lists.
type runOf struct {
	engine  string
	threads []int
}

// arg is one flag's argument on a line.
type arg struct {
	name  string // the flag, without its dash
	v     string // as given; "" when not given
	given bool
}

// str is the argument, or def when it was not given.
func (a arg) str(def string) string {
	if !a.given {
		return def
	}
	return a.v
}

// on is a bool flag's value.
func (a arg) on() bool { return a.v == "true" }

// int is the argument as an integer between lo and hi ("_" may group
// digits), or def when it was not given.
func (a arg) int(def, lo, hi int64) (int64, error) {
	if !a.given {
		return def, nil
	}
	n, err := strconv.ParseInt(strings.ReplaceAll(a.v, "_", ""), 10, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) && lo == math.MinInt64 && hi == math.MaxInt64 {
		return 0, fmt.Errorf("-%s %s: not a whole number, e.g. -%s 42", a.name, a.v, a.name)
	}
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, fmt.Errorf("-%s %s: not a whole number: want one between %d and %d, e.g. -%s %d", a.name, a.v, lo, hi, a.name, max(lo, min(hi, 1000)))
	}
	if err != nil || n < lo || n > hi {
		return 0, fmt.Errorf("-%s %s: must be between %d and %d", a.name, a.v, lo, hi)
	}
	return n, nil
}

// duration is the argument as a duration between lo and hi, or def when
// it was not given.
func (a arg) duration(def, lo, hi time.Duration) (time.Duration, error) {
	if !a.given {
		return def, nil
	}
	d, err := time.ParseDuration(a.v)
	if err != nil || d < lo || d > hi {
		return 0, fmt.Errorf("-%s %s: must be a duration between %v and %v, e.g. 3s or 500ms", a.name, a.v, lo, hi)
	}
	return d, nil
}

func itoa[T int | int64](n T) string { return strconv.FormatInt(int64(n), 10) }

// commands is the grammar, in the order the usage text lists it.
var commands = []command{
	{name: "bench", what: "measure one workload on one store (or several, -engine a,b)", flags: benchFlags("1"), check: checkBench, examples: `
  labserver bench -engine kv -sync always -workload fillrandom -ops 8000
  labserver bench -engine kv -sync batch:64 -workload fillrandom -ops 8000 -format json
  labserver bench -engine kv,bbolt,pebble -sync always -ops 2000
  labserver bench -engine kv -sync none -workload readrandom -keys 100000 -duration 5s -dist zipfian
  labserver bench -engine kv -sync always -workload fillbatch -batch 16 -duration 2s
  labserver bench -engine kv -sync group -threads 8 -rate 2000 -duration 3s
  labserver bench -engine kv -sync batch:64 -ops 4000 -repeat 6 -format benchstat > batch64.txt
  benchstat batch64.txt batch256.txt   (same -format benchstat lines from another run; or benchstat -col /sync all.txt)`},
	{name: "sweep", what: "run one bench per thread count: the saturation curve", flags: benchFlags("1,2,4,8"), check: checkBench, examples: `
  labserver sweep -engine kv -sync group -threads 1,2,4,8,16 -duration 3s
  labserver sweep -engine null -threads 1,2 -ops 100000`},
	{name: "probe", what: "describe this machine and measure write and write+fdatasync on the data directory", flags: probeFlags(), examples: `
  labserver probe
  labserver probe -dir /mnt/data -ops 5000 -format json
  labserver probe -methods -duration 500ms`},
	{name: "model", what: "predict batch:N or periodic:D throughput, p99 path and loss window", flags: modelFlags(), examples: `
  labserver model -sync batch:64
  labserver model -sync periodic:10ms
  labserver model -sync batch:100 -t-write 900ns -t-fsync 200us`},
	{name: "crash", what: "crash a writing store and check what recovery keeps", flags: crashFlags(), examples: `
  labserver crash -sync batch:100 -trials 20
  labserver crash -sync always -trials 10 -power
  labserver crash -sync batch:100 -trials 10 -power -power-mode pages
  labserver crash -sync batch:16 -power -power-mode reorder -points
  labserver crash -sync batch:16 -fail-sync 1000
  labserver crash -sync none -write-buffer 4096 -trials 5`},
}

// Commands lists the commands a line can start with.
var Commands = commandNames()

func commandNames() []string {
	names := make([]string, len(commands))
	for i, c := range commands {
		names[i] = c.name
	}
	return names
}

// lookupCommand returns the entry for the command named name.
func lookupCommand(name string) (*command, bool) {
	for i := range commands {
		if commands[i].name == name {
			return &commands[i], true
		}
	}
	return nil, false
}

// lookupFlag returns the flag name of c.
func (c *command) lookupFlag(name string) (flagDef, bool) {
	for _, f := range c.flags {
		if f.name == name {
			return f, true
		}
	}
	return flagDef{}, false
}

// flagNames lists the names of c's flags, without the dash.
func (c *command) flagNames() []string {
	names := make([]string, len(c.flags))
	for i, f := range c.flags {
		names[i] = f.name
	}
	return names
}

// flagList lists c's flags as "\n  -a, -b, ...", the dishonest ones
// (which only the lessons' cells that show a broken rule use) left out,
// over indented lines of at most about 72 characters.
func (c *command) flagList() string {
	var b strings.Builder
	b.WriteString("\n  ")
	col := 2
	for _, name := range c.flagNames() {
		if strings.HasPrefix(name, "dishonest-") {
			continue
		}
		if col > 2 {
			b.WriteString(",")
			col++
			if col+len(name)+2 > 72 {
				b.WriteString("\n  ")
				col = 2
			} else {
				b.WriteString(" ")
				col++
			}
		}
		b.WriteString("-" + name)
		col += len(name) + 1
	}
	return b.String()
}

// The help lines of flags that several commands take with different
// defaults: one line documents them all.
const (
	usageOps       = "units to run per run (default 1000; probe: iterations, default 2000)"
	usageDuration  = "run for this long instead of -ops, e.g. 3s (probe: at most this long per measurement, default 1s)"
	usageValueSize = "value bytes (default 128; probe: bytes per write)"
	usageSeed      = "random seed for keys, values and crash points (default 1)"
)

// The smallest budgets of a probe: below them its figures are noise.
const (
	minProbeOps      = 10
	minProbeDuration = 10 * time.Millisecond
)

// benchFlags are the flags of bench and sweep; threads is the default
// -threads.
func benchFlags(threads string) []flagDef {
	fs := []flagDef{
		engineFlag(), srcFlag(), replicatedSyncFlag(), scriptFlag(),
	}
	fs = append(fs, replicationFlags()...)
	fs = append(fs, []flagDef{
		workloadFlag(), batchFlag(), itemsFlag(), usersFlag(), indexFlag(),
		{name: "ops", usage: usageOps,
			fill: func(s *Spec, a arg, lim Limits) (err error) {
				if a.given && s.has("duration") {
					return fmt.Errorf("-ops and -duration: give one or the other, not both")
				}
				s.Ops, err = a.int(1000, 1, maxOps(lim))
				return err
			},
			show: func(s *Spec, _ runOf) (string, bool) { return itoa(s.Ops), s.Duration == 0 }},
		{name: "duration", usage: usageDuration,
			fill: func(s *Spec, a arg, lim Limits) (err error) {
				s.Duration, err = a.duration(0, time.Millisecond, lim.MaxDuration)
				if s.Duration > 0 {
					s.Ops = 0
				}
				return err
			},
			show: func(s *Spec, _ runOf) (string, bool) { return s.Duration.String(), s.Duration > 0 }},
		threadsFlag(threads),
		{name: "value-size", usage: usageValueSize,
			fill: func(s *Spec, a arg, lim Limits) error {
				n, err := a.int(128, 0, int64(lim.MaxValueSize))
				s.ValueSize = int(n)
				return err
			},
			show: func(s *Spec, _ runOf) (string, bool) { return itoa(s.ValueSize), true }},
		{name: "keys", usage: "distinct keys (default: -ops, or 100000 with -duration)",
			fill: func(s *Spec, a arg, lim Limits) error {
				def := s.Ops * int64(s.Batch) // every Put of the run a key of its own
				if s.Duration > 0 {
					def = 100000
				}
				n, err := a.int(min(def, maxKeys), 1, maxKeys)
				s.Keys = int(n)
				return err
			},
			show: func(s *Spec, _ runOf) (string, bool) { return itoa(s.Keys), s.Script == "" }},
		distFlag(),
		{name: "warmup", usage: "units run and discarded before measuring, closed loop (default 10% of -ops, at most 1000; 100 with -duration)",
			fill: func(s *Spec, a arg, lim Limits) (err error) {
				def := min(max(s.Ops/10, 1), 1000)
				if s.Duration > 0 {
					def = 100
				}
				s.Warmup, err = a.int(def, 0, maxOps(lim))
				return err
			},
			show: func(s *Spec, _ runOf) (string, bool) { return itoa(s.Warmup), s.Script == "" && !s.UntilSteady }},
	}...)
	fs = append(fs, steadyFlags()...)
	fs = append(fs, []flagDef{
		rateFlag(), arrivalsFlag(), pipelineFlag(), fanoutFlag(), hedgeFlag(), cacheFlag(),
		{name: "repeat", usage: "run N times and report each (the table adds the medians)", part: partLine,
			fill: func(s *Spec, a arg, lim Limits) error {
				n, err := a.int(1, 1, int64(max(lim.MaxRepeat, 1)))
				s.Repeat = int(n)
				return err
			},
			show: func(s *Spec, _ runOf) (string, bool) { return itoa(s.Repeat), s.Repeat > 1 }},
		seedFlag(),
		dirFlag(), keepFlag(), formatFlag(true), progressFlag(),
	}...)
	return append(fs, dishonestFlags()...)
}

func engineFlag() flagDef {
	return flagDef{name: "engine", usage: "store to measure, or a comma list to compare (default kv)",
		fill: func(s *Spec, a arg, _ Limits) error {
			s.Engines = strings.Split(a.str("kv"), ",")
			for i, e := range s.Engines {
				if _, err := lookupEngine(e); err != nil {
					return err
				}
				if slices.Contains(s.Engines[:i], e) {
					return fmt.Errorf("-engine %s: %s is named twice; name each engine once (-repeat runs one again)", a.v, e)
				}
			}
			return nil
		},
		show: func(_ *Spec, r runOf) (string, bool) { return r.engine, true }}
}

const usageSync = "sync policy: always | group | batch:N | periodic:D | none (default always)"

func syncFlag() flagDef {
	return flagDef{name: "sync", usage: usageSync,
		fill: func(s *Spec, a arg, _ Limits) error {
			s.Sync = a.str("always")
			return checkEngineSync(s.Engines, s.Sync)
		},
		show: func(s *Spec, _ runOf) (string, bool) { return s.Sync, true }}
}

func workloadFlag() flagDef {
	var names []string
	for _, wl := range workloads {
		if wl.scans {
			names = append(names, wl.name+" (ordered engines)")
		} else {
			names = append(names, wl.name)
		}
	}
	return flagDef{name: "workload", usage: strings.Join(names, " | ") + " (default fillrandom)",
		fill: func(s *Spec, a arg, _ Limits) error {
			if s.Script != "" {
				if a.given {
					return fmt.Errorf("-workload %s and -script %s: give one or the other; the script is the workload", a.v, s.Script)
				}
				s.Workload = "script"
				return nil
			}
			s.Workload = a.str("fillrandom")
			wl, ok := lookupWorkload(s.Workload)
			if !ok {
				return fmt.Errorf("-workload %s: unknown workload; allowed: %s", s.Workload, strings.Join(Workloads, ", "))
			}
			if wl.name == reopenWorkload {
				return checkReopenEngines(s.Engines)
			}
			if !wl.scans {
				return nil
			}
			for _, e := range s.Engines {
				if why, ok := Unordered(e); ok {
					return fmt.Errorf("-workload %s: engine %s cannot scan keys in order: %s; ordered engines (bbolt, pebble, sqlite) can", s.Workload, e, why)
				}
			}
			return nil
		},
		show: func(s *Spec, _ runOf) (string, bool) { return s.Workload, s.Script == "" }}
}

// batchFlag is -batch, fillbatch's Puts per unit. It comes before -ops
// and -keys, whose defaults and byte budget count Puts.
func batchFlag() flagDef {
	return flagDef{name: "batch", usage: "with -workload fillbatch: Puts per unit, each of its own key (default 16)",
		fill: func(s *Spec, a arg, _ Limits) error {
			s.Batch = 1
			if s.Script != "" {
				n, err := a.int(defaultBatch, 1, maxBatch)
				s.Batch = int(n)
				return err
			}
			if s.Workload != "fillbatch" {
				if a.given {
					return fmt.Errorf("-batch %s: applies to -workload fillbatch only (a unit of that many Puts); -workload %s does a fixed number of ops per unit", a.v, s.Workload)
				}
				return nil
			}
			n, err := a.int(defaultBatch, 1, maxBatch)
			s.Batch = int(n)
			return err
		},
		show: func(s *Spec, _ runOf) (string, bool) {
			return itoa(s.Batch), s.Workload == "fillbatch" || s.Script != ""
		}}
}

// scriptFlag is -script: the workload is a Lua script (script.go). It
// comes before -workload and -batch, which read it.
func scriptFlag() flagDef {
	return flagDef{name: "script", usage: "a workload script instead of -workload: a shipped one (" + strings.Join(scripts.Names(), ", ") + "), mine (the script a page sends with the run) or, on the command line, FILE.lua",
		fill: func(s *Spec, a arg, _ Limits) error {
			s.Script = a.str("")
			switch {
			case !a.given:
				return nil
			case s.Cmd != "bench":
				return fmt.Errorf("-script %s: bench only; a script varies a parameter of its own with its sweep field", s.Script)
			case strings.HasSuffix(s.Script, ".lua"), s.Script == ScriptMine:
				return nil
			}
			if _, ok := scripts.Lookup(s.Script); !ok {
				return fmt.Errorf("-script %s: no shipped script of that name, and not a .lua file; shipped: %s", s.Script, strings.Join(scripts.Names(), ", "))
			}
			return nil
		},
		show: func(s *Spec, _ runOf) (string, bool) { return s.Script, s.Script != "" }}
}

// scriptOnly is the error for a -script flag given without -script.
func scriptOnly(name, v string) error {
	return fmt.Errorf("-%s %s: applies to -script runs only (ctx.%s of the script)", name, v, name)
}

func itemsFlag() flagDef {
	return flagDef{name: "items", usage: "with -script: ctx.items, the script's key count (default 10000)",
		fill: func(s *Spec, a arg, _ Limits) error {
			if s.Script == "" && a.given {
				return scriptOnly("items", a.v)
			}
			n, err := a.int(10000, 1, maxKeys)
			s.Items = int(n)
			return err
		},
		show: func(s *Spec, _ runOf) (string, bool) { return itoa(s.Items), s.Script != "" }}
}

func usersFlag() flagDef {
	return flagDef{name: "users", usage: "with -script: ctx.users (default 100)",
		fill: func(s *Spec, a arg, _ Limits) error {
			if s.Script == "" && a.given {
				return scriptOnly("users", a.v)
			}
			n, err := a.int(100, 1, 1_000_000)
			s.Users = int(n)
			return err
		},
		show: func(s *Spec, _ runOf) (string, bool) { return itoa(s.Users), s.Script != "" }}
}

func indexFlag() flagDef {
	return flagDef{name: "index", usage: "with -script on kv: hash | ordered (default hash; ordered serves kv.range and kv.scan)",
		fill: func(s *Spec, a arg, _ Limits) error {
			s.Index = a.str("hash")
			if s.Script == "" && a.given {
				return fmt.Errorf("-index %s: applies to -script runs only", a.v)
			}
			if _, err := engine.ParseIndex(s.Index); err != nil {
				return fmt.Errorf("-index %s: allowed: hash, ordered", a.v)
			}
			if a.given && !slices.Contains(s.Engines, "kv") {
				return fmt.Errorf("-index %s: applies to -engine kv only; the other engines keep their own index", a.v)
			}
			return nil
		},
		show: func(s *Spec, _ runOf) (string, bool) { return s.Index, s.Script != "" && s.Index != "hash" }}
}

func threadsFlag(def string) flagDef {
	return flagDef{name: "threads", usage: "concurrent clients (sweep: a comma list, default 1,2,4,8)",
		fill: func(s *Spec, a arg, lim Limits) error { return s.parseThreads(a.str(def), lim) },
		show: func(_ *Spec, r runOf) (string, bool) {
			ts := make([]string, len(r.threads))
			for i, t := range r.threads {
				ts[i] = itoa(t)
			}
			return strings.Join(ts, ","), true
		}}
}

func distFlag() flagDef {
	return flagDef{name: "dist", usage: "key distribution: " + strings.Join(Dists, " | ") + " (default uniform)",
		fill: func(s *Spec, a arg, _ Limits) error {
			s.Dist = a.str("uniform")
			if !slices.Contains(Dists, s.Dist) {
				return fmt.Errorf("-dist %s: unknown distribution; allowed: %s", s.Dist, strings.Join(Dists, ", "))
			}
			return nil
		},
		show: func(s *Spec, _ runOf) (string, bool) { return s.Dist, s.Script == "" }}
}

func rateFlag() flagDef {
	return flagDef{name: "rate", usage: "open loop: start units at this many per second; latency from the intended start",
		fill: func(s *Spec, a arg, _ Limits) error {
			if !a.given {
				return nil
			}
			r, err := strconv.ParseFloat(a.v, 64)
			if err != nil || !(r >= 1 && r <= 1e7) {
				return fmt.Errorf("-rate %s: must be between 1 and 10000000 units per second", a.v)
			}
			s.Rate = r
			return nil
		},
		show: func(s *Spec, _ runOf) (string, bool) { return strconv.FormatFloat(s.Rate, 'g', -1, 64), s.Rate > 0 }}
}

// ArrivalModes are the -arrivals values: how an open loop spaces its units.
var ArrivalModes = []string{"even", "poisson"}

func arrivalsFlag() flagDef {
	return flagDef{name: "arrivals", usage: "open loop (-rate): even (one unit every 1/rate, the default) | poisson (exponential gaps with mean 1/rate, as M/M/1 assumes)",
		fill: func(s *Spec, a arg, _ Limits) error {
			s.Arrivals = a.str("even")
			if !slices.Contains(ArrivalModes, s.Arrivals) {
				return fmt.Errorf("-arrivals %s: unknown; allowed: %s", s.Arrivals, strings.Join(ArrivalModes, ", "))
			}
			if a.given && s.Rate == 0 {
				return fmt.Errorf("-arrivals %s: spaces an open loop's units; give -rate too", s.Arrivals)
			}
			return nil
		},
		show: func(s *Spec, _ runOf) (string, bool) { return s.Arrivals, s.Arrivals == "poisson" }}
}

func cacheFlag() flagDef {
	return flagDef{name: "cache", usage: "page cache at the start of the timed region: warm | cold (cold evicts the store's files first; workloads that read a preloaded store; default warm)",
		fill: func(s *Spec, a arg, _ Limits) error {
			s.Cache = a.str("warm")
			if !slices.Contains(CacheModes, s.Cache) {
				return fmt.Errorf("-cache %s: unknown; allowed: %s", s.Cache, strings.Join(CacheModes, ", "))
			}
			if wl, _ := lookupWorkload(s.Workload); s.Cache == "cold" && !wl.preload {
				return fmt.Errorf("-cache cold: -workload %s reads nothing written before the timed region, so there is no cache to empty; cold applies to workloads on a preloaded store: %s", s.Workload, strings.Join(preloadWorkloads(), ", "))
			}
			return nil
		},
		show: func(s *Spec, _ runOf) (string, bool) { return s.Cache, s.Cache == "cold" }}
}

// preloadWorkloads names the workloads that run on a preloaded store.
func preloadWorkloads() []string {
	var names []string
	for _, wl := range workloads {
		if wl.preload {
			names = append(names, wl.name)
		}
	}
	return names
}

func seedFlag() flagDef {
	return flagDef{name: "seed", usage: usageSeed,
		fill: func(s *Spec, a arg, _ Limits) (err error) {
			s.Seed, err = a.int(1, math.MinInt64, math.MaxInt64)
			return err
		},
		show: func(s *Spec, _ runOf) (string, bool) { return itoa(s.Seed), s.has("seed") }}
}

func dirFlag() flagDef {
	return flagDef{name: "dir", usage: "parent of the fresh per-run directory (default: a temporary directory)", part: partAsGiven,
		fill: func(s *Spec, a arg, _ Limits) error { s.Dir = a.str(""); return nil }}
}

func keepFlag() flagDef {
	return flagDef{name: "keep", bool: true, usage: "keep the per-run directory instead of removing it", part: partAsGiven,
		fill: func(s *Spec, a arg, _ Limits) error { s.Keep = a.on(); return nil }}
}

func progressFlag() flagDef {
	return flagDef{name: "progress", bool: true, usage: "print a progress line to stderr every second even when it is not a terminal", part: partAsGiven,
		fill: func(s *Spec, a arg, _ Limits) error { s.Progress = a.on(); return nil }}
}

// formatFlag is -format; benchstat says whether the command prints
// benchmark lines.
func formatFlag(benchstat bool) flagDef {
	return flagDef{name: "format", usage: "table | tsv | json | benchstat | timeline (default table; timeline: one TSV row per second of each run)", part: partAsGiven,
		fill: func(s *Spec, a arg, _ Limits) error {
			s.Format = a.str("table")
			switch s.Format {
			case "table", "tsv", "json":
			case "benchstat", "timeline":
				if !benchstat {
					return fmt.Errorf("-format %s: only bench and sweep lines have runs to print so; allowed for %s: table, tsv, json", s.Format, s.Cmd)
				}
			default:
				return fmt.Errorf("-format %s: allowed: table, tsv, json, benchstat, timeline", s.Format)
			}
			return nil
		}}
}

// steadyFlags are -until-steady, -max-warmup and -steady-tolerance
// (steady.go). They come after -warmup, which -until-steady replaces.
func steadyFlags() []flagDef {
	return []flagDef{
		{name: "until-steady", bool: true, usage: fmt.Sprintf("warm up until steady state instead of -warmup units: throughput over the last %d seconds within -steady-tolerance and the engine's compaction debt (pebble: and L0 files) zero or flat; then measure", SteadyWindow),
			fill: func(s *Spec, a arg, _ Limits) error {
				s.UntilSteady = a.on()
				switch {
				case !s.UntilSteady:
					return nil
				case s.has("warmup"):
					return fmt.Errorf("-until-steady and -warmup %s: give one or the other; -until-steady warms up until steady state instead of a number of units", s.given["warmup"])
				case s.has("dishonest-no-warmup"):
					return fmt.Errorf("-until-steady and -dishonest-no-warmup: give one or the other")
				}
				s.Warmup = 0
				return nil
			},
			show: func(s *Spec, _ runOf) (string, bool) { return "", s.UntilSteady }},
		{name: "max-warmup", usage: fmt.Sprintf("with -until-steady: the longest warm-up; the result says steady state was not reached if it runs out (default %v)", DefaultMaxWarmup),
			fill: func(s *Spec, a arg, lim Limits) (err error) {
				if a.given && !s.UntilSteady {
					return fmt.Errorf("-max-warmup %s: applies with -until-steady only", a.v)
				}
				s.MaxWarmup, err = a.duration(min(DefaultMaxWarmup, lim.MaxDuration), 100*time.Millisecond, lim.MaxDuration)
				return err
			},
			show: func(s *Spec, _ runOf) (string, bool) { return s.MaxWarmup.String(), s.UntilSteady }},
		{name: "steady-tolerance", usage: fmt.Sprintf("with -until-steady: the largest spread, (max-min)/mean in percent, of throughput and of compaction debt over the window (default %g)", DefaultSteadyTolerance),
			fill: func(s *Spec, a arg, _ Limits) error {
				if a.given && !s.UntilSteady {
					return fmt.Errorf("-steady-tolerance %s: applies with -until-steady only", a.v)
				}
				s.SteadyTolerance = DefaultSteadyTolerance
				if !a.given {
					return nil
				}
				v, err := strconv.ParseFloat(strings.TrimSuffix(a.v, "%"), 64)
				if err != nil || v < 0.1 || v > 50 {
					return fmt.Errorf("-steady-tolerance %s: must be a percentage between 0.1 and 50, e.g. -steady-tolerance 5", a.v)
				}
				s.SteadyTolerance = v
				return nil
			},
			show: func(s *Spec, _ runOf) (string, bool) {
				return strconv.FormatFloat(s.SteadyTolerance, 'g', -1, 64), s.UntilSteady
			}},
	}
}

// dishonestFlags are the rule breaks the lessons show, each a bool flag.
func dishonestFlags() []flagDef {
	rules := []struct {
		name, usage string
		field       func(*dishonesty) *bool
	}{
		{"throughput-from-samples", "ops/s from the sum of latencies, not the wall clock", func(d *dishonesty) *bool { return &d.throughputFromSamples }},
		{"no-warmup", "measure from the very first op", func(d *dishonesty) *bool { return &d.noWarmup }},
		{"time-keygen", "build each key and value inside the timed region", func(d *dishonesty) *bool { return &d.timeKeygen }},
		{"unsorted-percentile", "pick percentiles without sorting the samples", func(d *dishonesty) *bool { return &d.unsortedPercentile }},
	}
	fs := make([]flagDef, len(rules))
	for i, r := range rules {
		fs[i] = flagDef{name: "dishonest-" + r.name, bool: true, usage: "BREAKS A RULE: " + r.usage,
			fill: func(s *Spec, a arg, _ Limits) error { *r.field(&s.Dishonest) = a.on(); return nil },
			show: func(s *Spec, _ runOf) (string, bool) { return "", *r.field(&s.Dishonest) }}
	}
	return fs
}

// checkBench is bench's and sweep's rule across flags: what a run writes
// must fit in MaxTotalBytes.
func checkBench(s *Spec, lim Limits) error {
	if s.Script != "" {
		// The flags of the built-in workloads say nothing to a script,
		// which draws its own keys and paces itself.
		for _, f := range []string{"keys", "dist", "warmup", "until-steady", "rate", "pipeline", "fanout", "hedge", "cache", "src"} {
			if s.has(f) {
				return fmt.Errorf("-%s: does not apply to -script runs (the script chooses its keys and pacing; its ctx has items, users, batch, valuebytes, ops, seed, thread, threads)", f)
			}
		}
		// A script's bytes are its own: bounded at run time by the
		// line's byte limit (script.Limits.Bytes).
		return nil
	}
	if s.Workload == reopenWorkload {
		if err := checkReopenFlags(s); err != nil {
			return err
		}
	}
	return s.checkBytes(lim)
}

func probeFlags() []flagDef {
	return []flagDef{
		{name: "ops", usage: usageOps,
			fill: func(s *Spec, a arg, lim Limits) (err error) {
				s.Ops, err = a.int(2000, minProbeOps, min(maxOps(lim), 1000000))
				return err
			},
			show: func(s *Spec, _ runOf) (string, bool) { return itoa(s.Ops), true }},
		{name: "duration", usage: usageDuration,
			fill: func(s *Spec, a arg, lim Limits) (err error) {
				s.Duration, err = a.duration(time.Second, minProbeDuration, min(lim.MaxDuration, time.Minute))
				return err
			},
			show: func(s *Spec, _ runOf) (string, bool) { return s.Duration.String(), true }},
		{name: "value-size", usage: usageValueSize,
			fill: func(s *Spec, a arg, lim Limits) error {
				n, err := a.int(128, 1, int64(min(lim.MaxValueSize, 1<<20)))
				s.ValueSize = int(n)
				return err
			},
			show: func(s *Spec, _ runOf) (string, bool) { return itoa(s.ValueSize), true }},
		{name: "methods", bool: true, usage: "also time each way of making a write durable (write+fdatasync, write+fsync, O_DSYNC, O_DIRECT|O_DSYNC; F_FULLFSYNC on macOS), appending and overwriting, at 128 B and 8 KiB",
			fill: func(s *Spec, a arg, _ Limits) error { s.Methods = a.on(); return nil },
			show: func(s *Spec, _ runOf) (string, bool) { return "", s.Methods }},
		dirFlag(), formatFlag(false),
	}
}

func modelFlags() []flagDef {
	return append(modelReplicationFlags(), []flagDef{
		{name: "sync", usage: usageSync + "; with the replication model, the engine's (default always)",
			fill: func(s *Spec, a arg, _ Limits) error {
				if isReplicationModel(s) {
					s.Sync = a.str("always")
					for _, rm := range replicatedModels {
						if slices.Contains(s.Engines, rm.name) && !slices.Contains(rm.syncs, s.Sync) {
							return fmt.Errorf("-sync %s: -engine %s takes %s", s.Sync, rm.name, strings.Join(rm.syncs, ", "))
						}
					}
					return nil
				}
				if !a.given {
					return fmt.Errorf("model: -sync is required: batch:N or periodic:D, e.g. model -sync batch:64")
				}
				s.Sync = a.v
				p, err := parseSync(s.Sync)
				if err != nil {
					return err
				}
				if p.Mode != engine.SyncBatch && p.Mode != engine.SyncPeriodic {
					return fmt.Errorf("-sync %s: the model covers batch:N and periodic:D only", s.Sync)
				}
				return nil
			},
			show: func(s *Spec, _ runOf) (string, bool) { return s.Sync, true }},
		{name: "t-write", usage: "mean cost of one Put outside the flush, e.g. 900ns (default: a short kv run on the disk)",
			fill: func(s *Spec, a arg, _ Limits) (err error) {
				s.TWrite, err = a.duration(0, time.Nanosecond, time.Second)
				return err
			},
			show: func(s *Spec, _ runOf) (string, bool) { return s.TWrite.String(), s.TWrite > 0 }},
		{name: "t-fsync", usage: "cost of one fdatasync, e.g. 200us (default: probe the disk, writing into allocated space as kv does)",
			fill: func(s *Spec, a arg, _ Limits) (err error) {
				s.TFsync, err = a.duration(0, 0, 10*time.Second)
				return err
			},
			show: func(s *Spec, _ runOf) (string, bool) { return s.TFsync.String(), s.has("t-fsync") }},
		dirFlag(), formatFlag(false),
	}...)
}

func crashFlags() []flagDef {
	return []flagDef{
		syncFlag(),
		{name: "trials", usage: "crash trials (default 10)",
			fill: func(s *Spec, a arg, lim Limits) error {
				n, err := a.int(10, 1, int64(max(lim.MaxTrials, 1)))
				s.Trials = int(n)
				return err
			},
			show: func(s *Spec, _ runOf) (string, bool) { return itoa(s.Trials), !s.Points && s.FailSync == 0 }},
		{name: "power", bool: true, usage: "simulate power loss on the crashable in-memory filesystem instead of SIGKILL",
			fill: func(s *Spec, a arg, _ Limits) error { s.Power = a.on(); return nil },
			show: func(s *Spec, _ runOf) (string, bool) { return "", s.Power }},
		{name: "power-mode", usage: "with -power, what the cut keeps of unsynced data: prefix (in order, torn at a byte; default) | reorder (any subset of 512 B sectors) | pages (any subset of 4 KiB pages) | dirent (new file names persist without their data)",
			fill: func(s *Spec, a arg, _ Limits) error {
				s.PowerMode = a.str("prefix")
				if _, err := engine.ParsePowerMode(s.PowerMode); err != nil {
					return fmt.Errorf("-power-mode %s: allowed: %s", s.PowerMode, engine.PowerModes)
				}
				if a.given && !s.Power {
					return fmt.Errorf("-power-mode %s: needs -power (a SIGKILL keeps everything the process wrote, so there is nothing for a mode to choose)", s.PowerMode)
				}
				return nil
			},
			show: func(s *Spec, _ runOf) (string, bool) { return s.PowerMode, s.has("power-mode") }},
		{name: "points", bool: true, usage: "with -power, instead of -trials: cut the power once after each filesystem operation of a fixed workload (120 writes, 4 KiB segments, compactions), checking every point",
			fill: func(s *Spec, a arg, _ Limits) error {
				s.Points = a.on()
				switch {
				case s.Points && !s.Power:
					return fmt.Errorf("-points: needs -power (each crash point is a simulated power cut on the in-memory filesystem)")
				case s.Points && s.has("trials"):
					return fmt.Errorf("-points and -trials: give one or the other (-points crashes once after every filesystem operation of its fixed workload, -trials at random moments)")
				}
				return nil
			},
			show: func(s *Spec, _ runOf) (string, bool) { return "", s.Points }},
		{name: "fail-sync", usage: "instead of crashing: fail the first fdatasync after N acknowledged Puts with EIO, try 10 more Puts, reopen; on the in-memory filesystem that marks the failed pages clean, as Linux does",
			fill: func(s *Spec, a arg, _ Limits) error {
				n, err := a.int(0, 1, maxSyncFailAfter)
				s.FailSync = int(n)
				switch {
				case err != nil:
					return err
				case a.given && (s.Power || s.has("trials")):
					return fmt.Errorf("-fail-sync %s: runs one store to one failed fdatasync and a reopen, on the in-memory filesystem; -power, -power-mode, -points and -trials do not apply", a.v)
				}
				return nil
			},
			show: func(s *Spec, _ runOf) (string, bool) { return itoa(s.FailSync), s.FailSync > 0 }},
		{name: "write-buffer", usage: "the store's write buffer in bytes under none, batch:N and periodic:D, 0 = none (default: the engine's, 65536)",
			fill: func(s *Spec, a arg, _ Limits) error {
				n, err := a.int(-1, 0, engine.MaxWriteBuffer)
				s.WriteBuffer = int(n)
				return err
			},
			show: func(s *Spec, _ runOf) (string, bool) { return itoa(s.WriteBuffer), s.has("write-buffer") }},
		seedFlag(),
		dirFlag(), keepFlag(), formatFlag(false), progressFlag(),
	}
}

// maxOps is the largest -ops the limits allow.
func maxOps(lim Limits) int64 { return max(lim.MaxOps, 1) }
