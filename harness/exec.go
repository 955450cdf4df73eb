package harness

import (
	"context"
	"fmt"
	"kvlab/harness/calc"
	"os"
	"strings"
	"time"
)

// Limits are the caps a line must fit in. The command line uses
// DefaultLimits; the server passes its own, smaller ones.
type Limits struct {
	MaxOps        int64         // units per -ops run
	MaxDuration   time.Duration // per run
	MaxValueSize  int           // bytes
	MaxTotalBytes int64         // bytes a run may write, preload included (also stops a -duration run)
	MaxThreads    int
	MaxTrials     int // crash trials
	MaxRepeat     int
}

// DefaultLimits returns the command line's caps.
func DefaultLimits() Limits {
	return Limits{
		MaxOps:        10_000_000,
		MaxDuration:   10 * time.Minute,
		MaxValueSize:  1 << 20,
		MaxTotalBytes: 8 << 30,
		MaxThreads:    256,
		MaxTrials:     1000,
		MaxRepeat:     20,
	}
}

// Env is where and how ExecOutput runs a line.
type Env struct {
	Dir      string         // parent for fresh per-run directories (removed afterwards); "" = os.TempDir()
	Limits   Limits         // zero value = DefaultLimits()
	Progress func(Progress) // about once a second while a run goes on; may be nil
	Exe      string         // binary to re-exec for `crash` (labserver itself); "" = os.Executable()
	// Source is the Go source of the store a source engine runs
	// (-engine mine, source.go), handed in by a server; a line there
	// cannot name a file with -src.
	Source string
	// Script is the text of a reader's own workload script, which a
	// line's -script mine runs (script.go), handed in by a server.
	Script string

	readSrc bool          // the command line: -src FILE is read
	tick    time.Duration // the progress events' interval; 0 = a second (tests shorten it)
}

// execSpec runs a parsed spec and returns the value to print: a single
// result, or a slice of them.
func execSpec(ctx context.Context, s *Spec, env Env) (any, error) {
	dir := s.Dir
	if dir == "" {
		dir = env.Dir
	}
	if dir == "" {
		dir = os.TempDir()
	}
	switch s.Cmd {
	case "bench", "sweep":
		if s.Script != "" {
			rs, err := scriptLine(ctx, s, dir, env)
			if err != nil {
				return nil, err
			}
			if len(rs) == 0 {
				return nil, fmt.Errorf("%s: cancelled before anything was measured: %w", s.Cmd, context.Cause(ctx))
			}
			return rs, nil
		}
		rs, err := benchLine(ctx, s, dir, env)
		if err != nil {
			return nil, err
		}
		if len(rs) == 0 {
			return nil, fmt.Errorf("%s: cancelled before anything was measured: %w", s.Cmd, context.Cause(ctx))
		}
		if len(rs) == 1 && s.Cmd == "bench" {
			return rs[0], nil
		}
		return rs, nil
	case "probe":
		cfg := ProbeConfig{Dir: dir, Iterations: int(s.Ops), MaxTime: s.Duration, WriteSize: s.ValueSize}
		w := idleMachine(dir, idleBaselineFor(0))
		w.start()
		p, err := Probe(ctx, cfg)
		if err == nil && s.Methods {
			p.Methods, err = ProbeMethods(ctx, p.Dir, cfg)
		}
		if err == nil {
			w.stop()
			p.DeviceIO, p.CPUUse = w.device.result(0, 0), w.cpu.result()
		}
		return p, err
	case "model":
		return modelLine(ctx, s, dir)
	case "crash":
		return crashLine(ctx, s, dir, env)
	}
	return nil, fmt.Errorf("unknown command %q", s.Cmd)
}

// benchLine runs every run a bench or sweep line asks for: each engine at
// each thread count (a configuration), each repeat. With -repeat the
// configurations run interleaved, in mirrored rounds (calc.RoundOrder):
// round 1 runs them in order, round 2 in reverse, and so on, so two
// engines run A B B A A B and a drift of the machine lands on both alike
// (lesson 9). Each result says its round and when it started; the results
// come back grouped by configuration (engine, then thread count, then
// round), and the last of each group but the first configuration's carries
// its paired comparison with the first (pairedAgainstFirst). It probes the
// directory (quickly) for the conditions and the model: once for a line of
// one run, and just before each run for a line of several.
func benchLine(ctx context.Context, s *Spec, dir string, env Env) ([]*BenchResult, error) {
	source, err := lineSource(s, env, env.readSrc)
	if err != nil {
		return nil, err
	}
	brief, err := quickProbe(ctx, dir)
	if err != nil {
		return nil, err
	}
	type config struct {
		engine  string
		threads int
		pool    *latencyPool
		runs    []*BenchResult
	}
	var configs []*config
	for _, engine := range s.Engines {
		for _, threads := range s.Threads {
			c := &config{engine: engine, threads: threads}
			if s.Repeat > 1 {
				c.pool = newLatencyPool(DefaultExactCap, s.Dishonest.unsortedPercentile)
			}
			configs = append(configs, c)
		}
	}
	collect := func() []*BenchResult {
		var out []*BenchResult
		for _, c := range configs {
			out = append(out, c.runs...)
		}
		return out
	}
	sub, total := 0, len(configs)*s.Repeat
rounds:
	for round := 1; round <= s.Repeat; round++ {
		for _, ci := range calc.RoundOrder(len(configs), round) {
			c := configs[ci]
			sub++
			if ctx.Err() != nil {
				break rounds
			}
			runDir, err := os.MkdirTemp(dir, "kvlab-"+dirSafe(c.engine)+"-")
			if err != nil {
				return nil, fmt.Errorf("-dir %s: %w", dir, err)
			}
			n := sub
			cfg := runConfig{
				engine: c.engine, sync: s.Sync, workload: s.Workload, batch: s.Batch, dist: s.Dist,
				threads: c.threads, ops: s.Ops, exactCap: DefaultExactCap, duration: s.Duration, maxUnits: s.maxUnits(env.Limits),
				valueSize: s.ValueSize, keys: s.Keys, warmup: s.Warmup, untilSteady: s.UntilSteady, maxWarmup: s.MaxWarmup, steadyTolerance: s.SteadyTolerance / 100, rate: s.Rate, poisson: s.Arrivals == "poisson", pipeline: s.Pipeline, seed: s.Seed, cold: s.Cache == "cold",
				dishonest: s.Dishonest, dir: runDir, pool: c.pool, source: source,
				opts: s.engineOptions(c.engine), fanout: s.Fanout, hedge: s.Hedge, tick: env.tick,
			}
			if env.Progress != nil {
				cfg.progress = func(p Progress) {
					if total > 1 {
						p.Run, p.Runs = n, total
					}
					env.Progress(p)
				}
			}
			brief := brief
			if total > 1 && sub > 1 {
				// The disk's cost now, next to the run it describes.
				if brief, err = probeNow(ctx, dir); err != nil {
					if ctx.Err() != nil {
						break rounds
					}
					return nil, err
				}
			}
			load := loadAverage()
			started := time.Now()
			res, err := runOne(ctx, cfg)
			if !s.Keep {
				removeRunDir(runDir)
			}
			if err != nil {
				if ctx.Err() != nil {
					break rounds
				}
				return nil, err
			}
			res.Spec = s.line(c.engine, []int{c.threads})
			if s.Cmd == "sweep" {
				res.Spec = "bench" + res.Spec[len("sweep"):]
			}
			if s.Repeat > 1 {
				res.Run = round
				res.Round = round
			}
			res.StartedAt = started.UTC()
			if s.Keep {
				res.Dir = runDir
			}
			res.Probe = brief
			res.LoadAvg = load
			res.Model = benchModel(s.Sync, res, brief)
			replicationModel(res.Replication, brief, c.engine)
			c.runs = append(c.runs, res)
		}
	}
	for _, c := range configs {
		if c.pool != nil && len(c.runs) > 0 {
			c.runs[len(c.runs)-1].Pooled = c.pool.summary()
		}
	}
	out := collect()
	pairedAgainstFirst(out)
	return out, nil
}

// pairedAgainstFirst sets Paired on the last result of each configuration
// (engine and thread count) of rs, grouped as benchLine returns them, but
// the first: its throughput against the first configuration's, round by
// round (calc.PairRatios over the rounds both completed). It needs two
// rounds or more.
func pairedAgainstFirst(rs []*BenchResult) {
	groups := groupRuns(rs)
	if len(groups) < 2 {
		return
	}
	base := groups[0]
	for _, g := range groups[1:] {
		if p := pairOps(g, base); p != nil {
			g[len(g)-1].Paired = p
		}
	}
}

// pairOps pairs g's runs with base's by round and compares their ops/s:
// nil when fewer than two rounds are on both sides.
func pairOps(g, base []*BenchResult) *PairedRatio {
	figures := func(rs []*BenchResult) []roundFigure {
		out := make([]roundFigure, len(rs))
		for i, r := range rs {
			out[i] = roundFigure{r.Round, r.OpsPerSec}
		}
		return out
	}
	p, ok := pairByRound(figures(g), figures(base))
	if !ok {
		return nil
	}
	return &PairedRatio{Metric: "ops_per_sec", Against: base[0].Engine, AgainstThreads: base[0].Threads, Paired: p}
}

// roundFigure is one run's figure and the round it ran in (0: not run
// in rounds).
type roundFigure struct {
	round int
	value float64
}

// pairByRound compares g's figures with base's of the same round
// (calc.PairRatios over the rounds both completed, in g's order); ok is
// false when fewer than two rounds pair or a figure cannot be divided.
func pairByRound(g, base []roundFigure) (p calc.Paired, ok bool) {
	byRound := map[int]float64{}
	for _, b := range base {
		if b.round > 0 {
			byRound[b.round] = b.value
		}
	}
	var num, den []float64
	for _, f := range g {
		if b, ok := byRound[f.round]; ok && f.round > 0 {
			num, den = append(num, f.value), append(den, b)
		}
	}
	if len(num) < 2 {
		return calc.Paired{}, false
	}
	p, err := calc.PairRatios(num, den)
	return p, err == nil
}

// dirSafe makes an -engine value fit a directory name: a URL's
// "resp://127.0.0.1:6380" becomes "resp-127.0.0.1-6380".
func dirSafe(engine string) string {
	return strings.NewReplacer("://", "-", "/", "-", ":", "-", "?", "-", "=", "-", "\\", "-").Replace(engine)
}
