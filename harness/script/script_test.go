package script

import (
	"context"
	"errors"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	lua "github.com/yuin/gopher-lua"
)

// memStore is an ordered in-memory store for the tests.
type memStore struct {
	mu sync.Mutex
	m  map[string]string
}

func newMem() *memStore { return &memStore{m: map[string]string{}} }

func (s *memStore) Put(k, v []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[string(k)] = string(v)
	return nil
}
func (s *memStore) Get(k []byte) ([]byte, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.m[string(k)]
	return []byte(v), ok, nil
}
func (s *memStore) Delete(k []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, string(k))
	return nil
}

type orderedMem struct{ *memStore }

func (s orderedMem) Range(lo, hi []byte, limit int, fn func(k, v []byte) bool) error {
	s.mu.Lock()
	var keys []string
	for k := range s.m {
		if k >= string(lo) && (len(hi) == 0 || k < string(hi)) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	if limit > 0 && len(keys) > limit {
		keys = keys[:limit]
	}
	vals := make([]string, len(keys))
	for i, k := range keys {
		vals[i] = s.m[k]
	}
	s.mu.Unlock()
	for i, k := range keys {
		if !fn([]byte(k), []byte(vals[i])) {
			return nil
		}
	}
	return nil
}

type nullStore struct{}

func (nullStore) Put(k, v []byte) error                                           { return nil }
func (nullStore) Get(k []byte) ([]byte, bool, error)                              { return nil, false, nil }
func (nullStore) Delete(k []byte) error                                           { return nil }
func (nullStore) Range(lo, hi []byte, limit int, fn func(k, v []byte) bool) error { return nil }

func compile(t testing.TB, src string) *Program {
	t.Helper()
	p, err := Compile("t.lua", src, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

const cart = `
-- a shopping cart: per-user prefixes
local function key(u, i) return string.format("cart/%04d/%04d", u, i) end
return {
  name = "cart",
  load = function(ctx)
    for u = ctx.thread, ctx.users - 1, ctx.threads do
      for i = 1, ctx.items do kv.put(key(u, i), "x") end
    end
  end,
  run = function(ctx)
    local u = math.random(0, ctx.users - 1)
    local rows = kv.range(string.format("cart/%04d/", u), string.format("cart/%04d0", u))
    assert(#rows == ctx.items, "rows " .. #rows)
    local n = 0
    kv.scan(string.format("cart/%04d/", u), string.format("cart/%04d0", u), function(k, v) n = n + 1; return n == 2 end)
    assert(n == 2)
    local got = kv.mget({key(u, 1), "nope"})
    assert(got[1] == "x" and got[2] == false)
    kv.mput({{key = "tmp/a", val = "1"}, {key = "tmp/b", val = "2"}})
    kv.mdel({"tmp/a", "tmp/b"})
    assert(kv.get(key(u, 1)) == "x")
    assert(kv.del("tmp/zzz") == false)
  end,
}`

// TestRunCountsOps runs the cart on an ordered store and checks units,
// ops by kind (mget/mput/mdel count per key, range and scan once each)
// and the hit rate.
func TestRunCountsOps(t *testing.T) {
	p := compile(t, cart)
	if p.Name != "cart" || !slices.Contains(p.Uses, "range") || !slices.Contains(p.Uses, "mdel") {
		t.Fatalf("program %+v", p)
	}
	res, err := Run(context.Background(), p, orderedMem{newMem()}, Config{Items: 5, Users: 10, Ops: 200, Threads: 3, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if res.Units != 200 {
		t.Errorf("units %d, want 200", res.Units)
	}
	want := map[string][2]int64{ // calls, ops
		"range": {400, 400}, "mget": {200, 400}, "mput": {200, 400}, "mdel": {200, 400}, "get": {200, 200}, "del": {200, 200},
	}
	for op, w := range want {
		got := res.ByOp[op]
		if got.Calls != w[0] || got.Ops != w[1] {
			t.Errorf("%s: %d calls, %d ops; want %d, %d", op, got.Calls, got.Ops, w[0], w[1])
		}
	}
	if res.Ops != 2000 {
		t.Errorf("ops %d, want 2000", res.Ops)
	}
	if res.LoadOps != 50 {
		t.Errorf("load ops %d, want 50 (10 users x 5 items)", res.LoadOps)
	}
	// gets: 200 hits; mget: 200 hits, 200 misses.
	if res.GetHits != 400 || res.GetMisses != 200 {
		t.Errorf("hits %d misses %d, want 400 and 200", res.GetHits, res.GetMisses)
	}
}

// TestRangeRefused: a script that uses kv.range on a store that cannot
// read keys in order stops before it runs.
func TestRangeRefused(t *testing.T) {
	p := compile(t, cart)
	_, err := Run(context.Background(), p, newMem(), Config{Items: 1, Users: 1, Ops: 1})
	if err == nil || !strings.Contains(err.Error(), "cannot read keys in order") {
		t.Errorf("err = %v, want a refusal naming the ordered read", err)
	}
}

// TestScriptErrors: a bad script is refused with its file and line, and
// the unsafe libraries are not there.
func TestScriptErrors(t *testing.T) {
	cases := []struct{ src, want string }{
		{`return {`, "t.lua"},
		{`return 5`, "returns a number"},
		{`return {name = "x"}`, "no run function"},
		{`return {run = function() end, sweep = {param = "nope", values = {1}}}`, "sweep.param"},
		{"return {run = function(ctx)\n  error('boom')\nend}", "t.lua:2: boom"},
		{"return {run = function(ctx)\n  os.exit(1)\nend}", "t.lua:2:"},
		{"return {run = function(ctx)\n  io.open('/etc/passwd')\nend}", "t.lua:2:"},
		{"return {run = function(ctx)\n  dofile('/etc/passwd')\nend}", "t.lua:2:"},
		{"return {run = function(ctx)\n  require('os')\nend}", "t.lua:2:"},
		{"return {run = function(ctx)\n  debug.getinfo(1)\nend}", "t.lua:2: attempt to index a non-table object(nil) with key 'getinfo'"},
		{"return {run = function(ctx)\n  local p = package.loaded\nend}", "t.lua:2: attempt to index a non-table object(nil) with key 'loaded'"},
		{"return {run = function(ctx)\n  loadstring('return 1')\nend}", "t.lua:2: attempt to call a non-function object"},
		{"return {run = function(ctx)\n  load(function() return nil end)\nend}", "t.lua:2: attempt to call a non-function object"},
		{"return {run = function(ctx)\n  loadfile('/etc/passwd')\nend}", "t.lua:2: attempt to call a non-function object"},
		{"return {run = function(ctx)\n  collectgarbage('stop')\nend}", "t.lua:2: attempt to call a non-function object"},
		{"return {run = function(ctx)\n  local s = string.rep('x', 1e9)\nend}", "string.rep"},
		{"return {run = function(ctx)\n  kv.put('', 'v')\nend}", "empty key"},
	}
	for _, c := range cases {
		p, err := Compile("t.lua", c.src, Limits{})
		if err == nil {
			_, err = Run(context.Background(), p, newMem(), Config{Ops: 1})
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: err = %v, want it to contain %q", c.src, err, c.want)
		}
	}
}

// TestLimits: a run call that loops forever and one that eats memory are
// stopped by the watchdog with their reason.
func TestLimits(t *testing.T) {
	p := compile(t, "return {run = function(ctx) while true do end end}")
	_, err := Run(context.Background(), p, newMem(), Config{Ops: 1, Limits: Limits{Call: 200 * time.Millisecond}})
	if !errors.Is(err, ErrCallTime) {
		t.Errorf("endless loop: err = %v, want ErrCallTime", err)
	}
	p = compile(t, "return {run = function(ctx) local t = {} for i = 1, 1e9 do t[i] = string.rep('x', 1000) .. i end end}")
	_, err = Run(context.Background(), p, newMem(), Config{Ops: 1, Limits: Limits{Heap: 64 << 20, Call: time.Hour}})
	if !errors.Is(err, ErrHeap) {
		t.Errorf("memory hog: err = %v, want ErrHeap", err)
	}
	p = compile(t, "local function f(n) return f(n + 1) + 1 end return {run = function(ctx) f(1) end}")
	_, err = Run(context.Background(), p, newMem(), Config{Ops: 1})
	if err == nil || !strings.Contains(err.Error(), "stack overflow") {
		t.Errorf("deep recursion: err = %v, want a stack overflow", err)
	}
	// The data stack (the registry) is bounded by Limits.Stack: 5000
	// values passed at once fit the default and overflow 2048 slots.
	p = compile(t, "local t = {} for i = 1, 5000 do t[i] = i end local function f(...) return select('#', ...) end return {run = function(ctx) assert(f(unpack(t)) == 5000) end}")
	if _, err = Run(context.Background(), p, newMem(), Config{Ops: 1}); err != nil {
		t.Errorf("5000 values on the default stack: %v", err)
	}
	_, err = Run(context.Background(), p, newMem(), Config{Ops: 1, Limits: Limits{Stack: 2048}})
	if err == nil || !strings.Contains(err.Error(), "registry overflow") {
		t.Errorf("5000 values on a stack of 2048: err = %v, want a registry overflow", err)
	}
}

// TestBytesLimit: the puts of a run (load included) may not write more
// than Limits.Bytes of keys and values.
func TestBytesLimit(t *testing.T) {
	p := compile(t, "return {load = function(ctx) for i = 1, 100 do kv.put('k' .. i, string.rep('v', 100)) end end, run = function(ctx) end}")
	_, err := Run(context.Background(), p, newMem(), Config{Ops: 1, Limits: Limits{Bytes: 5000}})
	if err == nil || !strings.Contains(err.Error(), ErrBytes.Error()) {
		t.Errorf("err = %v, want %v", err, ErrBytes)
	}
	if _, err := Run(context.Background(), p, newMem(), Config{Ops: 1, Limits: Limits{Bytes: 20000}}); err != nil {
		t.Errorf("within the bound: %v", err)
	}
}

// TestCancel: a cancelled context stops a -duration run and returns what
// it measured.
func TestCancel(t *testing.T) {
	p := compile(t, "return {run = function(ctx) kv.put('k', 'v') end}")
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	res, err := Run(ctx, p, newMem(), Config{Duration: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Cancelled || res.Units == 0 {
		t.Errorf("cancelled %v after %d units; want cancelled after some", res.Cancelled, res.Units)
	}
}

// TestTimeline: a run of over two seconds has a timeline of whole
// seconds whose units add up to at most the run's.
func TestTimeline(t *testing.T) {
	p := compile(t, "return {run = function(ctx) kv.put('k', 'v') end}")
	res, err := Run(context.Background(), p, newMem(), Config{Duration: 2500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	var sum int64
	for i, s := range res.Timeline {
		if s.Second != i+1 {
			t.Errorf("timeline[%d].Second = %d", i, s.Second)
		}
		sum += s.Units
	}
	if len(res.Timeline) < 1 || len(res.Timeline) > 3 || sum > res.Units || sum == 0 {
		t.Errorf("timeline of %d seconds, %d units of %d", len(res.Timeline), sum, res.Units)
	}
}

// TestRandomPerWorker: math.random is seeded per worker from the seed:
// the same seed gives the same keys, another seed others, and two
// workers different ones.
func TestRandomPerWorker(t *testing.T) {
	src := "return {run = function(ctx) kv.put(ctx.thread .. '/' .. math.random(1, 1000000000), 'v') end}"
	keys := func(seed int64, threads int) map[string]bool {
		s := newMem()
		if _, err := Run(context.Background(), compile(t, src), s, Config{Ops: 50, Threads: threads, Seed: seed}); err != nil {
			t.Fatal(err)
		}
		out := map[string]bool{}
		for k := range s.m {
			out[k] = true
		}
		return out
	}
	a, b, c := keys(7, 1), keys(7, 1), keys(8, 1)
	if len(a) != 50 || !mapsEqual(a, b) {
		t.Errorf("same seed: %d and %d keys, equal %v", len(a), len(b), mapsEqual(a, b))
	}
	if mapsEqual(a, c) {
		t.Errorf("seeds 7 and 8 drew the same keys")
	}
	two := keys(7, 2)
	suffix := map[string]int{}
	for k := range two {
		_, r, _ := strings.Cut(k, "/")
		suffix[r]++
	}
	for r, n := range suffix {
		if n > 1 {
			t.Errorf("both workers drew %s", r)
		}
	}
}

func mapsEqual(a, b map[string]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if !b[k] {
			return false
		}
	}
	return true
}

// BenchmarkNullMixed is the framework's floor: a mixed workload on a
// store that does nothing, one worker. Target: >= 500k units/s.
func BenchmarkNullMixed(b *testing.B) {
	p := compile(b, `
local r = math.random
return { name = "mixed", run = function(ctx)
  local k = "key" .. r(1, ctx.items)
  local x = r()
  if x < 0.5 then kv.get(k) elseif x < 0.9 then kv.put(k, "value") else kv.del(k) end
end }`)
	b.ReportAllocs()
	res, err := Run(context.Background(), p, nullStore{}, Config{Items: 100000, Ops: int64(b.N), Threads: 1})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(res.WUPerSec, "wu/s")
}

// slowStore is a memStore whose every Put takes d.
type slowStore struct {
	*memStore
	d time.Duration
}

func (s slowStore) Put(k, v []byte) error {
	time.Sleep(s.d)
	return s.memStore.Put(k, v)
}

// TestCallLimitLeavesOutTheStore: the call limit bounds the script's own
// time, not the store's, so a load call that seeds keys into a slow
// store for longer than the limit is not a runaway (an endless loop
// still is: TestLimits).
func TestCallLimitLeavesOutTheStore(t *testing.T) {
	p := compile(t, "return {load = function(ctx) for i = 1, 40 do kv.put('k' .. i, 'v') end end, run = function(ctx) end}")
	st := slowStore{newMem(), 50 * time.Millisecond} // 2s of Puts in one load call
	res, err := Run(context.Background(), p, st, Config{Ops: 1, Limits: Limits{Call: time.Second}})
	if err != nil {
		t.Fatalf("a load of 2s in the store under a 1s call limit: %v; want it to run", err)
	}
	if res.LoadOps != 40 {
		t.Errorf("load did %d ops, want 40", res.LoadOps)
	}
}

// TestBridgeAllocatesNothing: a unit whose script asks for no new value
// (constant keys, prebuilt rows and key lists) allocates nothing in the
// bridge: kv.put, get, del, mput, mdel and a kv.scan that finds nothing
// reuse the worker's buffers, and the floor stays the Lua host's own.
func TestBridgeAllocatesNothing(t *testing.T) {
	p := compile(t, `
local rows, keys = {{key = "a", val = "1"}, {key = "b", val = "2"}}, {"a", "b"}
local function f(k, v) return true end
return { run = function(ctx)
  kv.put("k", "v"); kv.get("k"); kv.del("k")
  kv.mput(rows); kv.mdel(keys)
  kv.scan("a", "z", f)
end }`)
	w, err := newWorker(p, 0, nullStore{}, Limits{}.defaults(), 1, map[string]int64{}, new(atomic.Int64))
	if err != nil {
		t.Fatal(err)
	}
	defer w.L.Close()
	w.measuring = true
	for range 10 { // grow the buffers once
		if err := w.call(w.run); err != nil {
			t.Fatal(err)
		}
	}
	if n := testing.AllocsPerRun(1000, func() { w.call(w.run) }); n != 0 {
		t.Errorf("%.1f allocations per unit, want 0", n)
	}
}

// TestProgress: seeding and measuring each report about once a second,
// keys (primitive ops) while seeding, units and their rate while
// measuring.
func TestProgress(t *testing.T) {
	p := compile(t, "return {load = function(ctx) for i = 1, 30 do kv.put('k' .. i, 'v') end end, run = function(ctx) kv.get('k1') end}")
	st := slowStore{newMem(), 50 * time.Millisecond} // a load of 1.5 s
	var mu sync.Mutex
	var got []Progress
	res, err := Run(context.Background(), p, st, Config{Duration: 1500 * time.Millisecond, Progress: func(p Progress) {
		mu.Lock()
		got = append(got, p)
		mu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	var load, run int
	for _, p := range got {
		switch p.Phase {
		case "load":
			load++
			if p.Units != 0 || p.Ops < 1 || p.Ops > 30 || p.Rate <= 0 {
				t.Errorf("load progress %+v: want keys written so far and their rate, no units", p)
			}
		case "run":
			run++
			if p.Units < 1 || p.Units > res.Units || p.Rate <= 0 {
				t.Errorf("run progress %+v: want units so far (of %d) and their rate", p, res.Units)
			}
		default:
			t.Errorf("progress phase %q", p.Phase)
		}
	}
	if load < 1 || load > int(res.LoadSeconds)+1 || run < 1 || run > int(res.Seconds)+1 {
		t.Errorf("%d load progress events in %.1fs, %d run events in %.1fs; want one a second", load, res.LoadSeconds, run, res.Seconds)
	}
}

// fakeClock is a clock the test moves: the store's calls move it by
// their cost, and the script's own work by tick(n).
type fakeClock struct{ t time.Duration }

func (c *fakeClock) now() time.Duration { return c.t }

// costStore is a nullStore whose Put, Get and Range each move clock by a
// cost of their own.
type costStore struct{ clock *fakeClock }

func (s costStore) Put(k, v []byte) error { s.clock.t += 7 * time.Microsecond; return nil }
func (s costStore) Get(k []byte) ([]byte, bool, error) {
	s.clock.t += 3 * time.Microsecond
	return nil, false, nil
}
func (s costStore) Delete(k []byte) error { return nil }
func (s costStore) Range(lo, hi []byte, limit int, fn func(k, v []byte) bool) error {
	s.clock.t += 11 * time.Microsecond
	return nil
}

// TestLatencyIsTheEngineCallOnly: each op's latency is the time inside
// the store's call, none of the script's own time before or after it
// (the script moves the clock by a millisecond between calls).
func TestLatencyIsTheEngineCallOnly(t *testing.T) {
	clock := &fakeClock{}
	defer func(old func() time.Duration) { now = old }(now)
	now = clock.now
	p := compile(t, `return { run = function(ctx)
  tick(); kv.put("k", "v"); tick(); kv.get("k"); tick(); kv.range("a", "z"); tick()
end }`)
	w, err := newWorker(p, 0, costStore{clock}, Limits{}.defaults(), 1, map[string]int64{}, new(atomic.Int64))
	if err != nil {
		t.Fatal(err)
	}
	defer w.L.Close()
	w.L.SetGlobal("tick", w.L.NewFunction(func(L *lua.LState) int { clock.t += time.Millisecond; return 0 }))
	w.measuring = true
	for range 5 {
		if err := w.call(w.run); err != nil {
			t.Fatal(err)
		}
	}
	for op, want := range map[int]time.Duration{opPut: 7 * time.Microsecond, opGet: 3 * time.Microsecond, opRange: 11 * time.Microsecond} {
		h := w.hist[op]
		if h.TotalCount() != 5 || !h.ValuesAreEquivalent(h.Min(), int64(want)) || !h.ValuesAreEquivalent(h.Max(), int64(want)) {
			t.Errorf("%s: %d samples from %v to %v; want 5 of %v, the store's call alone", OpNames[op], h.TotalCount(), time.Duration(h.Min()), time.Duration(h.Max()), want)
		}
	}
}
