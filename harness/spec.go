package harness

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"kvlab/engine"
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

// Commands lists the commands a line can start with.
var Commands = []string{"bench", "sweep", "probe", "model", "crash"}

// Spec is one parsed and validated line.
type Spec struct {
	Cmd       string
	Engines   []string // bench, sweep: one run per engine
	Sync      string
	Workload  string
	Dist      string
	Ops       int64         // bench/sweep: units; probe: iterations
	Duration  time.Duration // instead of Ops
	Threads   []int         // bench: one value; sweep: the list
	ValueSize int
	Keys      int
	Warmup    int64
	Rate      float64
	Repeat    int
	Seed      int64
	Trials    int
	Power     bool
	PowerMode string // crash -power-mode: prefix (the default), reorder, pages or dirent
	// WriteBuffer is crash -write-buffer: -1 when not given (the
	// engine's default), 0 for no buffer, else its size in bytes.
	WriteBuffer int
	TWrite      time.Duration // model: T_write given instead of probed
	TFsync      time.Duration // model: T_fsync given instead of probed
	Dir         string
	Keep        bool
	Format      string
	Progress    bool
	Dishonest   dishonesty

	set map[string]bool // flags given on the line
}

// flagDef describes one flag: which commands take it and its usage line.
type flagDef struct {
	name  string
	cmds  string // space-separated commands that accept it
	bool  bool   // stands alone, no value
	usage string
}

var flagDefs = []flagDef{
	{name: "engine", cmds: "bench sweep", usage: "store to measure, or a comma list to compare (default kv)"},
	{name: "sync", cmds: "bench sweep model crash", usage: "sync policy: always | group | batch:N | periodic:D | none (default always)"},
	{name: "workload", cmds: "bench sweep", usage: "fillseq | fillrandom | overwrite | readrandom | readwhilewriting | updaterandom | deleterandom | mixed | seekrandom (ordered engines) (default fillrandom)"},
	{name: "ops", cmds: "bench sweep probe", usage: "units to run per run (default 1000; probe: iterations, default 2000)"},
	{name: "duration", cmds: "bench sweep probe", usage: "run for this long instead of -ops, e.g. 3s (probe: at most this long per measurement, default 1s)"},
	{name: "threads", cmds: "bench sweep", usage: "concurrent clients (sweep: a comma list, default 1,2,4,8)"},
	{name: "value-size", cmds: "bench sweep probe", usage: "value bytes (default 128; probe: bytes per write)"},
	{name: "keys", cmds: "bench sweep", usage: "distinct keys (default: -ops, or 100000 with -duration)"},
	{name: "dist", cmds: "bench sweep", usage: "key distribution: uniform | zipfian (default uniform)"},
	{name: "warmup", cmds: "bench sweep", usage: "units run and discarded before measuring, closed loop (default 10% of -ops, at most 1000; 100 with -duration)"},
	{name: "rate", cmds: "bench sweep", usage: "open loop: start units at this many per second; latency from the intended start"},
	{name: "repeat", cmds: "bench sweep", usage: "run N times and report each (the table adds the medians)"},
	{name: "seed", cmds: "bench sweep crash", usage: "random seed for keys, values and crash points (default 1)"},
	{name: "trials", cmds: "crash", usage: "crash trials (default 10)"},
	{name: "power", cmds: "crash", bool: true, usage: "simulate power loss on the crashable in-memory filesystem instead of SIGKILL"},
	{name: "write-buffer", cmds: "crash", usage: "the store's write buffer in bytes under none, batch:N and periodic:D, 0 = none (default: the engine's, 65536)"},
	{name: "power-mode", cmds: "crash", usage: "with -power, what the cut keeps of unsynced data: prefix (in order, torn at a byte; default) | reorder (any subset of 512 B sectors) | pages (any subset of 4 KiB pages) | dirent (new file names persist without their data)"},
	{name: "t-write", cmds: "model", usage: "cost of one write, e.g. 900ns (default: probe the disk)"},
	{name: "t-fsync", cmds: "model", usage: "cost of one fdatasync, e.g. 200us (default: probe the disk)"},
	{name: "dir", cmds: "bench sweep probe model crash", usage: "parent of the fresh per-run directory (default: a temporary directory)"},
	{name: "keep", cmds: "bench sweep crash", bool: true, usage: "keep the per-run directory instead of removing it"},
	{name: "format", cmds: "bench sweep probe model crash", usage: "table | tsv | json | benchstat (default table)"},
	{name: "progress", cmds: "bench sweep crash", bool: true, usage: "print a progress line to stderr every second even when it is not a terminal"},
	{name: "dishonest-throughput-from-samples", cmds: "bench sweep", bool: true, usage: "BREAKS A RULE: ops/s from the sum of latencies, not the wall clock"},
	{name: "dishonest-no-warmup", cmds: "bench sweep", bool: true, usage: "BREAKS A RULE: measure from the very first op"},
	{name: "dishonest-time-keygen", cmds: "bench sweep", bool: true, usage: "BREAKS A RULE: build each key and value inside the timed region"},
	{name: "dishonest-unsorted-percentile", cmds: "bench sweep", bool: true, usage: "BREAKS A RULE: pick percentiles without sorting the samples"},
}

func lookupFlag(cmd, name string) (flagDef, bool) {
	for _, f := range flagDefs {
		if f.name == name && strings.Contains(" "+f.cmds+" ", " "+cmd+" ") {
			return f, true
		}
	}
	return flagDef{}, false
}

// flagsOf lists the flags cmd accepts, as "-a, -b, ...".
func flagsOf(cmd string) string {
	var names []string
	for _, f := range flagDefs {
		if strings.Contains(" "+f.cmds+" ", " "+cmd+" ") {
			names = append(names, "-"+f.name)
		}
	}
	return strings.Join(names, ", ")
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
	s := &Spec{Cmd: args[0], set: map[string]bool{}}
	switch s.Cmd {
	case "bench", "sweep", "probe", "model", "crash":
	default:
		return nil, fmt.Errorf("unknown command %q: expected one of %s", s.Cmd, strings.Join(Commands, ", "))
	}
	raw := map[string]string{}
	for i := 1; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") || a == "-" {
			return nil, fmt.Errorf("%s: unexpected argument %q: flags start with -, e.g. -ops 8000", s.Cmd, a)
		}
		name, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		f, ok := lookupFlag(s.Cmd, name)
		if !ok && (name == "archive" || name == "data") {
			return nil, fmt.Errorf("%s: -%s belongs to the labserver command line, not to a run line: a lesson cell or quiz cannot choose where its runs are recorded (the server records every run it executes); allowed: %s", s.Cmd, name, flagsOf(s.Cmd))
		}
		if !ok {
			return nil, fmt.Errorf("%s: unknown flag -%s; allowed: %s", s.Cmd, name, flagsOf(s.Cmd))
		}
		if s.set[name] {
			return nil, fmt.Errorf("-%s: given twice", name)
		}
		if f.bool {
			if hasVal && val != "true" && val != "false" {
				return nil, fmt.Errorf("-%s=%s: must be true or false, or the flag alone", name, val)
			}
			if !hasVal {
				val = "true"
			}
		} else if !hasVal {
			if i+1 >= len(args) {
				return nil, fmt.Errorf("-%s: needs a value (%s)", name, f.usage)
			}
			i++
			val = args[i]
		}
		s.set[name] = true
		raw[name] = val
	}
	if err := s.fill(raw, lim); err != nil {
		return nil, err
	}
	return s, nil
}

// fill applies defaults, converts the raw values and checks every range.
func (s *Spec) fill(raw map[string]string, lim Limits) error {
	var err error
	str := func(name, def string) string {
		if v, ok := raw[name]; ok {
			return v
		}
		return def
	}
	boolean := func(name string) bool { return raw[name] == "true" }

	// Integers and durations, each with its allowed range.
	intFlag := func(name string, def, lo, hi int64) int64 {
		v, ok := raw[name]
		if !ok || err != nil {
			return def
		}
		n, e := strconv.ParseInt(strings.ReplaceAll(v, "_", ""), 10, 64)
		if e != nil || n < lo || n > hi {
			err = fmt.Errorf("-%s %s: must be between %d and %d", name, v, lo, hi)
		}
		return n
	}
	durFlag := func(name string, def, lo, hi time.Duration) time.Duration {
		v, ok := raw[name]
		if !ok || err != nil {
			return def
		}
		d, e := time.ParseDuration(v)
		if e != nil || d < lo || d > hi {
			err = fmt.Errorf("-%s %s: must be a duration between %v and %v, e.g. 3s or 500ms", name, v, lo, hi)
		}
		return d
	}

	s.Format = str("format", "table")
	switch s.Format {
	case "table", "tsv", "json", "benchstat":
	default:
		return fmt.Errorf("-format %s: allowed: table, tsv, json, benchstat", s.Format)
	}
	if s.Format == "benchstat" && s.Cmd != "bench" && s.Cmd != "sweep" {
		return fmt.Errorf("-format benchstat: only bench and sweep print benchmark lines; allowed for %s: table, tsv, json", s.Cmd)
	}
	s.Dir = str("dir", "")
	s.Keep = boolean("keep")
	s.Progress = boolean("progress")
	s.Sync = str("sync", "always")
	if s.set["sync"] || s.Cmd != "probe" {
		if _, e := parseSync(s.Sync); e != nil {
			return e
		}
	}
	maxOps := max(lim.MaxOps, 1)

	switch s.Cmd {
	case "bench", "sweep":
		s.Engines = strings.Split(str("engine", "kv"), ",")
		for i, e := range s.Engines {
			if _, e2 := lookupEngine(e); e2 != nil {
				return e2
			}
			if slices.Contains(s.Engines[:i], e) {
				return fmt.Errorf("-engine %s: %s is named twice; name each engine once (-repeat runs one again)", str("engine", ""), e)
			}
		}
		s.Workload = str("workload", "fillrandom")
		s.Dist = str("dist", "uniform")
		if e := checkWorkload(s.Workload, s.Dist); e != nil {
			return e
		}
		if wl, _ := lookupWorkload(s.Workload); wl.scans {
			for _, e := range s.Engines {
				if why, ok := unordered[e]; ok {
					return fmt.Errorf("-workload %s: engine %s cannot scan keys in order: %s; ordered engines (bbolt, pebble) can", s.Workload, e, why)
				}
			}
		}
		if s.set["ops"] && s.set["duration"] {
			return fmt.Errorf("-ops and -duration: give one or the other, not both")
		}
		s.Ops = intFlag("ops", 1000, 1, maxOps)
		s.Duration = durFlag("duration", 0, time.Millisecond, lim.MaxDuration)
		if s.Duration > 0 {
			s.Ops = 0
		}
		s.ValueSize = int(intFlag("value-size", 128, 0, int64(lim.MaxValueSize)))
		keysDef := s.Ops
		if s.Duration > 0 {
			keysDef = 100000
		}
		s.Keys = int(intFlag("keys", min(keysDef, maxKeys), 1, maxKeys))
		s.Warmup = intFlag("warmup", min(max(s.Ops/10, 1), 1000), 0, maxOps)
		if s.Duration > 0 && !s.set["warmup"] {
			s.Warmup = 100
		}
		s.Repeat = int(intFlag("repeat", 1, 1, int64(max(lim.MaxRepeat, 1))))
		s.Seed = intFlag("seed", 1, math.MinInt64, math.MaxInt64)
		if v, ok := raw["rate"]; ok && err == nil {
			r, e := strconv.ParseFloat(v, 64)
			if e != nil || !(r >= 1 && r <= 1e7) {
				return fmt.Errorf("-rate %s: must be between 1 and 10000000 units per second", v)
			}
			s.Rate = r
		}
		if err != nil {
			return err
		}
		if err := s.parseThreads(str("threads", map[string]string{"bench": "1", "sweep": "1,2,4,8"}[s.Cmd]), lim); err != nil {
			return err
		}
		s.Dishonest = dishonesty{
			throughputFromSamples: boolean("dishonest-throughput-from-samples"),
			noWarmup:              boolean("dishonest-no-warmup"),
			timeKeygen:            boolean("dishonest-time-keygen"),
			unsortedPercentile:    boolean("dishonest-unsorted-percentile"),
		}
		if e := s.checkBytes(lim); e != nil {
			return e
		}
	case "probe":
		s.Ops = intFlag("ops", 2000, 10, min(maxOps, 1000000))
		s.Duration = durFlag("duration", time.Second, 10*time.Millisecond, min(lim.MaxDuration, time.Minute))
		s.ValueSize = int(intFlag("value-size", 128, 1, int64(min(lim.MaxValueSize, 1<<20))))
	case "model":
		if !s.set["sync"] {
			return fmt.Errorf("model: -sync is required: batch:N or periodic:D, e.g. model -sync batch:64")
		}
		if p, _ := parseSync(s.Sync); p.Mode != engine.SyncBatch && p.Mode != engine.SyncPeriodic {
			return fmt.Errorf("-sync %s: the model covers batch:N and periodic:D only", s.Sync)
		}
		s.TWrite = durFlag("t-write", 0, time.Nanosecond, time.Second)
		s.TFsync = durFlag("t-fsync", 0, 0, 10*time.Second)
	case "crash":
		s.Trials = int(intFlag("trials", 10, 1, int64(max(lim.MaxTrials, 1))))
		s.Seed = intFlag("seed", 1, math.MinInt64, math.MaxInt64)
		s.Power = boolean("power")
		s.PowerMode = str("power-mode", "prefix")
		s.WriteBuffer = int(intFlag("write-buffer", -1, 0, engine.MaxWriteBuffer))
		if _, e := engine.ParsePowerMode(s.PowerMode); e != nil && err == nil {
			return fmt.Errorf("-power-mode %s: allowed: %s", s.PowerMode, engine.PowerModes)
		}
		if s.set["power-mode"] && !s.Power && err == nil {
			return fmt.Errorf("-power-mode %s: needs -power (a SIGKILL keeps everything the process wrote, so there is nothing for a mode to choose)", s.PowerMode)
		}
	}
	return err
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
	per := int64(keyLen + s.ValueSize)
	var units int64 = s.Ops
	if s.Duration > 0 {
		units = 0 // bounded at run time by maxUnits
	}
	total := (units + s.Warmup) * per
	if wl, _ := lookupWorkload(s.Workload); wl.preload {
		total += int64(s.Keys) * per
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
	return max(lim.MaxTotalBytes/int64(keyLen+s.ValueSize), 1)
}

// String writes the spec back as a canonical line, every choice explicit:
// running it runs the same line again, -repeat included. (Each result's
// own "spec" leaves -repeat out: it describes one run.)
func (s *Spec) String() string {
	line := s.line(strings.Join(s.Engines, ","), s.Threads)
	if s.Repeat > 1 {
		line += " -repeat " + strconv.Itoa(s.Repeat)
	}
	return line
}

// line writes the spec with the given engine and threads.
func (s *Spec) line(engine string, threads []int) string {
	var b strings.Builder
	b.WriteString(s.Cmd)
	add := func(f string, v any) { fmt.Fprintf(&b, " -%s %v", f, v) }
	flag := func(f string, on bool) {
		if on {
			b.WriteString(" -" + f)
		}
	}
	switch s.Cmd {
	case "bench", "sweep":
		add("engine", engine)
		add("sync", s.Sync)
		add("workload", s.Workload)
		if s.Duration > 0 {
			add("duration", s.Duration)
		} else {
			add("ops", s.Ops)
		}
		ts := make([]string, len(threads))
		for i, t := range threads {
			ts[i] = strconv.Itoa(t)
		}
		add("threads", strings.Join(ts, ","))
		add("value-size", s.ValueSize)
		add("keys", s.Keys)
		add("dist", s.Dist)
		add("warmup", s.Warmup)
		if s.Rate > 0 {
			add("rate", strconv.FormatFloat(s.Rate, 'g', -1, 64))
		}
		if s.set["seed"] {
			add("seed", s.Seed)
		}
		flag("dishonest-throughput-from-samples", s.Dishonest.throughputFromSamples)
		flag("dishonest-no-warmup", s.Dishonest.noWarmup)
		flag("dishonest-time-keygen", s.Dishonest.timeKeygen)
		flag("dishonest-unsorted-percentile", s.Dishonest.unsortedPercentile)
	case "probe":
		add("ops", s.Ops)
		add("duration", s.Duration)
		add("value-size", s.ValueSize)
	case "model":
		add("sync", s.Sync)
		if s.TWrite > 0 {
			add("t-write", s.TWrite)
		}
		if s.set["t-fsync"] {
			add("t-fsync", s.TFsync)
		}
	case "crash":
		add("sync", s.Sync)
		add("trials", s.Trials)
		flag("power", s.Power)
		if s.set["power-mode"] {
			add("power-mode", s.PowerMode)
		}
		if s.set["write-buffer"] {
			add("write-buffer", s.WriteBuffer)
		}
		if s.set["seed"] {
			add("seed", s.Seed)
		}
	}
	return b.String()
}

// Check parses and validates one line (optionally prefixed "labserver ")
// without running it. Errors name the flag and the allowed range.
func Check(line string, lim Limits) error {
	_, err := ParseSpec(line, lim)
	return err
}

// ScaleLine returns line with its size budgets multiplied by f (0 < f <= 1):
// -ops, -duration, -keys, -trials and -warmup, each kept at a valid
// minimum. Other words are kept as they were.
func ScaleLine(line string, f float64) (string, error) {
	if !(f > 0 && f <= 1) {
		return "", fmt.Errorf("scale %v: must be greater than 0 and at most 1", f)
	}
	if _, err := ParseSpec(line, DefaultLimits()); err != nil {
		return "", err
	}
	w := splitLine(line)
	mins := map[string]int64{"ops": 1, "keys": 1, "trials": 1, "warmup": 0}
	for i := 1; i < len(w); i++ {
		name, val, hasVal := strings.Cut(strings.TrimLeft(w[i], "-"), "=")
		if !strings.HasPrefix(w[i], "-") {
			continue
		}
		vi := -1
		if !hasVal {
			if f, ok := lookupFlag(w[0], name); ok && !f.bool && i+1 < len(w) {
				vi = i + 1
				val = w[vi]
			}
		}
		var out string
		if lo, ok := mins[name]; ok {
			if w[0] == "probe" && name == "ops" {
				lo = 10
			}
			n, err := strconv.ParseInt(val, 10, 64)
			if err != nil {
				continue
			}
			out = strconv.FormatInt(max(int64(math.Round(float64(n)*f)), lo), 10)
		} else if name == "duration" {
			d, err := time.ParseDuration(val)
			if err != nil {
				continue
			}
			lo := time.Millisecond
			if w[0] == "probe" {
				lo = 10 * time.Millisecond
			}
			out = max(time.Duration(float64(d)*f).Round(time.Millisecond), lo).String()
		} else {
			continue
		}
		if vi >= 0 {
			w[vi] = out
			i = vi
		} else {
			w[i] = "-" + name + "=" + out
		}
	}
	return strings.Join(w, " "), nil
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
