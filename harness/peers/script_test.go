package peers

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"kvlab/harness"
	"kvlab/harness/harnesstest"
	"kvlab/internal/localserver"
)

// TestScriptRefusalsPeers: a script that ranges is refused on the
// engines that cannot read keys in order (Redis and kvserver), before
// anything runs or connects, naming the engine, the operation and the
// engines that can; -index is kv's alone.
func TestScriptRefusalsPeers(t *testing.T) {
	lines := map[string]string{
		"bench -script cart -engine redis -ops 10":                      "-engine redis cannot run kv.range",
		"bench -script scan -engine kv,kvserver -index ordered -ops 10": "-engine kvserver cannot run kv.scan",
		"bench -script cart -engine resp://127.0.0.1:1 -ops 10":         "-engine resp://127.0.0.1:1 cannot run kv.range",
		"bench -script cart -engine pebble -index ordered":              "-index ordered: applies to -engine kv only",
	}
	for line, want := range lines {
		_, err := harnesstest.Exec(context.Background(), line, harness.Env{Dir: t.TempDir()})
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "pebble") && strings.Contains(want, "cannot run") {
			t.Errorf("%s: err = %v, want it to contain %q and name the engines that can", line, err, want)
		}
	}
}

// TestScriptOnOrderedPeers runs the cart (ranges, puts, deletes) on
// bbolt, pebble and sqlite, and the batch script on pebble, whose mput
// is a native atomic batch.
func TestScriptOnOrderedPeers(t *testing.T) {
	for _, line := range []string{
		"bench -script cart -engine bbolt,pebble,sqlite -sync none -ops 60 -items 5 -users 10",
		"bench -script batch -engine pebble,bbolt -sync none -ops 40 -items 100 -batch 8",
	} {
		out, err := harnesstest.Exec(context.Background(), line, harness.Env{Dir: t.TempDir()})
		if err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		var rs []harness.ScriptResult
		if err := json.Unmarshal(out, &rs); err != nil {
			t.Fatal(err)
		}
		for _, r := range rs[1:] {
			if r.Units != int64(map[bool]int{true: 40, false: 60}[strings.Contains(line, "batch")]) {
				t.Errorf("%s on %s: %d units", r.Script, r.Engine, r.Units)
			}
			if r.Script == "cart" && (r.ByOp["range"].Calls == 0 || !r.Native["range"]) {
				t.Errorf("cart on %s: range %+v native %v; want native ranges", r.Engine, r.ByOp["range"], r.Native["range"])
			}
			if r.Script == "batch" && (!r.Native["mput"] || r.ByOp["mput"].Ops != 8*r.ByOp["mput"].Calls) {
				t.Errorf("batch on %s: native %v, mput %+v", r.Engine, r.Native, r.ByOp["mput"])
			}
		}
	}
}

// checkScript exercises every multi-key operation and a bounded range,
// and asserts what each returns; on the null floor, which keeps nothing,
// it returns early.
const checkScript = `return { name = "check", run = function(ctx)
  kv.put("probe", "1")
  if kv.get("probe") == nil then return end
  kv.mput({{key = "a1", val = "x"}, {key = "a2", val = "y"}, {key = "a3", val = "z"}, {key = "b1", val = "w"}})
  local r = kv.range("a", "a3")
  assert(#r == 2 and r[1].key == "a1" and r[2].val == "y", "range [a, a3): " .. #r .. " rows")
  assert(#kv.range("a", "b", 1) == 1, "range with a limit")
  local g = kv.mget({"a1", "nope", "b1"})
  assert(g[1] == "x" and g[2] == false and g[3] == "w", "mget")
  kv.mdel({"a1", "a2"})
  local left = kv.range("a", "b")
  assert(#left == 1 and left[1].key == "a3", "after mdel: " .. #left .. " rows")
  kv.mdel({"a3", "b1"})
end }`

// TestScriptNativeSQL: on sqlite (under none and batch:3, where the
// batch's open transaction must show its own writes) and postgres, range
// with an upper bound, mget, mput and mdel are native and return what
// the script asserts; on kvserver mget, mput and mdel are.
func TestScriptNativeSQL(t *testing.T) {
	lines := []string{
		"bench -script mine -engine sqlite -sync none -ops 10",
		"bench -script mine -engine sqlite -sync batch:3 -ops 10",
	}
	// kvserver: MGET, MSET and DEL (no ranges: the script's own ranges
	// are refused there, TestScriptRefusalsPeers).
	out, err := harnesstest.Exec(context.Background(), "bench -script batch -engine kvserver -sync none -ops 20 -items 50 -batch 4", harness.Env{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	var ks []harness.ScriptResult
	if err := json.Unmarshal(out, &ks); err != nil {
		t.Fatal(err)
	}
	if k := ks[len(ks)-1]; !k.Native["mget"] || !k.Native["mput"] || !k.Native["mdel"] || k.GetHits == 0 {
		t.Errorf("batch on kvserver: native %v, %d get hits; want MGET, MSET and DEL, and the seeded keys found", k.Native, k.GetHits)
	}
	if localserver.PostgresBinDir() != "" {
		lines = append(lines, "bench -script mine -engine postgres -sync none -ops 10")
	} else {
		t.Log("postgres is not installed: sqlite only")
	}
	for _, line := range lines {
		dir := openDir(t)
		out, err := harnesstest.Exec(context.Background(), line, harness.Env{Dir: dir, Script: checkScript})
		if err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		var rs []harness.ScriptResult
		if err := json.Unmarshal(out, &rs); err != nil {
			t.Fatal(err)
		}
		r := rs[len(rs)-1]
		for _, op := range []string{"range", "mget", "mput", "mdel"} {
			if !r.Native[op] {
				t.Errorf("%s: %s is not native", line, op)
			}
		}
		if r.Units != 10 || r.ByOp["mput"].Ops != 40 || r.ByOp["range"].Calls != 30 {
			t.Errorf("%s: %d units, mput %+v, range %+v; want 10 units of 4 keys put and 3 ranges", line, r.Units, r.ByOp["mput"], r.ByOp["range"])
		}
	}
}

// keybenchScript is a workload written against the documented script API
// only (the table's fields, every ctx field, all eight kv operations),
// as a keybench user brings it.
const keybenchScript = `
local fmt, r = string.format, math.random
local function key(i) return fmt("user%08d", i) end
return {
  name = "keybench-mix",
  load = function(ctx)
    local v = string.rep("x", ctx.valuebytes)
    for i = ctx.thread, ctx.items - 1, ctx.threads do kv.put(key(i), v) end
  end,
  run = function(ctx)
    local i, x = r(0, ctx.items - 1), r()
    if x < 0.3 then
      assert(kv.get(key(i)) ~= nil or ctx.seed ~= 7)
    elseif x < 0.4 then
      kv.put(key(i), string.rep("y", ctx.valuebytes))
    elseif x < 0.5 then
      kv.del(key(ctx.items + i))
    elseif x < 0.6 then
      local rows = kv.range(key(i), key(i + 5), 3)
      assert(#rows <= 3)
    elseif x < 0.7 then
      local n = 0
      kv.scan(key(i), "", function(k, v) n = n + 1; return n >= 2 end)
    elseif x < 0.8 then
      local keys = {}
      for j = 1, ctx.batch do keys[j] = key((i + j) % ctx.items) end
      kv.mget(keys)
    elseif x < 0.9 then
      local rows = {}
      for j = 1, ctx.batch do rows[j] = { key = key((i + j) % ctx.items), val = "z" } end
      kv.mput(rows)
    else
      local keys = {}
      for j = 1, ctx.batch do keys[j] = key(ctx.items + (i + j)) end
      kv.mdel(keys)
    end
  end,
}`

// TestKeybenchScriptRunsUnmodified: a script that uses only the
// documented API runs as it is, from a file on the command line, on kv
// (-index ordered), pebble and sqlite in one line, each with its per-op
// table and both wu/s and ops/s.
func TestKeybenchScriptRunsUnmodified(t *testing.T) {
	dir := openDir(t)
	file := filepath.Join(dir, "keybench.lua")
	if err := os.WriteFile(file, []byte(keybenchScript), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"bench", "-script", file, "-engine", "kv,pebble,sqlite", "-index", "ordered", "-sync", "none",
		"-ops", "300", "-items", "200", "-batch", "4", "-threads", "2", "-dir", dir}
	var out, errb bytes.Buffer
	if code := harness.RunCLIRecorded(context.Background(), args, &out, &errb, nil); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	blocks := strings.Split(out.String(), "\n\n")
	for _, e := range []string{"kv", "pebble", "sqlite"} {
		var b string
		for _, x := range blocks {
			if strings.HasPrefix(x, e+"\n") {
				b = x
			}
		}
		if b == "" {
			t.Fatalf("no block for %s in:\n%s", e, out.String())
		}
		for _, want := range []string{" wu/s ", " ops/s ", "\n  op ", "\n  put ", "\n  get ", "\n  del ", "\n  range ", "\n  mget ", "\n  mput ", "\n  mdel "} {
			if !strings.Contains(b, want) {
				t.Errorf("%s's block has no %q:\n%s", e, strings.TrimSpace(want), b)
			}
		}
	}
	if t.Failed() {
		t.Log(out.String())
	}
}
