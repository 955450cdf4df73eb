// Package script runs workload scripts written in Lua 5.1 (through
// github.com/yuin/gopher-lua) against a key-value store, in the shape
// keybench defined, so that one script measures several engines:
//
//	return {
//	  name = "cart",
//	  load = function(ctx) ... end,   -- seeds the store, on every worker at once
//	  run  = function(ctx) ... end,   -- one unit of work, called until the budget is spent
//	  sweep = { param = "valuebytes", values = {256, 4096} },  -- optional
//	  batched = true,                                           -- optional
//	}
//
// The global kv table offers put, get, del, range, scan, mget, mput and
// mdel (docs/api.md has their signatures and how each counts). Each
// worker has its own Lua state, reused for every call, its own
// math.random seeded from the run's seed and the worker's number, and
// its own latency histograms; the host takes no lock around the store.
// Each engine call is timed alone, two monotonic clock reads around it.
// string.format, which most scripts build their keys with, writes its
// common shapes without fmt (format.go), so the floor a script's null
// line shows is mostly the interpreter's own.
//
// Safety: a state opens only the base, table, string and math
// libraries, with dofile, loadfile, load, loadstring, require and
// module removed (no os, io, debug or package); string.rep is bounded;
// the Lua stacks are bounded; every call runs under a context that a
// watchdog cancels when one call runs longer than Limits.Call or the
// heap grows by more than Limits.Heap (run.go).
package script

// Store is what a script's kv operations run on: Put, Get and Delete,
// as harness.Store has them. Every method must be safe for concurrent
// use. Keys and values passed in are valid only during the call.
type Store interface {
	Put(key, value []byte) error
	// Get reports found=false with a nil error for a missing key.
	Get(key []byte) (value []byte, found bool, err error)
	Delete(key []byte) error
}

// Ranger is a store that can visit the keys of [lo, hi) in order (hi
// empty: no upper bound), at most limit of them (0: no limit), until fn
// returns false. key and value are valid only until fn returns.
// kv.range and kv.scan need it: a store without it is refused before
// a script that uses them runs.
type Ranger interface {
	Range(lo, hi []byte, limit int, fn func(key, value []byte) bool) error
}

// MultiGetter is a store with a native multi-key read. fn is called once
// per key, in order; value is valid only until fn returns. Without it
// kv.mget calls Get once per key.
type MultiGetter interface {
	MultiGet(keys [][]byte, fn func(i int, value []byte, found bool)) error
}

// MultiWriter is a store with a native multi-key write (atomic where the
// store says so). Without it kv.mput and kv.mdel call Put and Delete once
// per key.
type MultiWriter interface {
	MultiPut(keys, values [][]byte) error
	MultiDelete(keys [][]byte) error
}

// DeleteReporter is a store whose Delete says whether the key existed.
// Without it kv.del asks Get first, inside the timed call.
type DeleteReporter interface {
	DeleteExisted(key []byte) (existed bool, err error)
}

// Ops is a store and its native optional operations, as functions: an
// adapter that knows at run time what the store underneath can do
// passes an *Ops as the Store. A nil field falls back as the interfaces
// above say.
type Ops struct {
	Store
	Range         func(lo, hi []byte, limit int, fn func(key, value []byte) bool) error
	MultiGet      func(keys [][]byte, fn func(i int, value []byte, found bool)) error
	MultiPut      func(keys, values [][]byte) error
	MultiDelete   func(keys [][]byte) error
	DeleteExisted func(key []byte) (bool, error)
}

// OpsOf returns s's operations: s itself when it is an *Ops, else the
// optional interfaces it implements.
func OpsOf(s Store) Ops {
	if o, ok := s.(*Ops); ok {
		return *o
	}
	o := Ops{Store: s}
	if r, ok := s.(Ranger); ok {
		o.Range = r.Range
	}
	if g, ok := s.(MultiGetter); ok {
		o.MultiGet = g.MultiGet
	}
	if w, ok := s.(MultiWriter); ok {
		o.MultiPut, o.MultiDelete = w.MultiPut, w.MultiDelete
	}
	if d, ok := s.(DeleteReporter); ok {
		o.DeleteExisted = d.DeleteExisted
	}
	return o
}

// Native says which of the optional operations a store does natively;
// the others fall back to single-key calls, and results say so.
func Native(s Store) map[string]bool {
	o := OpsOf(s)
	return map[string]bool{"range": o.Range != nil, "scan": o.Range != nil, "mget": o.MultiGet != nil,
		"mput": o.MultiPut != nil, "mdel": o.MultiDelete != nil, "del": o.DeleteExisted != nil}
}
