package script

import (
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
	lua "github.com/yuin/gopher-lua"
)

// worker is one client: a Lua state of its own, reused for every call,
// the script's table in it, and what it measured.
type worker struct {
	id    int
	L     *lua.LState
	load  *lua.LFunction // nil: the script has none
	run   *lua.LFunction
	ctx   *lua.LTable // the ctx argument of load and run
	store Store
	ops_  Ops // the store's native operations (nil: fall back)

	measuring bool
	hist      [numOps]*hdr.Histogram
	prim      [numOps]int64 // primitive ops, by kind (a key of mget counts one)
	hits      int64
	misses    int64
	ops       atomic.Int64 // primitive ops so far, load and run, for progress
	// calls is incremented as each call of load or run begins and again
	// as it ends: odd while a call runs. The watchdog reads it (a clock
	// read per call would cost the floor more).
	calls atomic.Uint64
	// engineNs is the time spent inside the store's calls so far: the
	// watchdog leaves it out of a call's time, so that a slow engine
	// seeding many keys in one load call is not taken for a runaway
	// script.
	engineNs atomic.Int64

	// written counts the key and value bytes the run's puts wrote, over
	// every worker; maxBytes is Limits.Bytes.
	written  *atomic.Int64
	maxBytes int64

	kbuf, vbuf []byte
	keys, vals [][]byte
	kstore     []byte // backing store of keys/vals for mget/mput/mdel
	offs       []int  // offsets into kstore, reused by mput and keyList
	// scan is kept for the next kv.range or kv.scan; a call takes it
	// (and a nested call, from inside a kv.scan function, finds none and
	// makes its own), so no call allocates its row buffers anew.
	scan *scanBuf
}

// scanBuf is the row buffer of one kv.range or kv.scan: the rows of a
// chunk copied out of the store, as offsets into one arena.
type scanBuf struct {
	arena  []byte
	rows   []scanRow
	lo, hi []byte
	add    func(k, v []byte) bool // copies a row in: the store's callback, made once
}

func newScanBuf() *scanBuf {
	b := new(scanBuf)
	b.add = func(k, v []byte) bool {
		r := scanRow{k: len(b.arena)}
		b.arena = append(b.arena, k...)
		r.v = len(b.arena)
		b.arena = append(b.arena, v...)
		r.end = len(b.arena)
		b.rows = append(b.rows, r)
		return true
	}
	return b
}

// scanRow is one row of a chunk: arena[k:v] is its key, arena[v:end]
// its value.
type scanRow struct{ k, v, end int }

// epoch is the origin of now.
var epoch = time.Now()

// now is the clock engine calls are timed by, two reads around each;
// tests replace it. It reads the monotonic clock alone, as a duration
// since epoch (time.Now reads the wall clock too, a second system clock
// read per call that the floor would pay).
var now = func() time.Duration { return time.Since(epoch) }

// maxLatency is the largest latency a histogram records (longer ones are
// clamped to it): one minute.
const maxLatency = int64(time.Minute)

func newWorker(p *Program, id int, store Store, lim Limits, seed int64, fields map[string]int64, written *atomic.Int64) (*worker, error) {
	s := uint64(seed)
	o := OpsOf(store)
	w := &worker{id: id, store: o.Store, ops_: o, written: written, maxBytes: lim.Bytes}
	for i := range w.hist {
		w.hist[i] = hdr.New(1, maxLatency, 3)
	}
	w.scan = newScanBuf()
	w.L = newState(lim, rand.New(rand.NewPCG(s, uint64(id)+1)))
	w.L.SetGlobal("kv", w.kvTable())
	t, err := instantiate(w.L, p)
	if err != nil {
		w.L.Close()
		return nil, err
	}
	w.run = t.RawGetString("run").(*lua.LFunction)
	if f, ok := t.RawGetString("load").(*lua.LFunction); ok {
		w.load = f
	}
	w.ctx = w.L.NewTable()
	for k, v := range fields {
		w.ctx.RawSetString(k, lua.LNumber(v))
	}
	w.ctx.RawSetString("thread", lua.LNumber(id))
	return w, nil
}

// call calls fn(ctx) once, timed by the watchdog.
func (w *worker) call(fn *lua.LFunction) error {
	w.calls.Add(1)
	w.L.Push(fn)
	w.L.Push(w.ctx)
	err := w.L.PCall(1, 0, nil)
	w.calls.Add(1)
	return err
}

// record adds one engine call of kind op that did n primitive ops and
// took d.
func (w *worker) record(op int, n int, d time.Duration) {
	w.ops.Add(int64(n))
	w.engineNs.Add(int64(d))
	if !w.measuring {
		return
	}
	w.prim[op] += int64(n)
	ns := min(max(int64(d), 1), maxLatency)
	w.hist[op].RecordValue(ns)
}

// wrote counts n bytes about to be written by a put and fails the call
// when they take the run past Limits.Bytes.
func (w *worker) wrote(op string, n int) {
	if w.maxBytes > 0 && w.written.Add(int64(n)) > w.maxBytes {
		w.L.RaiseError("kv.%s: %v: the run's puts would write more than %d bytes of keys and values", op, ErrBytes, w.maxBytes)
	}
}

func (w *worker) fail(op string, err error) {
	w.L.RaiseError("kv.%s: %v", op, err)
}

func (w *worker) key(L *lua.LState, n int) []byte {
	s := L.CheckString(n)
	if s == "" {
		L.ArgError(n, "empty key")
	}
	w.kbuf = append(w.kbuf[:0], s...)
	return w.kbuf
}

// kvTable is the kv global of w's state.
func (w *worker) kvTable() *lua.LTable {
	L := w.L
	t := L.NewTable()
	set := func(name string, fn lua.LGFunction) { t.RawSetString(name, L.NewFunction(fn)) }

	set("put", func(L *lua.LState) int {
		k := w.key(L, 1)
		w.vbuf = append(w.vbuf[:0], L.CheckString(2)...)
		w.wrote("put", len(k)+len(w.vbuf))
		t0 := now()
		err := w.store.Put(k, w.vbuf)
		w.record(opPut, 1, now()-t0)
		if err != nil {
			w.fail("put", err)
		}
		return 0
	})
	set("get", func(L *lua.LState) int {
		k := w.key(L, 1)
		t0 := now()
		v, ok, err := w.store.Get(k)
		w.record(opGet, 1, now()-t0)
		if err != nil {
			w.fail("get", err)
		}
		if !ok {
			w.misses += b2i(w.measuring)
			L.Push(lua.LNil)
			return 1
		}
		w.hits += b2i(w.measuring)
		L.Push(lua.LString(v))
		return 1
	})
	set("del", func(L *lua.LState) int {
		k := w.key(L, 1)
		var existed bool
		var err error
		t0 := now()
		if w.ops_.DeleteExisted != nil {
			existed, err = w.ops_.DeleteExisted(k)
		} else {
			_, existed, err = w.store.Get(k)
			if err == nil {
				err = w.store.Delete(k)
			}
		}
		w.record(opDel, 1, now()-t0)
		if err != nil {
			w.fail("del", err)
		}
		L.Push(lua.LBool(existed))
		return 1
	})
	set("range", func(L *lua.LState) int {
		lo, hi, limit := L.CheckString(1), L.CheckString(2), L.OptInt(3, 0)
		// L.NewTable preallocates 32 array and 32 hash slots; a range
		// of ten rows needs eleven small tables, sized here.
		out := L.CreateTable(0, 0)
		var d time.Duration
		w.scanChunks("range", lo, hi, limit, &d, func(k, v []byte) bool {
			row := L.CreateTable(0, 2)
			row.RawSetString("key", lua.LString(k))
			row.RawSetString("val", lua.LString(v))
			out.Append(row)
			return true
		})
		w.record(opRange, 1, d)
		L.Push(out)
		return 1
	})
	set("scan", func(L *lua.LState) int {
		lo, hi := L.CheckString(1), L.CheckString(2)
		fn := L.CheckFunction(3)
		limit := L.OptInt(4, 0)
		var d time.Duration
		w.scanChunks("scan", lo, hi, limit, &d, func(k, v []byte) bool {
			L.Push(fn)
			L.Push(lua.LString(k))
			L.Push(lua.LString(v))
			L.Call(2, 1)
			stop := lua.LVAsBool(L.Get(-1))
			L.Pop(1)
			return !stop
		})
		w.record(opRange, 1, d)
		return 0
	})
	set("mget", func(L *lua.LState) int {
		keys := w.keyList(L, 1)
		out := L.CreateTable(len(keys), 0)
		found := 0
		t0 := now()
		var err error
		if w.ops_.MultiGet != nil {
			err = w.ops_.MultiGet(keys, func(i int, v []byte, ok bool) {
				if ok {
					found++
					out.RawSetInt(i+1, lua.LString(v))
				} else {
					out.RawSetInt(i+1, lua.LFalse)
				}
			})
		} else {
			for i, k := range keys {
				v, ok, e := w.store.Get(k)
				if e != nil {
					err = e
					break
				}
				if ok {
					found++
					out.RawSetInt(i+1, lua.LString(v))
				} else {
					out.RawSetInt(i+1, lua.LFalse)
				}
			}
		}
		w.record(opMget, len(keys), now()-t0)
		if err != nil {
			w.fail("mget", err)
		}
		if w.measuring {
			w.hits += int64(found)
			w.misses += int64(len(keys) - found)
		}
		L.Push(out)
		return 1
	})
	set("mput", func(L *lua.LState) int {
		rows := L.CheckTable(1)
		w.keys, w.vals, w.kstore = w.keys[:0], w.vals[:0], w.kstore[:0]
		offs := w.offs[:0]
		for i := 1; i <= rows.Len(); i++ {
			row, ok := rows.RawGetInt(i).(*lua.LTable)
			if !ok {
				L.ArgError(1, fmt.Sprintf("row %d is not a table {key=, val=}", i))
			}
			k, ok1 := row.RawGetString("key").(lua.LString)
			v, ok2 := row.RawGetString("val").(lua.LString)
			if !ok1 || !ok2 || k == "" {
				L.ArgError(1, fmt.Sprintf("row %d: want {key = non-empty string, val = string}", i))
			}
			offs = append(offs, len(w.kstore))
			w.kstore = append(w.kstore, k...)
			offs = append(offs, len(w.kstore))
			w.kstore = append(w.kstore, v...)
		}
		offs = append(offs, len(w.kstore))
		w.offs = offs
		for i := 0; i+2 < len(offs); i += 2 {
			w.keys = append(w.keys, w.kstore[offs[i]:offs[i+1]])
			w.vals = append(w.vals, w.kstore[offs[i+1]:offs[i+2]])
		}
		w.wrote("mput", len(w.kstore))
		t0 := now()
		var err error
		if w.ops_.MultiPut != nil {
			err = w.ops_.MultiPut(w.keys, w.vals)
		} else {
			for i := range w.keys {
				if err = w.store.Put(w.keys[i], w.vals[i]); err != nil {
					break
				}
			}
		}
		w.record(opMput, len(w.keys), now()-t0)
		if err != nil {
			w.fail("mput", err)
		}
		return 0
	})
	set("mdel", func(L *lua.LState) int {
		keys := w.keyList(L, 1)
		t0 := now()
		var err error
		if w.ops_.MultiDelete != nil {
			err = w.ops_.MultiDelete(keys)
		} else {
			for _, k := range keys {
				if err = w.store.Delete(k); err != nil {
					break
				}
			}
		}
		w.record(opMdel, len(keys), now()-t0)
		if err != nil {
			w.fail("mdel", err)
		}
		return 0
	})
	return t
}

// keyList reads argument n, an array of non-empty key strings, into
// w.keys (backed by w.kstore).
func (w *worker) keyList(L *lua.LState, n int) [][]byte {
	t := L.CheckTable(n)
	w.keys, w.kstore = w.keys[:0], w.kstore[:0]
	offs := w.offs[:0]
	for i := 1; i <= t.Len(); i++ {
		k, ok := t.RawGetInt(i).(lua.LString)
		if !ok || k == "" {
			L.ArgError(n, fmt.Sprintf("key %d is not a non-empty string", i))
		}
		offs = append(offs, len(w.kstore))
		w.kstore = append(w.kstore, k...)
	}
	offs = append(offs, len(w.kstore))
	w.offs = offs
	for i := 0; i+1 < len(offs); i++ {
		w.keys = append(w.keys, w.kstore[offs[i]:offs[i+1]])
	}
	return w.keys
}

// scanChunk is how many rows kv.range and kv.scan ask the store for at a
// time: the rows are copied out of the store's call before the script
// sees them, so the script's function never runs inside the store (where
// a write of its own could deadlock).
const scanChunk = 256

// scanChunks reads [lo, hi) from the store, at most limit rows (0: all),
// scanChunk at a time, adding the time of the store's calls to d, and
// calls fn for each row until it returns false.
func (w *worker) scanChunks(op, lo, hi string, limit int, d *time.Duration, fn func(k, v []byte) bool) {
	if w.ops_.Range == nil {
		w.L.RaiseError("kv.%s: this store cannot read keys in order", op)
	}
	b := w.scan
	if b == nil {
		b = newScanBuf() // a scan inside a kv.scan function: its own buffer
	}
	w.scan = nil
	defer func() { w.scan = b }()
	b.lo = append(b.lo[:0], lo...)
	b.hi = append(b.hi[:0], hi...)
	left := limit
	for {
		n := scanChunk
		if limit > 0 {
			n = min(n, left)
		}
		b.rows, b.arena = b.rows[:0], b.arena[:0]
		t0 := now()
		err := w.ops_.Range(b.lo, b.hi, n, b.add)
		*d += now() - t0
		if err != nil {
			w.fail(op, err)
		}
		for _, r := range b.rows {
			if !fn(b.arena[r.k:r.v], b.arena[r.v:r.end]) {
				return
			}
		}
		left -= len(b.rows)
		if len(b.rows) < n || (limit > 0 && left <= 0) {
			return
		}
		last := b.rows[len(b.rows)-1]
		b.lo = append(append(b.lo[:0], b.arena[last.k:last.v]...), 0)
	}
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
