package script

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
	"time"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/parse"
)

// Op kinds: one latency histogram each. scan shares range's.
const (
	opPut = iota
	opGet
	opDel
	opRange
	opMget
	opMput
	opMdel
	numOps
)

// OpNames are the op kinds in the order results list them.
var OpNames = [numOps]string{"put", "get", "del", "range", "mget", "mput", "mdel"}

// Program is a compiled script, shared by every worker's state.
type Program struct {
	Name    string // the script's name field, or the file's name
	File    string // the name errors cite, e.g. "cart.lua"
	Sweep   *Sweep // the sweep field, nil when absent
	Batched bool
	// Uses lists the kv operations the script's text calls (kv.range,
	// kv.scan, ...), so a store that cannot do one is refused before
	// the run starts.
	Uses  []string
	proto *lua.FunctionProto
	// hasLoad: the table has a load function.
	hasLoad bool
}

// Sweep is a script's sweep field: run once per value of the ctx field
// Param, each reported on its own line.
type Sweep struct {
	Param  string
	Values []int64
}

// sweepParams are the ctx fields a sweep may vary.
var sweepParams = []string{"items", "users", "batch", "valuebytes"}

// Limits bound what a script may do. The zero value of a field means its
// default.
type Limits struct {
	// Call bounds the script's own time in one call of load or run, the
	// time spent inside the store left out (default 10s).
	Call time.Duration
	// Heap bounds how much the Go heap may grow while the script runs
	// (default 512 MiB): the Lua values a script makes live there.
	Heap int64
	// Stack bounds each state's data stack, in slots (default 1<<16);
	// CallDepth its call stack, in frames (default 200).
	Stack, CallDepth int
	// MaxString bounds a string string.rep makes (default 16 MiB).
	MaxString int
	// Bytes bounds the key and value bytes the run's puts write, load
	// included (0: no bound): a write past it fails with ErrBytes.
	Bytes int64
}

func (l Limits) defaults() Limits {
	if l.Call <= 0 {
		l.Call = 10 * time.Second
	}
	if l.Heap <= 0 {
		l.Heap = 512 << 20
	}
	if l.Stack <= 0 {
		l.Stack = 1 << 16
	}
	if l.CallDepth <= 0 {
		l.CallDepth = 200
	}
	if l.MaxString <= 0 {
		l.MaxString = 16 << 20
	}
	return l
}

var usesRe = regexp.MustCompile(`\bkv\s*\.\s*(put|get|del|range|scan|mget|mput|mdel)\b`)

// Compile parses src (file names it in errors) and checks the table it
// returns: a name, a run function, optionally load, sweep and batched.
// It runs the chunk once in a state of its own, where kv calls fail.
func Compile(file, src string, lim Limits) (*Program, error) {
	lim = lim.defaults()
	chunk, err := parse.Parse(strings.NewReader(src), file)
	if err != nil {
		return nil, fmt.Errorf("script %s: %w", file, err)
	}
	proto, err := lua.Compile(chunk, file)
	if err != nil {
		return nil, fmt.Errorf("script %s: %w", file, err)
	}
	p := &Program{File: file, proto: proto}
	seen := map[string]bool{}
	for _, m := range usesRe.FindAllStringSubmatch(src, -1) {
		if !seen[m[1]] {
			seen[m[1]] = true
			p.Uses = append(p.Uses, m[1])
		}
	}
	L := newState(lim, rand.New(rand.NewPCG(1, 1)))
	defer L.Close()
	L.SetGlobal("kv", L.NewTable()) // kv.put(...) at load time: "attempt to call a nil value"
	t, err := instantiate(L, p)
	if err != nil {
		return nil, err
	}
	p.Name = file
	switch v := t.RawGetString("name"); v.Type() {
	case lua.LTString:
		p.Name = v.String()
	case lua.LTNil:
	default:
		return nil, fmt.Errorf("script %s: name is a %s, want a string", file, v.Type())
	}
	if v := t.RawGetString("run"); v.Type() != lua.LTFunction {
		return nil, fmt.Errorf("script %s: the table it returns has no run function (run is a %s); want { name = ..., run = function(ctx) ... end }", file, v.Type())
	}
	switch v := t.RawGetString("load"); v.Type() {
	case lua.LTFunction:
		p.hasLoad = true
	case lua.LTNil:
	default:
		return nil, fmt.Errorf("script %s: load is a %s, want a function", file, v.Type())
	}
	p.Batched = lua.LVAsBool(t.RawGetString("batched"))
	if sw, ok := t.RawGetString("sweep").(*lua.LTable); ok {
		s := &Sweep{Param: lua.LVAsString(sw.RawGetString("param"))}
		if !contains(sweepParams, s.Param) {
			return nil, fmt.Errorf("script %s: sweep.param %q: allowed: %s", file, s.Param, strings.Join(sweepParams, ", "))
		}
		vals, _ := sw.RawGetString("values").(*lua.LTable)
		if vals == nil || vals.Len() == 0 || vals.Len() > 16 {
			return nil, fmt.Errorf("script %s: sweep.values: want a list of 1 to 16 numbers", file)
		}
		for i := 1; i <= vals.Len(); i++ {
			n, ok := vals.RawGetInt(i).(lua.LNumber)
			if !ok || n < 0 || n != lua.LNumber(int64(n)) {
				return nil, fmt.Errorf("script %s: sweep.values[%d] = %v: want a whole number >= 0", file, i, vals.RawGetInt(i))
			}
			s.Values = append(s.Values, int64(n))
		}
		p.Sweep = s
	} else if v := t.RawGetString("sweep"); v.Type() != lua.LTNil {
		return nil, fmt.Errorf("script %s: sweep is a %s, want { param = ..., values = {...} }", file, v.Type())
	}
	return p, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// instantiate runs the compiled chunk in L and returns the table it
// returns.
func instantiate(L *lua.LState, p *Program) (*lua.LTable, error) {
	L.Push(L.NewFunctionFromProto(p.proto))
	if err := L.PCall(0, 1, nil); err != nil {
		return nil, fmt.Errorf("script %s: %w", p.File, luaErr(err))
	}
	v := L.Get(-1)
	L.Pop(1)
	t, ok := v.(*lua.LTable)
	if !ok {
		return nil, fmt.Errorf("script %s: returns a %s; want a table { name = ..., load = function(ctx) ... end, run = function(ctx) ... end }", p.File, v.Type())
	}
	return t, nil
}

// luaErr turns a Lua error into a Go error with the script's own message
// ("cart.lua:12: ..."), without the Go-side stack.
func luaErr(err error) error {
	var ae *lua.ApiError
	if errors.As(err, &ae) {
		msg := ae.Object.String()
		if ae.Cause != nil && !strings.Contains(msg, ae.Cause.Error()) {
			msg += ": " + ae.Cause.Error()
		}
		return errors.New(msg)
	}
	return err
}

// newState makes a Lua state with only the safe libraries open,
// math.random drawing from rng and string.format's common shapes written
// without fmt (format.go).
func newState(lim Limits, rng *rand.Rand) *lua.LState {
	L := lua.NewState(lua.Options{
		SkipOpenLibs:        true,
		CallStackSize:       lim.CallDepth,
		RegistrySize:        1024,
		RegistryMaxSize:     lim.Stack,
		MinimizeStackMemory: true,
	})
	for _, lib := range []struct {
		name string
		open lua.LGFunction
	}{{lua.BaseLibName, lua.OpenBase}, {lua.TabLibName, lua.OpenTable}, {lua.StringLibName, lua.OpenString}, {lua.MathLibName, lua.OpenMath}} {
		L.Push(L.NewFunction(lib.open))
		L.Push(lua.LString(lib.name))
		L.Call(1, 0)
	}
	for _, name := range []string{"dofile", "loadfile", "load", "loadstring", "require", "module", "collectgarbage", "_printregs", "newproxy"} {
		L.SetGlobal(name, lua.LNil)
	}
	L.SetGlobal("print", L.NewFunction(func(L *lua.LState) int { return 0 }))
	math := L.GetGlobal("math").(*lua.LTable)
	math.RawSetString("random", L.NewFunction(func(L *lua.LState) int {
		switch L.GetTop() {
		case 0:
			L.Push(lua.LNumber(rng.Float64()))
		case 1:
			n := L.CheckInt64(1)
			if n < 1 {
				L.ArgError(1, "interval is empty")
			}
			L.Push(lua.LNumber(rng.Int64N(n) + 1))
		default:
			lo, hi := L.CheckInt64(1), L.CheckInt64(2)
			if lo > hi {
				L.ArgError(2, "interval is empty")
			}
			L.Push(lua.LNumber(lo + rng.Int64N(hi-lo+1)))
		}
		return 1
	}))
	math.RawSetString("randomseed", L.NewFunction(func(L *lua.LState) int {
		s := uint64(L.CheckInt64(1))
		*rng = *rand.New(rand.NewPCG(s, s^0x9e3779b97f4a7c15))
		return 0
	}))
	str := L.GetGlobal("string").(*lua.LTable)
	f := &formatter{stock: str.RawGetString("format").(*lua.LFunction).GFunction}
	str.RawSetString("format", L.NewFunction(f.format))
	str.RawSetString("rep", L.NewFunction(func(L *lua.LState) int {
		s, n := L.CheckString(1), L.CheckInt(2)
		if n <= 0 || s == "" {
			L.Push(lua.LString(""))
			return 1
		}
		if int64(len(s))*int64(n) > int64(lim.MaxString) {
			L.RaiseError("string.rep: %d bytes, the limit is %d", int64(len(s))*int64(n), lim.MaxString)
		}
		L.Push(lua.LString(strings.Repeat(s, n)))
		return 1
	}))
	return L
}
