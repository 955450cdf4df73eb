package grader

import (
	"fmt"
	"strings"
	"sync/atomic"
	"syscall"

	"kvlab/engine/vfs"
	"kvlab/gohost"
	"kvlab/gohost/kvfs"
)

// The exercise "durable-ack": Put returns only once its record is durable.

// recordEncode is the record format of the crash exercises, with the
// engine's checksum: given in durable-ack, written in torn-tail.
const recordEncode = `
// table is CRC-32C, the checksum the engine's records carry.
var table = crc32.MakeTable(crc32.Castagnoli)

// encode frames one record:
//
//	| CRC (4B) | key length (2B) | value length (2B) | key | value |
//
// little-endian; the CRC covers everything after it.
func encode(key, value string) []byte {
	b := make([]byte, 8, 8+len(key)+len(value))
	b[4], b[5] = byte(len(key)), byte(len(key)>>8)
	b[6], b[7] = byte(len(value)), byte(len(value)>>8)
	b = append(b, key...)
	b = append(b, value...)
	c := crc32.Checksum(b[4:], table)
	b[0], b[1], b[2], b[3] = byte(c), byte(c>>8), byte(c>>16), byte(c>>24)
	return b
}
`

// ackDecode is durable-ack's given decoder.
const ackDecode = `
// decode calls put for each whole, intact record at the start of data and
// returns the length of those records: it stops at the first record that
// is cut short or does not match its CRC (a torn tail).
func decode(data []byte, put func(key, value string)) int {
	off := 0
	for off+8 <= len(data) {
		klen := int(data[off+4]) | int(data[off+5])<<8
		vlen := int(data[off+6]) | int(data[off+7])<<8
		end := off + 8 + klen + vlen
		if end > len(data) {
			break
		}
		c := uint32(data[off]) | uint32(data[off+1])<<8 | uint32(data[off+2])<<16 | uint32(data[off+3])<<24
		if crc32.Checksum(data[off+4:end], table) != c {
			break
		}
		put(string(data[off+8:off+8+klen]), string(data[off+8+klen:end]))
		off = end
	}
	return off
}
`

// truncateTail is the end of Open in the solutions: it cuts a torn tail
// off, so new records follow the last good one.
const truncateTail = `	if good < len(data) {
		// A torn tail: cut it off, so new records follow the last good one.
		if err := s.log.Truncate(int64(good)); err != nil {
			return nil, err
		}
	}
`

// storeParts are the pieces in which the crash exercises' stubs and
// solutions differ; storeSource puts them into one program.
type storeParts struct {
	imports string // besides hash/crc32 and kvfs, each line "\t\"name\"\n"
	newLog  string // what Open does after it created the log
	scan    string // the statements of Open that read data into s.index and set good
	tail    string // what Open does with data[good:]
	put     string // the body of Put before it updates the index
	codec   string // the record functions
}

// storeSource is a store of the crash exercises: a log file "log" and an
// index in memory.
func storeSource(p storeParts) string {
	return `package main

import (
` + p.imports + `	"hash/crc32"
	"kvfs"
)

// Store is a log of records in the file "log" and an index of it in memory.
type Store struct {
	log   kvfs.File
	index map[string]string
	err   error // the first failed write or Sync: every later Put fails with it
}

// Open rebuilds the index from the log, creating the log if there is none.
func Open(fs kvfs.FS) (*Store, error) {
	s := &Store{index: map[string]string{}}
	data, err := fs.ReadFile("log")
	if kvfs.IsNotExist(err) {
		if s.log, err = fs.Create("log"); err != nil {
			return nil, err
		}
` + p.newLog + `		return s, nil
	}
	if err != nil {
		return nil, err
	}
` + p.scan + `	if s.log, err = fs.OpenAppend("log"); err != nil {
		return nil, err
	}
` + p.tail + `	return s, nil
}

// Put appends a record and returns once it is durable.
func (s *Store) Put(key, value string) error {
	if s.err != nil {
		return s.err
	}
` + p.put + `	s.index[key] = value
	return nil
}

// Get returns the value of key.
func (s *Store) Get(key string) (string, bool) {
	v, ok := s.index[key]
	return v, ok
}
` + p.codec
}

// Pieces of the solutions.
const (
	syncDirNewLog = `		// The new name is durable only once the directory is synced.
		if err := fs.SyncDir(); err != nil {
			return nil, err
		}
`
	writeSyncPut = `	if _, err := s.log.Write(encode(key, value)); err != nil {
		s.err = err
		return err
	}
	if err := s.log.Sync(); err != nil {
		// After a failed fdatasync Linux marks the pages clean: a retry
		// succeeds without writing them. The error must stick.
		s.err = err
		return err
	}
`
)

var (
	ackSolution = storeSource(storeParts{
		newLog: syncDirNewLog,
		scan:   "\tgood := decode(data, func(key, value string) { s.index[key] = value })\n",
		tail:   truncateTail,
		put:    writeSyncPut,
		codec:  recordEncode + ackDecode,
	})
	ackStub = storeSource(storeParts{
		newLog: "\t\t// TODO: is the name \"log\" durable now?\n",
		scan:   "\tgood := decode(data, func(key, value string) { s.index[key] = value })\n",
		tail:   truncateTail,
		put:    "\t// TODO: write encode(key, value) to s.log, and return only when it\n\t// would survive a power cut. If the write or the Sync fails, keep\n\t// the error in s.err.\n",
		codec:  recordEncode + ackDecode,
	})
)

// faultModel is the fault model the crash exercises grade under, as their
// instructions state it.
const faultModel = "The grader's disk behaves as Linux's ext4 can: nothing written is durable until `Sync` (fdatasync), no new name until `SyncDir`; at a power cut, unsynced bytes may reach the disk in order with the last write torn (`prefix`) or as any subset of their 512-byte sectors (`reorder`); a `Truncate` or a `Create` of an existing file not yet synced may or may not have happened; and an fdatasync can fail with EIO, after which, as on Linux, the failed pages count as clean: the next `Sync` succeeds without writing them. The power is cut after every operation of the workload, and again after every operation of the `Open` that recovers from it. Cases ext4 allows that the grader leaves out: a `SyncDir`, `Rename`, `Create` or `Write` that fails (a full disk only past the grader's bounds), an fdatasync failing in `Open` or twice in a workload; writes torn inside a sector, or sectors that come back garbled or holding another file's old data (data=writeback, ext4's metadata-only journaling) rather than old bytes or zeros; in the log exercises, a new or removed name reaching the disk before `SyncDir` (the journal may commit it early; atomic-replace tries that); and the flush on rename or close (auto_da_alloc) that can save a store that skipped an fdatasync. One way the grader is harsher: ext4's default data=ordered writes an append's new blocks before the size that covers them, where `reorder` may leave a hole inside an append."

var durableAckExercise = &Exercise{
	Name:  "durable-ack",
	Title: "Acknowledge after it is safe",
	Instructions: `Make ` + "`Put`" + ` return only once its record would survive a power cut, and make ` + "`Open`" + ` find every record a ` + "`Put`" + ` acknowledged.

Your store gets a ` + "`kvfs.FS`" + `: one directory with ` + "`Create`, `OpenAppend`, `ReadFile`, `List`, `Rename`, `Remove`" + ` and ` + "`SyncDir`" + `; a ` + "`kvfs.File`" + ` has ` + "`Write`, `WriteAt`, `Sync`" + ` (fdatasync), ` + "`Truncate`, `Size`" + ` and ` + "`Close`" + `. ` + faultModel + `

Each Run draws a new workload at random: some 24 to 40 Puts of keys of any name and length, values from empty to several KiB, some keys written twice; its seed is shown with the results (a line ` + "`// kvlab:seed N`" + ` in your code replays workload N). The grader opens your store on an empty disk, runs the Puts and numbers every operation that changes the disk; it reopens the store with no power cut, and once on an empty disk, where no key may be (keep the index in the ` + "`Store`" + `, not in a package-level variable). Then it cuts the power after each operation in turn, in ` + "`prefix`" + ` and in ` + "`reorder`" + ` mode, each tried with none and with two random choices of the unsynced data surviving; after each cut it reopens your store and reads every key whose ` + "`Put`" + ` had returned: each must hold its value. Last, it runs the workload again with one fdatasync failing: that ` + "`Put`" + ` must return the error, ` + "`Get`" + ` must not serve its value, and any ` + "`Put`" + ` acknowledged after it must survive a power cut. It also counts fdatasyncs and directory fsyncs per ` + "`Put`" + `, and names any that had nothing new to make durable.

The record format (` + "`encode`, `decode`" + `, with a CRC) is given; ` + "`decode`" + ` stops at a torn tail.`,
	Stub:     ackStub,
	Solution: ackSolution,
	LimitMs:  crashLimitMs,
	grade:    gradeDurableAck,
	prelude:  gohost.StorePrelude,
	Measure:  true,
}

// crashModes are the power-cut modes the acknowledgement is graded under.
var crashModes = []vfs.PowerMode{vfs.PowerPrefix, vfs.PowerReorder}

func gradeDurableAck(p *program) Result {
	work := drawWorkload(gradeSeed)
	rec, r := runWorkload(p, work)
	if rec == nil {
		return r
	}
	for _, mode := range crashModes {
		row, note := cutRow(p, rec, mode, work)
		r.Cases = append(r.Cases, row)
		if note != "" && len(r.Notes) == 1 {
			r.Notes = append(r.Notes, note)
		}
	}
	r.Cases = append(r.Cases, syncFailRow(p, work), syncsRow(rec))
	r.Passed = allPass(r.Cases)
	return r
}

// runWorkload runs work on the student's store and reopens it with no
// power cut. It returns the recording and a Result with a row for each
// and the workload's note, or a nil recording when the workload failed.
func runWorkload(p *program, work []kv) (*recording, Result) {
	r := Result{Notes: []string{workloadNote(gradeSeed, gradeSeedGiven, work)}}
	p.cache.setKeys(work)
	rec, err := record(p, work)
	row := Case{
		Input: fmt.Sprintf("Open on an empty disk, then %d Puts, no power cut", len(work)),
		Want:  "no errors",
		Got:   fmt.Sprintf("no errors, %d operations", len(rec.ops)),
		Pass:  err == nil,
	}
	if err != nil {
		row.Got = err.Error()
		row.Hint = "the workload must run before any power is cut"
		r.Cases = append(r.Cases, row)
		return nil, r
	}
	r.Cases = append(r.Cases, row, cleanReopen(p, rec), emptyReopen(p, work))
	return rec, r
}

// emptyReopen opens the store on an empty disk after the workload: no key
// may be there. A store that keeps its index in a package-level variable
// finds the workload's keys in memory, since the grader reopens it in the
// same interpreter; it would pass every power cut without reading a byte.
func emptyReopen(p *program, work []kv) Case {
	c := Case{Input: "Open again, on a second and empty disk", Want: "no keys", Got: "no keys", Pass: true}
	s, err := openStore(p, newFS(newMemFS(), nil))
	if err != nil {
		c.Got, c.Pass = "Open failed: "+err.Error(), false
		return c
	}
	for _, w := range work {
		if _, ok, err := s.Get(w.key); err != nil || ok {
			c.Got, c.Pass = fmt.Sprintf("key %s is there", quote(w.key)), false
			if err != nil {
				c.Got = fmt.Sprintf("Get(%s) failed: %v", quote(w.key), err)
			}
			c.Hint = "Open must build the index from the disk alone: a package-level variable keeps the keys across a reopen here, where a real restart would lose them, and hides every power cut"
			return c
		}
	}
	return c
}

// cleanReopen reopens the store after the workload with every byte still
// there (a process restart, no power cut).
func cleanReopen(p *program, rec *recording) Case {
	c := Case{Input: "reopen after the Puts, no power cut", Want: "every key with its last value", Got: "all there"}
	n := len(rec.ops)
	if f := checkReopen(p, rec, cut{c: n}, rec.final.Kill()); f != nil {
		c.Got = f.what
		c.Hint = "without a power cut every byte written is still there: Open must read back every record"
		if f.recovery != nil {
			c.Got = f.secondCut("a")
			c.Hint, _ = recoveryRule(f)
		}
		if f.put != nil && f.recovery == nil {
			if rule := rec.unwritten(f.put); rule != "" {
				c.Hint = rule
			}
			if rule := emptyValueRule(p, f); rule != "" {
				c.Hint = rule
			}
		}
		return c
	}
	c.Pass = true
	return c
}

// cutRow cuts the power after every operation in mode and turns the first
// failure into a row, shrunk to the fewest Puts of work that still fail,
// and the trace up to it into a note.
func cutRow(p *program, rec *recording, mode vfs.PowerMode, work []kv) (Case, string) {
	c := Case{
		Input: fmt.Sprintf("power cut after each operation, %s mode", mode),
		Want:  "every acknowledged key comes back",
	}
	check := func(rec *recording) (*cutFailure, int) {
		return cutAll(rec, mode, trialSeeds, func(k cut, m *vfs.MemFS) *cutFailure { return checkReopen(p, rec, k, m) })
	}
	f, points := check(rec)
	if f == nil {
		c.Got = fmt.Sprintf("all came back, at %d cut points × %d choices", points, len(trialSeeds))
		c.Pass = true
		return c, ""
	}
	rec, f, work = shrink(p, rec, f, work, check)
	c.Got = f.message(rec) + shrunkNote(work)
	var blame int
	c.Hint, blame = diagnose(p, rec, f)
	c.Timeline = rec.timeline(f, blame)
	return c, rec.traceNote(f.c)
}

// diagnose names the rule behind a failure: one the acknowledged Put
// broke, or else what Open did wrong; and the operation whose promise
// broke, when one did (in f.recovery when f has one), or 0.
func diagnose(p *program, rec *recording, f *cutFailure) (string, int) {
	if f.recovery != nil {
		return recoveryRule(f)
	}
	if f.put == nil {
		return "Open must accept whatever a power cut leaves: no log yet, an empty one, or one with a torn last record", 0
	}
	if rule := emptyValueRule(p, f); rule != "" {
		return rule, 0
	}
	if f.kind == neverWritten {
		return "Open returned bytes that no Put wrote for that key: a torn or garbled record was read as if it were whole; check each record's length and CRC before reading it", 0
	}
	if rule, op := rec.ackRule(f.put); rule != "" {
		return rule, op
	}
	if checkReopen(p, rec, cut{c: f.c, inRecovery: true}, rec.snaps[f.c].Copy()) != nil {
		return "your Open does not find it even with no power cut at this point: Open must read back every record", 0
	}
	if rule, op := rec.overwriteRule(f.put); rule != "" {
		return rule, op
	}
	return "its record was written and synced before the acknowledgement, yet Open did not find it after the power cut: check how Open reads the log", 0
}

// emptyValueRule names the mistake when the key that is gone was put
// with an empty value and the store, asked on a disk of its own, does not
// find a key it just put with an empty value; it is "" otherwise.
func emptyValueRule(p *program, f *cutFailure) string {
	if f.put == nil || f.put.value != "" || !strings.HasSuffix(f.what, "is gone") {
		return ""
	}
	s, err := openStore(p, newFS(newMemFS(), nil))
	if err != nil || s.Put(f.put.key, "") != nil {
		return ""
	}
	if _, ok, err := s.Get(f.put.key); err != nil || ok {
		return ""
	}
	return fmt.Sprintf("the Put of key %s stored an empty value, which is still a value: Get must return (\"\", true) for it; tell a missing key by the map's ok, not by an empty string", quote(f.put.key))
}

// overwriteRule names the mistake of a store that wrote over durable
// bytes between the acknowledgement of p and the cut: an in-place update
// of a slot or a rewritten log, which a power cut catches half done.
func (r *recording) overwriteRule(p *putCall) (string, int) {
	// The extent of every file that was synced, as it was at p's
	// acknowledgement.
	synced := map[string]int64{}
	size := map[string]int64{}
	for i, op := range r.ops {
		switch op.Kind {
		case "create":
			size[op.File], synced[op.File] = 0, 0
		case "write":
			size[op.File] = max(size[op.File], op.Off+int64(op.Len))
			if i >= p.acked && op.Off < synced[op.File] {
				return fmt.Sprintf("operation %d (%s) writes over bytes of %s that an fdatasync had made durable: a power cut in the middle of an overwrite leaves part old and part new, and the old record is lost with it; append new records instead of writing over old ones", op.N, op, op.File), op.N
			}
		case "truncate":
			size[op.File] = op.Off
			if i >= p.acked && op.Off < synced[op.File] {
				return fmt.Sprintf("operation %d (%s) cuts durable records off %s: a truncate may reach the disk before the Sync that follows it, and what was cut off is lost; never shrink a log below its last durable record", op.N, op, op.File), op.N
			}
		case "fdatasync":
			synced[op.File] = size[op.File]
		}
	}
	return "", 0
}

// recoveryRule names what an Open that a second power cut caught in the
// middle did wrong.
func recoveryRule(f *cutFailure) (string, int) {
	for _, op := range f.recovery {
		switch {
		case op.Kind == "create":
			return fmt.Sprintf("your Open re-creates %s (%s), which empties it, and writes the records back: a power cut before they are synced again loses records that were durable. Open may read the log and cut a torn tail off, but never empty or rewrite it", op.File, op), op.N
		case op.Kind == "truncate" && op.Off == 0:
			return fmt.Sprintf("your Open truncates %s to 0 bytes and writes the records back: a power cut before they are synced again loses records that were durable. Open may cut a torn tail off, at the end of the last good record, but never empty the log", op.File), op.N
		case op.Kind == "rename":
			return fmt.Sprintf("your Open replaces the log (%s): the new file must be written and fdatasynced before the rename, and the directory fsynced after it; better, leave the log in place and cut a torn tail off", op), op.N
		case op.Kind == "remove":
			return fmt.Sprintf("your Open removes a file (%s) that may still hold the only durable copy of records", op), op.N
		}
	}
	return "a power cut while your Open repaired the log lost records that were durable: Open may read the log and cut a torn tail off at the end of the last good record, nothing more; writing over or rewriting durable records lets a power cut catch them half done", 0
}

// syncFailRow runs work again with the first fdatasync at or after the
// middle Put failing with EIO, as Linux reports a failed writeback, and
// checks what the store did after it: the Put whose record it was must
// fail, Get must not serve that value, and whatever the store
// acknowledged after it must survive a power cut.
func syncFailRow(p *program, work []kv) Case {
	c := Case{
		Input: "an fdatasync fails with EIO (Linux then marks the pages clean)",
		Want:  "that Put fails; Get does not serve it; any later acknowledged Put survives a power cut",
	}
	at := len(work) / 2
	failed := -1
	rec, err := recordFaulty(p, work, func(m *vfs.MemFS, put *atomic.Int64) {
		m.LinuxWriteback = true
		m.Fault = func(op, name string) error {
			if op == "sync" && failed < 0 && put.Load() >= int64(at) {
				failed = int(put.Load())
				return syscall.EIO
			}
			return nil
		}
	})
	if err != nil {
		c.Got = err.Error()
		c.Hint = "the workload must run before any fault is injected"
		return c
	}
	if failed < 0 {
		c.Got, c.Pass = fmt.Sprintf("no fdatasync came at or after Put %d to fail", at+1), true
		return c
	}
	fp := rec.puts[failed]
	if fp.err == nil {
		c.Got = fmt.Sprintf("%s (Put %d) returned nil although an fdatasync in it failed with EIO", putText(fp.kv), failed+1)
		c.Hint = "check the error Sync returns: when it fails the record may never reach the disk, so Put must return the error, not acknowledge"
		return c
	}
	if g := rec.gets[failed]; g.ok && g.value == fp.value && !ackedBefore(rec.puts[:failed], fp.kv) {
		c.Got = fmt.Sprintf("%s failed with %v, yet Get(%s) then returned its value", putText(fp.kv), fp.err, quote(fp.key))
		c.Hint = "update the index only after Sync returned without an error: a value whose fdatasync failed is not on the disk, and serving it shows the reader a write that a power cut will take back"
		return c
	}
	// Up to the failing Put the run is the workload's first, whose cuts
	// the other rows tried.
	rec.cutFrom = fp.before
	f, points := cutAll(rec, vfs.PowerPrefix, trialSeeds[:2], func(k cut, m *vfs.MemFS) *cutFailure { return checkReopen(p, rec, k, m) })
	if f != nil {
		c.Got = fmt.Sprintf("%s failed with %v; then %s", putText(fp.kv), fp.err, f.message(rec))
		switch {
		case f.put != nil && f.put.before >= fp.acked:
			c.Hint = "a Put was acknowledged after an fdatasync had failed: Linux marked the failed pages clean, so the later Sync succeeded without writing them and a power cut leaves a hole before the later record. Keep the first Sync error in the Store and fail every later Put with it"
		default:
			c.Hint, _ = diagnose(p, rec, f)
		}
		return c
	}
	after := 0
	for _, q := range rec.puts[failed+1:] {
		if q.err == nil {
			after++
		}
	}
	c.Got = fmt.Sprintf("Put %d failed with %v; %d later Puts acknowledged; all acknowledged keys came back at the %d cut points from that Put on", failed+1, fp.err, after, points)
	c.Pass = true
	return c
}

// ackedBefore reports whether one of puts acknowledged w's key with w's
// value.
func ackedBefore(puts []putCall, w kv) bool {
	for i := len(puts) - 1; i >= 0; i-- {
		if q := puts[i]; q.key == w.key && q.err == nil {
			return q.value == w.value
		}
	}
	return false
}

// syncsRow counts the fdatasyncs and directory fsyncs per Put, and names
// any that had nothing to make durable: an fdatasync of a file with no
// write or truncate since its last one, a directory fsync with no name
// created, renamed or removed since the last. Extra syncs cost a flush
// each but lose nothing, so the row never fails.
func syncsRow(rec *recording) Case {
	c := Case{Input: "fdatasyncs and directory fsyncs per Put", Want: "each one makes something durable", Pass: true}
	total, worst := 0, 0
	for _, p := range rec.puts {
		n := rec.syncsIn(p.before, p.acked)
		total += n
		worst = max(worst, n)
	}
	useless := rec.uselessSyncs()
	c.Got = fmt.Sprintf("%.2f on average (%d for %d Puts), at most %d; %d with nothing new to make durable", float64(total)/float64(len(rec.puts)), total, len(rec.puts), worst, len(useless))
	if len(useless) > 0 {
		op := useless[0]
		c.Note = fmt.Sprintf("operation %d (%s) came with nothing changed since the last one: it makes nothing more durable and costs a disk flush", op.N, op)
	}
	return c
}

// uselessSyncs returns the syncs of rec that had nothing to make durable.
func (r *recording) uselessSyncs() []kvfs.Op {
	var out []kvfs.Op
	dirty := map[string]bool{}
	dirDirty := false
	for _, op := range r.ops {
		switch op.Kind {
		case "write", "truncate":
			dirty[op.File] = true
		case "create":
			dirDirty = true
			dirty[op.File] = false
		case "rename":
			dirDirty = true
			dirty[op.File] = dirty[op.From]
		case "remove":
			dirDirty = true
		case "fdatasync":
			if !dirty[op.File] {
				out = append(out, op)
			}
			dirty[op.File] = false
		case "fsync-dir":
			if !dirDirty {
				out = append(out, op)
			}
			dirDirty = false
		}
	}
	return out
}
