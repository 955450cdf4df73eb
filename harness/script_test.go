package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"kvlab/harness/script"
	scripts "kvlab/workloads"
)

// TestScriptRefusals: a script that ranges is refused before anything
// runs on an engine that cannot read keys in order, naming the engine,
// the operation and the engines that can; the -script flags are refused
// where they do not apply; a page cannot name a file.
func TestScriptRefusals(t *testing.T) {
	lines := map[string]string{
		"bench -script cart -engine kv -ops 10":      "-engine kv cannot run kv.range: its hash index keeps no key order; give -index ordered",
		"bench -script /etc/x.lua -ops 10":           "a page cannot read the server's files",
		"bench -workload fillrandom -items 5":        "-items 5: applies to -script runs only",
		"bench -script cart -workload fillrandom":    "give one or the other",
		"bench -script cart -keys 5":                 "-keys: does not apply to -script runs",
		"bench -script cart -rate 100":               "-rate: does not apply to -script runs",
		"bench -script nope":                         "no shipped script of that name",
		"sweep -script cart -threads 1,2":            "bench only",
		"bench -script cart -engine kv -index btree": "-index btree: allowed: hash, ordered",
		"bench -script mine -engine kv -ops 10":      "-script mine: runs your own script, and none was given",
		"bench -script scan -engine drift -ops 10":   "-engine drift cannot run kv.scan: it stores nothing",
		"bench -script ycsb-e -engine kv -ops 10":    "-engine kv cannot run kv.",
	}
	for line, want := range lines {
		_, err := Exec(context.Background(), line, Env{Dir: t.TempDir()})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want it to contain %q", line, err, want)
		}
	}
}

// TestShippedScripts runs every shipped script briefly on kv with the
// ordered index (and the null floor): each compiles, seeds and runs, and
// the result has the floor line first and per-op latencies.
func TestShippedScripts(t *testing.T) {
	for _, name := range scripts.Names() {
		t.Run(name, func(t *testing.T) {
			line := "bench -script " + name + " -engine kv -index ordered -sync none -ops 40 -items 50 -users 5 -batch 4"
			out, err := Exec(context.Background(), line, Env{Dir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			var rs []ScriptResult
			if err := json.Unmarshal(out, &rs); err != nil {
				t.Fatal(err)
			}
			if len(rs) < 2 || !rs[0].Floor || rs[0].Engine != "null" || rs[len(rs)-1].Engine != "kv" {
				t.Fatalf("%d results; want the null floor first, then kv", len(rs))
			}
			kv := rs[len(rs)-1]
			if kv.Units != 40 || len(kv.ByOp) == 0 || kv.WUPerSec <= 0 {
				t.Errorf("kv: %d units, %d op kinds, %.0f wu/s; want 40 units measured", kv.Units, len(kv.ByOp), kv.WUPerSec)
			}
			if name == "batch" && (!kv.Native["mput"] || kv.ByOp["mput"].Ops != 4*kv.ByOp["mput"].Calls) {
				t.Errorf("batch on kv: native %v, mput %+v; want native atomic batches of 4 keys", kv.Native, kv.ByOp["mput"])
			}
			if src, _ := scripts.Lookup(name); kv.Batched != strings.Contains(src, "batched = true") {
				t.Errorf("%s: result batched %v; want the script's batched field", name, kv.Batched)
			}
			var tsv bytes.Buffer
			if err := Write(&tsv, "tsv", rsPtrs(rs)); err != nil {
				t.Fatal(err)
			}
			rows := 1
			for _, r := range rs {
				rows += len(r.ByOp)
			}
			if lines := strings.Count(tsv.String(), "\n"); lines != rows {
				t.Errorf("tsv: %d lines, want %d: a header and a row per engine and op kind", lines, rows)
			}
			var table bytes.Buffer
			if err := Write(&table, "table", rsPtrs(rs)); err != nil || !strings.Contains(table.String(), "framework's floor") {
				t.Errorf("table: %v\n%s", err, table.String())
			}
		})
	}
}

func rsPtrs(rs []ScriptResult) []*ScriptResult {
	out := make([]*ScriptResult, len(rs))
	for i := range rs {
		out[i] = &rs[i]
	}
	return out
}

// TestScriptFileAndSweep: the command line reads a script file, whose
// sweep runs once per value on every engine, and a script error comes
// back with the file and line.
func TestScriptFileAndSweep(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "mine.lua")
	os.WriteFile(file, []byte(`return { name = "mine", sweep = { param = "valuebytes", values = {1, 7} },
  run = function(ctx) kv.put("k", string.rep("x", ctx.valuebytes)); local v = kv.get("k"); assert(v == nil or #v == ctx.valuebytes) end }`), 0o644)
	s, err := ParseSpec("bench -script "+file+" -engine kv -ops 5", DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	v, err := execSpec(context.Background(), s, Env{Dir: dir, readSrc: true})
	if err != nil {
		t.Fatal(err)
	}
	rs := v.([]*ScriptResult)
	if len(rs) != 4 || rs[2].Engine != "kv" || rs[2].SweepValue != 1 || rs[3].SweepValue != 7 || rs[3].SweepParam != "valuebytes" {
		t.Fatalf("results: %d; want null and kv at valuebytes 1 and 7", len(rs))
	}
	os.WriteFile(file, []byte("return { run = function(ctx)\n  kv.put('k', nil)\nend }"), 0o644)
	_, err = execSpec(context.Background(), s, Env{Dir: dir, readSrc: true})
	if err == nil || !strings.Contains(err.Error(), "mine.lua:2:") {
		t.Errorf("err = %v, want the script's file and line", err)
	}
}

// TestScriptResultDecodes: a stored script result decodes back into the
// value Write prints, so `labserver runs show` prints its table.
func TestScriptResultDecodes(t *testing.T) {
	out, err := Exec(context.Background(), "bench -script mixed -engine kv -index ordered -sync none -ops 20 -items 30", Env{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	v, err := DecodeResult(out)
	if err != nil {
		t.Fatal(err)
	}
	rs, ok := v.([]*ScriptResult)
	if !ok || len(rs) != 2 || rs[1].Kind != "script" || rs[1].Units != 20 {
		t.Fatalf("decoded %T", v)
	}
}

// TestScriptRepeatMirrored: -repeat runs rounds over the engines in
// mirrored order.
func TestScriptRepeatMirrored(t *testing.T) {
	out, err := Exec(context.Background(), "bench -script mixed -engine kv,null -index ordered -sync none -ops 10 -items 20 -repeat 3", Env{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	var rs []ScriptResult
	if err := json.Unmarshal(out, &rs); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rs {
		got = append(got, fmt.Sprintf("%d:%s", r.Round, r.Engine))
	}
	if want := "[1:kv 1:null 2:null 2:kv 3:kv 3:null]"; fmt.Sprint(got) != want {
		t.Errorf("order %v, want %s", got, want)
	}
	// The last round of null carries its wu/s against kv's, round by
	// round; kv, the first engine, carries none.
	var ratios []float64
	for i := 0; i < len(rs); i += 2 {
		kv, null := rs[i], rs[i+1]
		if kv.Engine != "kv" {
			kv, null = null, kv
		}
		ratios = append(ratios, null.WUPerSec/kv.WUPerSec)
	}
	p := rs[5].Paired
	if p == nil || p.Against != "kv" || p.Metric != "wu_per_sec" || p.Rounds != 3 || fmt.Sprintf("%.6f", p.Ratios) != fmt.Sprintf("%.6f", ratios) {
		t.Fatalf("null's paired = %+v; want wu/s against kv, ratios %.3f", p, ratios)
	}
	for i, r := range rs[:5] {
		if r.Paired != nil {
			t.Errorf("result %d (%s, round %d) has paired %+v; want it on null's last round only", i, r.Engine, r.Round, r.Paired)
		}
	}
	var table bytes.Buffer
	if err := Write(&table, "table", rsPtrs(rs)); err != nil || !strings.Contains(table.String(), fmt.Sprintf("%.2fx kv's wu/s, the median of 3 rounds' paired ratios", p.Ratio)) {
		t.Errorf("table: %v\n%s", err, table.String())
	}
}

// TestScriptMine: -script mine runs the script a server hands in
// Env.Script, named mine.lua in its errors.
func TestScriptMine(t *testing.T) {
	env := Env{Dir: t.TempDir(), Script: `return { name = "own", run = function(ctx) kv.put("a", "b") end }`}
	out, err := Exec(context.Background(), "bench -script mine -engine kv -sync none -ops 7", env)
	if err != nil {
		t.Fatal(err)
	}
	var rs []ScriptResult
	if err := json.Unmarshal(out, &rs); err != nil {
		t.Fatal(err)
	}
	if kv := rs[len(rs)-1]; kv.Name != "own" || kv.Script != "mine" || kv.ByOp["put"].Calls != 7 {
		t.Errorf("kv: name %q, script %q, puts %d; want the handed-in script's 7 puts", kv.Name, kv.Script, kv.ByOp["put"].Calls)
	}
	env.Script = "return { run = function(ctx)\n  kv.nope()\nend }"
	if _, err := Exec(context.Background(), "bench -script mine -engine kv -ops 3", env); err == nil || !strings.Contains(err.Error(), "mine.lua:2:") {
		t.Errorf("err = %v, want the error at mine.lua:2", err)
	}
}

// TestScriptTimelineFormat: -format timeline prints one TSV row per
// second of each script run (and of each bench run), and a script's
// progress line on the terminal names what it counts.
func TestScriptTimelineFormat(t *testing.T) {
	rs := []*ScriptResult{
		{Engine: "null", Script: "mixed", Floor: true, Result: script.Result{Timeline: []script.Second{{Second: 1, Units: 900, Ops: 900}}}},
		{Engine: "kv", Script: "mixed", Round: 2, Result: script.Result{Timeline: []script.Second{{Second: 1, Units: 10, Ops: 12}, {Second: 2, Units: 11, Ops: 14}}}},
	}
	var b bytes.Buffer
	if err := Write(&b, "timeline", rs); err != nil {
		t.Fatal(err)
	}
	want := "engine\tround\tscript\tsweep_param\tsweep_value\tfloor\tsecond\tunits\tops\n" +
		"null\t0\tmixed\t\t0\ttrue\t1\t900\t900\n" +
		"kv\t2\tmixed\t\t0\tfalse\t1\t10\t12\n" +
		"kv\t2\tmixed\t\t0\tfalse\t2\t11\t14\n"
	if b.String() != want {
		t.Errorf("timeline:\n%s\nwant:\n%s", b.String(), want)
	}
	b.Reset()
	br := &BenchResult{Engine: "kv", Sync: "none", Workload: "fillrandom", Threads: 1, Timeline: []TimelinePoint{{Second: 1, Ops: 5, OpsPerSec: 5, Seconds: 1}}}
	if err := Write(&b, "timeline", br); err != nil || !strings.Contains(b.String(), "kv\tnone\tfillrandom\t1\t0\t1\t5\t5.0\t1.0000\n") {
		t.Errorf("bench timeline: %v\n%s", err, b.String())
	}
	if _, err := ParseSpec("probe -format timeline", DefaultLimits()); err == nil || !strings.Contains(err.Error(), "allowed for probe: table, tsv, json") {
		t.Errorf("probe -format timeline: err = %v, want it refused", err)
	}
	b.Reset()
	progressPrinter(&b, false)(Progress{ElapsedSeconds: 1, Ops: 4000, OpsPerSec: 3900, Engine: "kv load (keys)", Unit: "keys"})
	if got := b.String(); !strings.Contains(got, "4000 keys") || !strings.Contains(got, "3900 keys/s") {
		t.Errorf("progress line %q, want it to count keys", got)
	}
}

// TestScriptCtxFields: ctx carries each flag's value under its field's
// name (items, users, batch, valuebytes, ops, seed, threads) and each
// worker's number from 0 (thread), in load and in run alike.
func TestScriptCtxFields(t *testing.T) {
	env := Env{Dir: t.TempDir(), Script: `
local function check(ctx)
  assert(ctx.items == 3 and ctx.users == 4 and ctx.batch == 5 and ctx.valuebytes == 6, "sizes")
  assert(ctx.ops == 7 and ctx.seed == 8 and ctx.threads == 2, "ops, seed, threads")
  assert(ctx.thread == 0 or ctx.thread == 1, "thread " .. tostring(ctx.thread))
end
return { name = "ctx",
  load = function(ctx) check(ctx); kv.put("loaded/" .. ctx.thread, "1") end,
  run = function(ctx) check(ctx); kv.put("ran/" .. ctx.thread, "1") end }`}
	out, err := Exec(context.Background(), "bench -script mine -engine kv -sync none -items 3 -users 4 -batch 5 -value-size 6 -ops 7 -seed 8 -threads 2", env)
	if err != nil {
		t.Fatal(err)
	}
	var rs []ScriptResult
	if err := json.Unmarshal(out, &rs); err != nil {
		t.Fatal(err)
	}
	if kv := rs[len(rs)-1]; kv.LoadOps != 2 || kv.Units != 7 {
		t.Errorf("kv: %d load ops, %d units; want one load per worker (2) and 7 units", kv.LoadOps, kv.Units)
	}
}

// TestScriptTableLines: an engine's block prints wu/s with the floor's
// beside it, ops/s on a line of its own only when it differs from wu/s,
// the get hit rate when there were gets, and one row per op kind.
func TestScriptTableLines(t *testing.T) {
	op := script.OpStats{Calls: 10, Ops: 10, P50: 1500, P99: 9000, P999: 9000, Max: 9000}
	rs := []*ScriptResult{
		{Engine: "null", Script: "cart", Floor: true, Result: script.Result{Units: 100, Ops: 100, Seconds: 1, WUPerSec: 100, OpsPerSec: 100, ByOp: map[string]script.OpStats{"range": op}}},
		{Engine: "kv", Script: "cart", Native: map[string]bool{"range": true, "del": false}, Result: script.Result{Units: 50, Ops: 65, Seconds: 1, WUPerSec: 50, OpsPerSec: 65,
			GetHits: 3, GetMisses: 1, HitRate: 0.75, ByOp: map[string]script.OpStats{"range": op, "del": op}}},
	}
	var b bytes.Buffer
	if err := Write(&b, "table", rs); err != nil {
		t.Fatal(err)
	}
	blocks := strings.Split(b.String(), "\n\n")
	if len(blocks) != 3 {
		t.Fatalf("%d blocks, want a head and one per engine:\n%s", len(blocks), b.String())
	}
	floor, kv := blocks[1], blocks[2]
	for _, c := range []struct {
		block, want string
		present     bool
	}{
		{floor, "ops/s", false},
		{floor, "hit rate", false},
		{kv, "50 wu/s  (50 units in 1.00s; floor 100 wu/s)", true},
		{kv, "65 ops/s (65 primitive ops)", true},
		{kv, "get hit rate 75.0%", true},
		{kv, "range ", true},
		{kv, "no: a get, then the delete", true},
	} {
		if strings.Contains(c.block, c.want) != c.present {
			t.Errorf("block has %q: %v, want %v:\n%s", c.want, !c.present, c.present, c.block)
		}
	}
}

// TestScriptProgressToThePage: a script line's progress reaches Env.Progress
// (the page's progress messages) naming the engine and phase and what
// ops counts: units while measuring.
func TestScriptProgressToThePage(t *testing.T) {
	var mu sync.Mutex
	var got []Progress
	env := Env{Dir: t.TempDir(), Progress: func(p Progress) {
		mu.Lock()
		got = append(got, p)
		mu.Unlock()
	}}
	if _, err := Exec(context.Background(), "bench -script mixed -engine null -sync none -items 100 -duration 1500ms", env); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	runs := 0
	for _, p := range got {
		if p.Engine == "null run (units)" && p.Unit == "units" && p.Ops > 0 && p.OpsPerSec > 0 {
			runs++
		}
	}
	if runs < 1 {
		t.Errorf("progress %+v; want a \"null run (units)\" event counting units", got)
	}
}
