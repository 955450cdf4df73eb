package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"kvlab/engine"
	"kvlab/harness/calc"
	"kvlab/harness/script"
	scripts "kvlab/workloads"
)

// Workload scripts: `bench -script NAME|FILE.lua -engine a,b`.
//
// The line runs the script (package harness/script) on each engine in
// turn, and first on the null engine, which stores nothing: its line is
// the framework's floor, the cost of the Lua host and the timing alone,
// printed beside the engines. A script whose sweep field names a ctx
// parameter runs once per value on every engine. Before anything runs,
// a script that calls kv.range or kv.scan is refused on an engine that
// cannot read keys in order, naming the engine, the operation and the
// engines that can.

// ScriptResult is one script run on one engine (one value of its sweep).
type ScriptResult struct {
	Kind    string `json:"kind"` // "script"
	Spec    string `json:"spec"`
	Engine  string `json:"engine"`
	Script  string `json:"script"` // the -script value
	Name    string `json:"name"`   // the script's own name field
	Sync    string `json:"sync"`
	Threads int    `json:"threads"`
	// Floor marks the null engine's line: the framework's own cost.
	Floor bool `json:"floor,omitempty"`
	// Round is the round of a -repeat line (1, 2, ...); engines run in
	// mirrored order, round after round (A B C, then C B A), as bench's
	// rounds do.
	Round int `json:"round,omitempty"`
	// SweepParam and SweepValue are set when the script sweeps a ctx
	// parameter: this line's value of it.
	SweepParam string `json:"sweep_param,omitempty"`
	SweepValue int64  `json:"sweep_value,omitempty"`
	Batched    bool   `json:"batched,omitempty"`
	// Native says, for each optional operation (range, scan, mget, mput,
	// mdel, del), whether the engine did it natively (true) or the
	// harness fell back to single-key calls (false).
	Native  map[string]bool `json:"native"`
	LoadAvg float64         `json:"load_avg,omitempty"`
	// Paired, on the last round of each engine (and sweep value) of a
	// -repeat line but the first engine -engine names: its wu/s against
	// that engine's at the same sweep value, round by round, as a bench
	// line's paired compares ops/s. The floor's says how many times the
	// first engine's units the Lua host alone could run.
	Paired *PairedRatio `json:"paired,omitempty"`
	script.Result
}

// ScriptMine is the -script value that runs a reader's own script: the
// text a server hands in Env.Script (a page's script editor sends it with
// the run). A server runs it only where a reader's own code may run (the
// server's mine.go); a shipped script runs anywhere.
const ScriptMine = "mine"

// MaxScriptBytes bounds a reader's own script.
const MaxScriptBytes = 32 << 10

// TakesScript reports whether line s runs a reader's own script
// (-script mine).
func TakesScript(s *Spec) bool { return s.Script == ScriptMine }

// scriptSource reads the -script value: a shipped script by name, the
// reader's own (mine, from env.Script), or on the command line a file.
func scriptSource(s *Spec, env Env) (file, src string, err error) {
	if s.Script == ScriptMine {
		switch {
		case strings.TrimSpace(env.Script) == "":
			return "", "", fmt.Errorf("-script mine: runs your own script, and none was given: on the page, edit the script above the cell and run the cell; on the command line give the file, -script FILE.lua")
		case len(env.Script) > MaxScriptBytes:
			return "", "", fmt.Errorf("-script mine: the script is %d bytes: must be at most %d", len(env.Script), MaxScriptBytes)
		}
		return "mine.lua", env.Script, nil
	}
	if text, ok := scripts.Lookup(s.Script); ok {
		return strings.TrimSuffix(s.Script, ".lua") + ".lua", text, nil
	}
	if !env.readSrc {
		return "", "", fmt.Errorf("-script %s: a page cannot read the server's files; shipped scripts: %s", s.Script, strings.Join(scripts.Names(), ", "))
	}
	b, err := os.ReadFile(s.Script)
	if err != nil {
		return "", "", fmt.Errorf("-script %s: %w", s.Script, err)
	}
	return filepath.Base(s.Script), string(b), nil
}

// orderedEngines names the engines that can serve kv.range and kv.scan,
// for refusals.
const orderedEngines = "kv with -index ordered, bbolt, pebble, sqlite, postgres"

// scriptRefusal says why engine e cannot run a script that uses ops, or
// "" when it can.
func scriptRefusal(e string, s *Spec, uses []string) string {
	for _, op := range uses {
		if op != "range" && op != "scan" {
			continue
		}
		if e == "kv" && s.Index != "ordered" {
			return fmt.Sprintf("-engine kv cannot run kv.%s: its hash index keeps no key order; give -index ordered, or use an ordered engine: bbolt, pebble, sqlite, postgres", op)
		}
		if e == "kv" {
			continue
		}
		if why, ok := Unordered(e); ok {
			return fmt.Sprintf("-engine %s cannot run kv.%s: %s; engines that can: %s", e, op, why, orderedEngines)
		}
	}
	return ""
}

// scriptLine runs a bench -script line.
func scriptLine(ctx context.Context, s *Spec, dir string, env Env) ([]*ScriptResult, error) {
	file, src, err := scriptSource(s, env)
	if err != nil {
		return nil, err
	}
	prog, err := script.Compile(file, src, script.Limits{})
	if err != nil {
		return nil, err
	}
	engines := s.Engines
	if !contains(engines, "null") {
		engines = append([]string{"null"}, engines...)
	}
	for _, e := range engines {
		if why := scriptRefusal(e, s, prog.Uses); why != "" {
			return nil, fmt.Errorf("-script %s: %s", s.Script, why)
		}
	}
	values := []int64{0}
	if prog.Sweep != nil {
		values = prog.Sweep.Values
	}
	threads := s.Threads[0]
	var out []*ScriptResult
	// -repeat N runs N rounds over the engines in mirrored order (A B C,
	// then C B A, ...), so a drift of the machine during the line falls
	// on every engine alike.
	for round := 1; round <= s.Repeat; round++ {
		order := engines
		if round%2 == 0 {
			order = slices.Clone(engines)
			slices.Reverse(order)
		}
		for _, e := range order {
			for _, val := range values {
				if ctx.Err() != nil {
					return out, nil
				}
				r, err := scriptRun(ctx, s, env, dir, prog, e, val, threads)
				if err != nil {
					if ctx.Err() != nil {
						return out, nil
					}
					return nil, err
				}
				r.Floor = e == "null" && !contains(s.Engines, "null")
				if s.Repeat > 1 {
					r.Round = round
				}
				out = append(out, r)
			}
		}
	}
	pairScripts(out, s.Engines[0])
	return out, nil
}

// pairScripts sets Paired on the last round of each engine and sweep
// value in rs but first's, when two rounds or more pair with first's.
func pairScripts(rs []*ScriptResult, first string) {
	type config struct {
		engine string
		value  int64
	}
	groups := map[config][]*ScriptResult{}
	var order []config
	for _, r := range rs {
		c := config{r.Engine, r.SweepValue}
		if groups[c] == nil {
			order = append(order, c)
		}
		groups[c] = append(groups[c], r)
	}
	for _, c := range order {
		if c.engine == first {
			continue
		}
		var g, base []roundFigure
		for _, r := range groups[config{first, c.value}] {
			if r.WUPerSec > 0 { // a round first did no units in is left out
				base = append(base, roundFigure{r.Round, r.WUPerSec})
			}
		}
		runs := groups[c]
		for _, r := range runs {
			g = append(g, roundFigure{r.Round, r.WUPerSec})
		}
		if p, ok := pairByRound(g, base); ok {
			runs[len(runs)-1].Paired = &PairedRatio{Metric: "wu_per_sec", Against: first, AgainstThreads: runs[0].Threads, Paired: p}
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// scriptRun runs the script once on engine e in a fresh directory.
func scriptRun(ctx context.Context, s *Spec, env Env, dir string, prog *script.Program, e string, val int64, threads int) (*ScriptResult, error) {
	runDir, err := os.MkdirTemp(dir, "kvlab-"+dirSafe(e)+"-")
	if err != nil {
		return nil, fmt.Errorf("-dir %s: %w", dir, err)
	}
	if !s.Keep {
		defer removeRunDir(runDir)
	}
	st, err := openScriptStore(e, runDir, s)
	if err != nil {
		return nil, fmt.Errorf("-engine %s: %w", e, err)
	}
	cfg := script.Config{
		Items: s.Items, Users: s.Users, Batch: s.Batch, ValueBytes: s.ValueSize,
		Ops: s.Ops, Duration: s.Duration, Seed: s.Seed, Threads: threads, SweepValue: val,
		// A page's limit on what a run may write bounds a script's puts.
		Limits: script.Limits{Bytes: env.Limits.MaxTotalBytes},
	}
	if prog.Sweep == nil {
		val = 0
	}
	if env.Progress != nil {
		cfg.Progress = func(p script.Progress) {
			// Seeding counts the keys written; measuring, the units (run
			// calls): the engine field says which.
			what, n, unit := e+" load (keys)", p.Ops, "keys"
			if p.Phase == "run" {
				what, n, unit = e+" run (units)", p.Units, "units"
			}
			env.Progress(Progress{Elapsed: p.Elapsed, ElapsedSeconds: p.Elapsed.Seconds(), Ops: n, OpsPerSec: p.Rate, Engine: what, Unit: unit})
		}
	}
	load := loadAverage()
	res, runErr := script.Run(ctx, prog, st.ops, cfg)
	cerr := st.Close()
	if runErr != nil {
		return nil, fmt.Errorf("-engine %s: %w", e, runErr)
	}
	if cerr != nil {
		return nil, fmt.Errorf("-engine %s: close: %w", e, cerr)
	}
	r := &ScriptResult{
		Kind: "script", Spec: s.line(e, []int{threads}), Engine: e, Script: s.Script, Name: prog.Name, Sync: s.Sync,
		Threads: threads, Batched: prog.Batched, Native: script.Native(st.ops), LoadAvg: load, Result: *res,
	}
	if prog.Sweep != nil {
		r.SweepParam, r.SweepValue = prog.Sweep.Param, val
	}
	return r, nil
}

// ScriptOpser is a store that does some of a script's optional
// operations natively: ScriptOps fills their fields in o (the peers'
// stores: pebble's batches, Redis's MGET and MSET).
type ScriptOpser interface {
	ScriptOps(o *script.Ops)
}

// openScriptStore opens engine e in dir for a script: kv with the index
// -index names, every other engine as a bench line opens it, with Range
// from its Scanner and the native operations it offers (ScriptOpser).
func openScriptStore(e, dir string, s *Spec) (*scriptRunStore, error) {
	if e == "kv" {
		return openKVScript(dir, s.Sync, s.Index)
	}
	st, err := OpenEngine(e, dir, s.Sync)
	if err != nil {
		return nil, err
	}
	o := &script.Ops{Store: st}
	if sc, ok := st.(Scanner); ok {
		o.Range = scannerRange(sc)
	}
	if n, ok := st.(ScriptOpser); ok {
		n.ScriptOps(o)
	}
	return &scriptRunStore{ops: o, closer: st}, nil
}

// scriptRunStore is what script.Run gets: the Ops (a script.Store) and
// the store to close afterwards.
type scriptRunStore struct {
	ops    *script.Ops
	closer io.Closer
}

func (s *scriptRunStore) Close() error { return s.closer.Close() }

// scannerRange makes a Scanner's Scan(start, limit) into a half-open
// Range(lo, hi, limit).
func scannerRange(sc Scanner) func(lo, hi []byte, limit int, fn func(k, v []byte) bool) error {
	return func(lo, hi []byte, limit int, fn func(k, v []byte) bool) error {
		return sc.Scan(lo, limit, func(k, v []byte) bool {
			if len(hi) > 0 && string(k) >= string(hi) {
				return false
			}
			return fn(k, v)
		})
	}
}

// openKVScript opens the kv engine with the index kind named, with
// kv.range and kv.scan from DB.Scan (ordered index) and mput and mdel
// as atomic batches (DB.Apply).
func openKVScript(dir, sync, index string) (*scriptRunStore, error) {
	p, err := engine.ParseSync(sync)
	if err != nil {
		return nil, err
	}
	kind, err := engine.ParseIndex(index)
	if err != nil {
		return nil, err
	}
	db, err := engine.Open(dir, engine.Options{Sync: p, Index: kind})
	if err != nil {
		return nil, err
	}
	kvs := kvStore{db: db}
	o := &script.Ops{Store: kvs}
	if kind == engine.IndexOrdered {
		o.Range = func(lo, hi []byte, limit int, fn func(k, v []byte) bool) error {
			n := 0
			return db.Scan(lo, hi, func(k, v []byte) bool {
				n++
				return fn(k, v) && (limit <= 0 || n < limit)
			})
		}
	}
	o.MultiPut = func(keys, vals [][]byte) error {
		var b engine.Batch
		for i, k := range keys {
			b.Put(k, vals[i])
		}
		return db.Apply(&b)
	}
	o.MultiDelete = func(keys [][]byte) error {
		var b engine.Batch
		for _, k := range keys {
			b.Delete(k)
		}
		return db.Apply(&b)
	}
	return &scriptRunStore{ops: o, closer: db}, nil
}

// writeScriptTable prints script results: one block per line of the
// result (engine, sweep value), the per-op latencies under it, and the
// floor's wu/s beside each engine's.
func writeScriptTable(w io.Writer, rs []*ScriptResult) error {
	if len(rs) == 0 {
		return errors.New("no script results")
	}
	floor := map[int]float64{} // by round
	for _, r := range rs {
		if r.Floor {
			floor[r.Round] = r.WUPerSec
		}
	}
	fmt.Fprintf(w, "script %s (%s), %d thread(s), sync %s\n", rs[0].Script, rs[0].Name, rs[0].Threads, rs[0].Sync)
	for _, r := range rs {
		head := r.Engine
		if r.Floor {
			head += " (the framework's floor: a store that does nothing)"
		}
		if r.SweepParam != "" {
			head += fmt.Sprintf("  %s=%d", r.SweepParam, r.SweepValue)
		}
		if r.Round > 0 {
			head += fmt.Sprintf("  round %d", r.Round)
		}
		if r.Cancelled {
			head += "  CANCELLED"
		}
		fmt.Fprintf(w, "\n%s\n", head)
		fmt.Fprintf(w, "  %12.0f wu/s  (%d units in %.2fs", r.WUPerSec, r.Units, r.Seconds)
		if f := floor[r.Round]; f > 0 && !r.Floor {
			fmt.Fprintf(w, "; floor %.0f wu/s", f)
		}
		fmt.Fprintln(w, ")")
		if r.Ops != r.Units {
			fmt.Fprintf(w, "  %12.0f ops/s (%d primitive ops)\n", r.OpsPerSec, r.Ops)
		}
		if p := r.Paired; p != nil {
			fmt.Fprintf(w, "  %12.2fx %s's wu/s, the median of %d rounds' paired ratios (%.2f–%.2fx)\n", p.Ratio, p.Against, p.Rounds, p.Low, p.High)
		}
		if r.GetHits+r.GetMisses > 0 {
			fmt.Fprintf(w, "  get hit rate %.1f%%\n", 100*r.HitRate)
		}
		fmt.Fprintf(w, "  %-6s %10s %10s %10s %10s %10s  %s\n", "op", "calls", "p50", "p99", "p99.9", "max", "native")
		for _, op := range script.OpNames {
			st, ok := r.ByOp[op]
			if !ok {
				continue
			}
			native := ""
			if n, ok := r.Native[op]; ok {
				switch op {
				case "range":
					native = "no"
				case "del":
					native = "no: a get, then the delete"
				default:
					native = "no: one call per key"
				}
				if n {
					native = "yes"
				}
			}
			fmt.Fprintf(w, "  %-6s %10d %10s %10s %10s %10s  %s\n", op, st.Calls, calc.FormatNs(float64(st.P50)), calc.FormatNs(float64(st.P99)),
				calc.FormatNs(float64(st.P999)), calc.FormatNs(float64(st.Max)), native)
		}
	}
	return nil
}

// writeScriptTSV prints one row per engine (and sweep value) and op kind.
func writeScriptTSV(w io.Writer, rs []*ScriptResult) error {
	fmt.Fprintln(w, strings.Join([]string{"engine", "round", "script", "sync", "threads", "sweep_param", "sweep_value", "floor", "units", "ops", "elapsed_seconds",
		"wu_per_sec", "ops_per_sec", "hit_rate", "op", "calls", "op_ops", "p50_ns", "p99_ns", "p999_ns", "max_ns", "native"}, "\t"))
	for _, r := range rs {
		ops := make([]string, 0, len(r.ByOp))
		for op := range r.ByOp {
			ops = append(ops, op)
		}
		sort.Strings(ops)
		for _, op := range ops {
			st := r.ByOp[op]
			native, ok := r.Native[op]
			fmt.Fprintf(w, "%s\t%d\t%s\t%s\t%d\t%s\t%d\t%v\t%d\t%d\t%.3f\t%.0f\t%.0f\t%.4f\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%v\n",
				r.Engine, r.Round, r.Script, r.Sync, r.Threads, r.SweepParam, r.SweepValue, r.Floor, r.Units, r.Ops, r.Seconds,
				r.WUPerSec, r.OpsPerSec, r.HitRate, op, st.Calls, st.Ops, st.P50, st.P99, st.P999, st.Max, native || !ok)
		}
	}
	return nil
}
