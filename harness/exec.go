package harness

import (
	"context"
	"encoding/json"
	"fmt"
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

// Env is where and how Exec runs a line.
type Env struct {
	Dir      string         // parent for fresh per-run directories (removed afterwards); "" = os.TempDir()
	Limits   Limits         // zero value = DefaultLimits()
	Progress func(Progress) // about once a second while a run goes on; may be nil
	Exe      string         // binary to re-exec for `crash` (labserver itself); "" = os.Executable()
	// Source is the Go source of the store a source engine runs
	// (-engine mine, source.go), handed in by a server; a line there
	// cannot name a file with -src.
	Source string

	readSrc bool // the command line: -src FILE is read
}

// Exec runs one line: bench | sweep | probe | model | crash. It returns
// exactly what `-format json` prints for that line: a JSON object, or an
// array for sweep, -repeat and -engine a,b. A cancelled bench or sweep
// returns what it measured, each cut-short run marked "cancelled".
func Exec(ctx context.Context, line string, env Env) (json.RawMessage, error) {
	if env.Limits == (Limits{}) {
		env.Limits = DefaultLimits()
	}
	s, err := ParseSpec(line, env.Limits)
	if err != nil {
		return nil, err
	}
	return ExecSpec(ctx, s, env)
}

// ExecSpec is Exec for a line already parsed (with env.Limits): a caller
// that checked the line before running it runs what it checked, and
// parses it once.
func ExecSpec(ctx context.Context, s *Spec, env Env) (json.RawMessage, error) {
	if env.Limits == (Limits{}) {
		env.Limits = DefaultLimits()
	}
	v, err := execSpec(ctx, s, env)
	if err != nil {
		return nil, err
	}
	return json.Marshal(v)
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
		p, err := Probe(ctx, cfg)
		if err == nil && s.Methods {
			p.Methods, err = ProbeMethods(ctx, p.Dir, cfg)
		}
		return p, err
	case "model":
		return modelLine(ctx, s, dir)
	case "crash":
		return crashLine(ctx, s, dir, env)
	}
	return nil, fmt.Errorf("unknown command %q", s.Cmd)
}

// benchLine runs every run a bench or sweep line asks for: each engine,
// each thread count, each repeat, in that nesting order. It probes the
// directory once (quickly) for the conditions and the model.
func benchLine(ctx context.Context, s *Spec, dir string, env Env) ([]*BenchResult, error) {
	source, err := lineSource(s, env, env.readSrc)
	if err != nil {
		return nil, err
	}
	brief, err := quickProbe(ctx, dir)
	if err != nil {
		return nil, err
	}
	var out []*BenchResult
	sub, total := 0, len(s.Engines)*len(s.Threads)*s.Repeat
	for _, engine := range s.Engines {
		for _, threads := range s.Threads {
			var pool *latencyPool
			if s.Repeat > 1 {
				pool = newLatencyPool(DefaultExactCap, s.Dishonest.unsortedPercentile)
			}
			for rep := 1; rep <= s.Repeat; rep++ {
				sub++
				if ctx.Err() != nil {
					return out, nil
				}
				runDir, err := os.MkdirTemp(dir, "kvlab-"+dirSafe(engine)+"-")
				if err != nil {
					return nil, fmt.Errorf("-dir %s: %w", dir, err)
				}
				n := sub
				cfg := runConfig{
					engine: engine, sync: s.Sync, workload: s.Workload, batch: s.Batch, dist: s.Dist,
					threads: threads, ops: s.Ops, exactCap: DefaultExactCap, duration: s.Duration, maxUnits: s.maxUnits(env.Limits),
					valueSize: s.ValueSize, keys: s.Keys, warmup: s.Warmup, rate: s.Rate, pipeline: s.Pipeline, seed: s.Seed, cold: s.Cache == "cold",
					dishonest: s.Dishonest, dir: runDir, pool: pool, source: source,
					opts: s.engineOptions(engine), fanout: s.Fanout,
				}
				if env.Progress != nil {
					cfg.progress = func(p Progress) {
						if total > 1 {
							p.Run = n
						}
						env.Progress(p)
					}
				}
				load := loadAverage()
				res, err := runOne(ctx, cfg)
				if !s.Keep {
					os.RemoveAll(runDir)
				}
				if err != nil {
					if ctx.Err() != nil {
						return out, nil
					}
					return nil, err
				}
				res.Spec = s.line(engine, []int{threads})
				if s.Cmd == "sweep" {
					res.Spec = "bench" + res.Spec[len("sweep"):]
				}
				if s.Repeat > 1 {
					res.Run = rep
				}
				if s.Keep {
					res.Dir = runDir
				}
				res.Probe = brief
				res.LoadAvg = load
				res.Model = benchModel(s.Sync, res, brief)
				replicationModel(res.Replication, brief)
				out = append(out, res)
			}
			if pool != nil {
				out[len(out)-1].Pooled = pool.summary()
			}
		}
	}
	return out, nil
}

// dirSafe makes an -engine value fit a directory name: a URL's
// "resp://127.0.0.1:6380" becomes "resp-127.0.0.1-6380".
func dirSafe(engine string) string {
	return strings.NewReplacer("://", "-", "/", "-", ":", "-", "?", "-", "=", "-", "\\", "-").Replace(engine)
}
