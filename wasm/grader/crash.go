package grader

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"kvlab/engine/vfs"
	"kvlab/gohost"
	"kvlab/gohost/kvfs"
)

// This file is the machinery of the crash exercises: a student's store is
// run once through a fixed workload on an vfs.MemFS, the filesystem is
// copied after every operation, and each copy is put through power cuts
// and reopened by the student's Open. The first acknowledged write that
// does not come back is reported with the operation the power cut
// followed and the rule the store broke.

// opens counts the calls of openStore, the unit of a grading's cost.
var opens int

// crashDir is the directory the student's FS is rooted in.
const crashDir = "/db"

// Bounds on what a student's store may do in one open or one workload:
// past them the FS fails every operation, so a store that loops writing
// ends with an error rather than eating the page's memory. The recording
// keeps a copy of the disk after every operation, so together they bound
// it at about crashMaxOps × crashMaxBytes (150 MiB, for a store that
// writes its whole log again many times); a correct store of the
// exercises needs at most some 90 operations and a log of under 100 KiB
// on the largest workload drawn (TestWorkloadBounds).
const (
	crashMaxBytes = 256 << 10
	crashMaxOps   = 600
)

// openStore calls the student's Open on fsys (gohost.OpenStore), counted
// in opens. A panic comes back as a *gohost.PanicError.
func openStore(p *program, fsys kvfs.FS) (*gohost.Store, error) {
	opens++
	return gohost.OpenStore(p.Program, fsys)
}

// newMemFS returns an empty MemFS with crashDir in it.
func newMemFS() *vfs.MemFS {
	m := vfs.NewMemFS()
	if err := m.MkdirAll(crashDir, 0o755); err != nil {
		panic("grader: MkdirAll on a fresh MemFS: " + err.Error())
	}
	m.SetLimit(crashMaxBytes)
	return m
}

// newFS returns the student's view of m; after, when not nil, sees every
// operation.
func newFS(m *vfs.MemFS, after func(kvfs.Op)) kvfs.FS {
	return kvfs.New(m, crashDir, kvfs.Config{MaxOps: crashMaxOps, After: after})
}

// kv is one Put of a workload.
type kv struct{ key, value string }

// putCall is how one Put of the workload went.
type putCall struct {
	kv
	// before is the number of operations done when the Put was called;
	// its own operations are numbered before+1 .. acked.
	before int
	// acked is the number of operations done when the Put returned: a
	// power cut after operation acked or later comes after the
	// acknowledgement.
	acked int
	err   error
}

// recording is one run of a workload: every operation, the filesystem
// after each, and the Puts.
type recording struct {
	ops   []kvfs.Op
	snaps []*vfs.MemFS // snaps[c] is the filesystem after operation c; snaps[0] before any
	puts  []putCall
	// final is the filesystem as the workload left it, stopped (Kill):
	// a goroutine the store left running cannot change it, nor the
	// recording, any more.
	final *vfs.MemFS
	// gets[i], when the workload was run with a fault, is what Get of
	// Put i's key returned right after it; store is the store as the
	// workload left it.
	gets  []getResult
	store *gohost.Store
	// saves marks a recording of atomic-replace: its puts are Saves,
	// the first the version already on the disk.
	saves bool
	// cutFrom is the first cut point cutAll tries (0: before the first
	// operation).
	cutFrom int
	// checked holds the disks cutAll checked, by (cut point,
	// fingerprint), and how each went (nil: passed).
	checked map[[2]uint64]*cutFailure
	// mu guards ops and snaps while the workload runs, and done, which
	// ends the recording.
	mu   sync.Mutex
	done bool
}

// finish ends the recording of m: later operations (of a goroutine the
// student's store left running) are not recorded, and fail.
func (r *recording) finish(m *vfs.MemFS) {
	r.mu.Lock()
	r.done = true
	r.mu.Unlock()
	r.final = m.Kill()
}

// record opens the student's store on a fresh MemFS and runs the Puts of
// work, keeping a copy of the filesystem after every operation. An error
// is a failure of Open or of a Put (p.err), or a panic.
func record(p *program, work []kv) (*recording, error) {
	return recordFaulty(p, work, nil)
}

// recordFaulty is record on a MemFS set up by fault (nil: none), which
// may arm a failure: then a failed Put does not end the workload, as the
// store's answer to the Puts after it is part of the grading.
func recordFaulty(p *program, work []kv, fault func(m *vfs.MemFS, put *atomic.Int64)) (*recording, error) {
	m := newMemFS()
	var current atomic.Int64
	current.Store(-1)
	if fault != nil {
		fault(m, &current)
	}
	rec, fsys := recordOn(m)
	s, err := openStore(p, fsys)
	if err != nil {
		return rec, fmt.Errorf("Open on an empty directory failed: %w", err)
	}
	for i, w := range work {
		current.Store(int64(i))
		c := putCall{kv: w, before: fsys.Ops()}
		c.err = s.Put(w.key, w.value)
		c.acked = fsys.Ops()
		rec.puts = append(rec.puts, c)
		if c.err != nil && fault == nil {
			return rec, fmt.Errorf("%s failed with no power cut: %w", putText(w), c.err)
		}
		if fault != nil {
			rec.gets = append(rec.gets, getAfter(s, w))
		}
	}
	rec.finish(m)
	rec.store = s
	return rec, nil
}

// getAfter is what Get returned for the key of w right after its Put.
func getAfter(s *gohost.Store, w kv) getResult {
	v, ok, err := s.Get(w.key)
	return getResult{v, ok, err}
}

// getResult is one Get's answer.
type getResult struct {
	value string
	ok    bool
	err   error
}

// recordOn returns a recording of m, starting now, and the student's
// view of m, which adds every operation and a copy of m after it to the
// recording.
func recordOn(m *vfs.MemFS) (*recording, kvfs.FS) {
	return recordFrom(m, m.Copy())
}

// recordFrom is recordOn with the filesystem before the first operation
// given: before, which may be nil when nothing will read it.
func recordFrom(m, before *vfs.MemFS) (*recording, kvfs.FS) {
	rec := &recording{snaps: []*vfs.MemFS{before}}
	return rec, newFS(m, func(op kvfs.Op) {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		if !rec.done {
			op.Line = gohost.StudentLine()
			rec.ops = append(rec.ops, op)
			rec.snaps = append(rec.snaps, m.Copy())
		}
	})
}

// syncsIn counts the fdatasyncs and directory fsyncs among operations
// from+1 .. to.
func (r *recording) syncsIn(from, to int) int {
	n := 0
	for _, op := range r.ops[from:to] {
		if op.Kind == "fdatasync" || op.Kind == "fsync-dir" {
			n++
		}
	}
	return n
}

// expected returns, for a power cut after operation c, each key that was
// acknowledged by then with the values it may hold after the reboot: the
// value of its last acknowledged Put, or of a later Put of the same key
// that had started before the cut. last is that acknowledged Put.
func (r *recording) expected(c int) (keys []string, allowed map[string][]string, last map[string]putCall) {
	return expectedOf(r.puts, c)
}

// expectedOf is expected for the Puts puts.
func expectedOf(puts []putCall, c int) (keys []string, allowed map[string][]string, last map[string]putCall) {
	allowed, last = map[string][]string{}, map[string]putCall{}
	for _, p := range puts {
		switch {
		case p.err == nil && p.acked <= c:
			if _, ok := last[p.key]; !ok {
				keys = append(keys, p.key)
			}
			last[p.key] = p
			allowed[p.key] = []string{p.value}
		case p.before < c:
			if _, ok := last[p.key]; ok {
				allowed[p.key] = append(allowed[p.key], p.value)
			}
		}
	}
	return keys, allowed, last
}

// cut is one power cut to try: after operation c, in a mode, with the
// unsynced data chosen by seed (0: none of it survives).
type cut struct {
	c    int
	mode vfs.PowerMode
	seed uint64
	// again, when > 0, is a second power cut: after operation again of
	// the Open that recovered from the first (againOp), or, when that is
	// the last of Open's operations, after the recovery.
	again   int
	againOp kvfs.Op
	// inRecovery marks the open after a second cut: it is not cut again.
	inRecovery bool
	// fp is the fingerprint of the disk the cut left, when known (0:
	// not computed yet).
	fp uint64
}

// cutFailure is the first thing a cut broke.
type cutFailure struct {
	cut
	what string   // "key k3 was acknowledged at operation 5 but is gone"
	put  *putCall // the acknowledged Put that did not come back, if that was the failure
	kind string   // what else failed, for an exercise's hint ("" for a lost Put or a failed Open)
	// recovery is what the Open that recovered from the first cut did
	// to the disk, when the failure came after a second cut within it.
	recovery []kvfs.Op
}

// trialSeeds are the choices of unsynced data each cut point is tried
// with: none of it survives, and two random ones.
var trialSeeds = []uint64{0, 1, 2}

// cutAll cuts the power after every operation of rec in mode, once for
// each of seeds (the choice of what unsynced survives; 0: nothing), and
// runs check on the filesystem each cut leaves; it returns the first
// failure, or nil, and the number of points tried.
//
// A disk that an earlier choice or mode already left at the same point
// (after an fdatasync, every choice leaves the same) is not checked again:
// the student's Open sees the same bytes and does the same, so the
// verdict it had then stands.
func cutAll(rec *recording, mode vfs.PowerMode, seeds []uint64, check func(k cut, m *vfs.MemFS) *cutFailure) (*cutFailure, int) {
	points := 0
	if rec.checked == nil {
		rec.checked = map[[2]uint64]*cutFailure{}
	}
	clean := rec.cleanPoints()
	for c := rec.cutFrom; c < len(rec.snaps); c++ {
		points++
		for _, seed := range seeds {
			if seed != 0 && clean[c] {
				// Nothing unsynced to choose from: every choice
				// leaves the disk seed 0 left.
				continue
			}
			m := cutDisk(rec, cut{c: c, mode: mode, seed: seed})
			fp := fingerprint(m)
			key := [2]uint64{uint64(c), fp}
			if f, seen := rec.checked[key]; seen {
				if f != nil {
					return f, points
				}
				continue
			}
			f := check(cut{c: c, mode: mode, seed: seed, fp: fp}, m)
			rec.checked[key] = f
			if f != nil {
				return f, points
			}
		}
	}
	return nil, points
}

// cleanPoints returns, for each cut point c of r (0 .. len(r.ops)),
// whether nothing was unsynced after operation c: no file written,
// truncated or created since its last fdatasync, no name created, renamed
// or removed since the last directory fsync. A power cut there leaves the
// same disk whatever it chooses of the unsynced data. The recording must
// start with nothing unsynced (a workload's does: an empty disk, or one
// the grader synced); an operation that failed is not recorded, so a file
// whose fdatasync failed counts as unsynced, which only costs a check.
func (r *recording) cleanPoints() []bool {
	clean := make([]bool, len(r.ops)+1)
	dirty := map[string]bool{}
	dirDirty := false
	clean[0] = true
	for i, op := range r.ops {
		switch op.Kind {
		case "write", "truncate":
			dirty[op.File] = true
		case "create":
			dirty[op.File], dirDirty = true, true
		case "rename":
			dirty[op.File], dirDirty = dirty[op.From], true
			delete(dirty, op.From)
		case "remove":
			delete(dirty, op.File)
			dirDirty = true
		case "fdatasync":
			delete(dirty, op.File)
		case "fsync-dir":
			dirDirty = false
		}
		clean[i+1] = !dirDirty && len(dirty) == 0
	}
	return clean
}

// checkReopen opens the student's store on m, as it is after the cut k,
// and reads back every key acknowledged before it.
func checkReopen(p *program, rec *recording, k cut, m *vfs.MemFS) *cutFailure {
	_, f := openAndRead(p, k, m, rec.puts)
	return f
}

// recoverySeeds are the choices of unsynced data a second power cut,
// during or after a recovery, is tried with: none of it, and one random.
var recoverySeeds = []uint64{0, 1}

// openAndRead opens the student's store on m, as it is after the cut k,
// and reads back every key that puts acknowledged before it; it returns
// the open store when this call opened it (nil when an Open on the same
// bytes was done before, openCache). Every operation of that Open (a
// truncated tail, a rewritten log) is a point to cut the power again:
// after each, the store is opened once more and must still find every
// key.
func openAndRead(p *program, k cut, m *vfs.MemFS, puts []putCall) (*gohost.Store, *cutFailure) {
	fp := k.fp
	if fp == 0 {
		fp = fingerprint(m)
	}
	o, s := p.cache.open(p, m, fp, !k.inRecovery)
	if o.err != nil {
		return s, &cutFailure{cut: k, what: "Open failed: " + o.err.Error()}
	}
	if f := readBack(o.get, k, puts); f != nil {
		return s, f
	}
	rec := o.rec
	if k.inRecovery || rec == nil {
		return s, nil
	}
	seen := map[uint64]bool{fp: true} // the disk this Open started from passed
	for c2 := 1; c2 < len(rec.snaps); c2++ {
		for _, seed := range recoverySeeds {
			var rng *rand.Rand
			if seed != 0 {
				rng = rand.New(rand.NewPCG(seed^k.seed, uint64(k.c)<<20|uint64(c2)))
			}
			m2 := rec.snaps[c2].PowerImage(k.mode, rng)
			fp2 := fingerprint(m2)
			if seen[fp2] {
				continue
			}
			seen[fp2] = true
			k2 := k
			k2.again, k2.againOp, k2.inRecovery, k2.fp = c2, rec.ops[c2-1], true, fp2
			if _, f := openAndRead(p, k2, m2, puts); f != nil {
				f.recovery = rec.ops
				return s, f
			}
		}
	}
	return s, nil
}

// readBack reads every key puts acknowledged before the cut k with get
// (a Get of the store as Open left it).
func readBack(get func(key string) (string, bool, error), k cut, puts []putCall) *cutFailure {
	keys, allowed, last := expectedOf(puts, k.c)
	// Keys whose value is empty last: a store that loses only those
	// has a mistake of its own (emptyValueRule).
	sort.SliceStable(keys, func(i, j int) bool { return last[keys[i]].value != "" && last[keys[j]].value == "" })
	for _, key := range keys {
		a := last[key]
		got, ok, err := get(key)
		var what string
		switch {
		case err != nil:
			what = fmt.Sprintf("Get(%s) failed: %v", quote(key), err)
		case !ok:
			what = fmt.Sprintf("key %s was acknowledged at operation %d but is gone", quote(key), a.acked)
		case !contains(allowed[key], got):
			what = fmt.Sprintf("key %s was acknowledged at operation %d as %s but came back as %s", quote(key), a.acked, quote(a.value), quote(got))
			if !everPut(puts, key, got) {
				return &cutFailure{cut: k, what: what + ", a value no Put wrote", put: &a, kind: neverWritten}
			}
		default:
			continue
		}
		return &cutFailure{cut: k, what: what, put: &a}
	}
	return nil
}

// neverWritten is the kind of failure where Get returned a value no Put
// of its key wrote.
const neverWritten = "never written"

// everPut reports whether a Put of puts wrote value to key.
func everPut(puts []putCall, key, value string) bool {
	for _, p := range puts {
		if p.key == key && p.value == value {
			return true
		}
	}
	return false
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// opAt describes operation c ("after operation 3 (write log @0, 21 bytes)"),
// or the start when c is 0.
func (r *recording) opAt(c int) string {
	if c == 0 {
		return "before the first operation"
	}
	return fmt.Sprintf("after operation %d (%s)", c, r.ops[c-1])
}

// message is the failure in the page's voice: where the power was cut,
// what was lost, and the rule.
func (f *cutFailure) message(r *recording) string {
	if f.again > 0 {
		return fmt.Sprintf("power cut %s; %s", r.opAt(f.c), f.secondCut("a second"))
	}
	return fmt.Sprintf("power cut %s: %s", r.opAt(f.c), f.what)
}

// secondCut describes a failure after a cut during the recovery: what
// the recovering Open did and where the power was cut (called "which").
func (f *cutFailure) secondCut(which string) string {
	when := fmt.Sprintf("after its operation %d (%s)", f.again, f.againOp)
	if f.again == len(f.recovery) {
		when = fmt.Sprintf("after it was done (its last operation: %s)", f.againOp)
	}
	return fmt.Sprintf("the reopen's Open did %d operation(s), and %s power cut %s: %s", len(f.recovery), which, when, f.what)
}

// traceNote lists the operations up to operation c, the last ones if
// there are many.
func (r *recording) traceNote(c int) string {
	const show = 12
	from := max(0, c-show)
	var b strings.Builder
	fmt.Fprintf(&b, "Operations up to the power cut")
	if from > 0 {
		fmt.Fprintf(&b, " (the last %d of %d)", c-from, c)
	}
	b.WriteString(":")
	for _, op := range r.ops[from:c] {
		fmt.Fprintf(&b, " %d `%s`", op.N, op)
		if op.N < c {
			b.WriteString(" ·")
		}
	}
	if c == 0 {
		b.WriteString(" none")
	}
	return b.String()
}

// ackRule names the durability rule a lost acknowledged Put broke, read
// from the operations between its start and its acknowledgement: its
// record must be written, then fdatasynced, and the file's name must be
// durable (a directory fsync after the file was created), all before the
// Put returns. It returns "" when the Put kept every rule (the loss is
// then Open's doing), and the number of the operation whose promise
// broke: the write never synced, the create never made durable (0 for a
// Put that wrote nothing).
func (r *recording) ackRule(p *putCall) (string, int) {
	if rule := r.unwritten(p); rule != "" {
		return rule, 0
	}
	own := r.ops[p.before:p.acked]
	lastWrite := -1
	for i, op := range own {
		if op.Kind == "write" {
			lastWrite = i
		}
	}
	file := own[lastWrite].File
	synced := false
	for _, op := range own[lastWrite+1:] {
		if op.Kind == "fdatasync" && op.File == file {
			synced = true
		}
	}
	if !synced {
		return "you acknowledged before its fdatasync: Put must Sync the file after writing the record and before it returns", own[lastWrite].N
	}
	// The file's name: the last create of it before the ack, and a
	// directory fsync after that.
	created := -1
	for i, op := range r.ops[:p.acked] {
		if (op.Kind == "create" || op.Kind == "rename") && op.File == file {
			created = i
		}
	}
	if created >= 0 {
		for _, op := range r.ops[created+1 : p.acked] {
			if op.Kind == "fsync-dir" {
				return "", 0
			}
		}
		return fmt.Sprintf("%s was created at operation %d but the directory was never fsynced before the acknowledgement, so a power cut loses the name and the file with it: call SyncDir after Create", file, created+1), r.ops[created].N
	}
	return "", 0
}

// unwritten names the rule when the Put wrote nothing before returning,
// and is "" when it wrote.
func (r *recording) unwritten(p *putCall) string {
	for _, op := range r.ops[p.before:p.acked] {
		if op.Kind == "write" {
			return ""
		}
	}
	return fmt.Sprintf("Put(%s) returned without writing its record", quote(p.key))
}

// crashLimitMs is the page's time limit for a crash exercise's Run: the
// grading reopens the store at every crash point, some hundred times, and
// a busy machine's browser must not stop a correct solution as if it
// looped forever.
const crashLimitMs = 10000
