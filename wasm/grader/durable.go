package grader

import (
	"fmt"
	"strings"

	"kvlab/engine"
)

// The exercise "durable-ack": Put returns only once its record is durable.

// ackWorkload is the fixed workload: ten keys, then two of them again.
var ackWorkload = func() []kv {
	var w []kv
	for i := range 10 {
		w = append(w, kv{fmt.Sprintf("k%d", i), fmt.Sprintf("v%d-%s", i, strings.Repeat("x", i*7%13))})
	}
	return append(w, kv{"k2", "v2-again"}, kv{"k5", "v5-again"})
}()

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
		return err
	}
	if err := s.log.Sync(); err != nil {
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
		put:    "\t// TODO: write encode(key, value) to s.log, and return only when it\n\t// would survive a power cut.\n",
		codec:  recordEncode + ackDecode,
	})
)

var durableAckExercise = &Exercise{
	Name:  "durable-ack",
	Title: "Acknowledge after it is safe",
	Instructions: `Make ` + "`Put`" + ` return only once its record would survive a power cut, and make ` + "`Open`" + ` find every record a ` + "`Put`" + ` acknowledged.

Your store gets a ` + "`kvfs.FS`" + `: one directory with ` + "`Create`, `OpenAppend`, `ReadFile`, `List`, `Rename`, `Remove`" + ` and ` + "`SyncDir`" + `; a ` + "`kvfs.File`" + ` has ` + "`Write`, `WriteAt`, `Sync`" + ` (fdatasync), ` + "`Truncate`, `Size`" + ` and ` + "`Close`" + `. Nothing written is durable until ` + "`Sync`" + `; no new file name is durable until ` + "`SyncDir`" + `.

The grader opens your store on an empty disk and runs 12 Puts, numbering every operation that changes the disk; it reopens the store with no power cut, and once on an empty disk, where no key may be (keep the index in the ` + "`Store`" + `, not in a package-level variable). Then it cuts the power after each operation in turn, in two modes: ` + "`prefix`" + ` (unsynced bytes reach the disk in order, the last write torn) and ` + "`reorder`" + ` (any 512-byte sectors of them do), each tried with none and with two random choices of the unsynced data surviving. After each cut it reopens your store and reads every key whose ` + "`Put`" + ` had returned: each must hold its value. It also counts fdatasyncs and directory fsyncs per ` + "`Put`" + `: at most one; a second makes nothing more durable.

The record format (` + "`encode`, `decode`" + `, with a CRC) is given; ` + "`decode`" + ` stops at a torn tail.`,
	Stub:     ackStub,
	Solution: ackSolution,
	LimitMs:  crashLimitMs,
	grade:    gradeDurableAck,
	prelude:  storePrelude,
	Measure:  true,
}

// crashModes are the power-cut modes the acknowledgement is graded under.
var crashModes = []engine.PowerMode{engine.PowerPrefix, engine.PowerReorder}

func gradeDurableAck(p *program) Result {
	rec, r := runWorkload(p)
	if rec == nil {
		return r
	}
	for _, mode := range crashModes {
		row, note := cutRow(p, rec, mode)
		r.Cases = append(r.Cases, row)
		if note != "" && len(r.Notes) == 0 {
			r.Notes = append(r.Notes, note)
		}
	}
	r.Cases = append(r.Cases, syncsRow(rec))
	r.Passed = allPass(r.Cases)
	return r
}

// runWorkload runs ackWorkload on the student's store and reopens it
// with no power cut. It returns the recording and a Result with a row for
// each, or a nil recording when the workload failed.
func runWorkload(p *program) (*recording, Result) {
	var r Result
	rec, err := record(p, ackWorkload)
	work := Case{
		Input: fmt.Sprintf("Open on an empty disk, then %d Puts, no power cut", len(ackWorkload)),
		Want:  "no errors",
		Got:   fmt.Sprintf("no errors, %d operations", len(rec.ops)),
		Pass:  err == nil,
	}
	if err != nil {
		work.Got = err.Error()
		work.Hint = "the workload must run before any power is cut"
		r.Cases = append(r.Cases, work)
		return nil, r
	}
	r.Cases = append(r.Cases, work, cleanReopen(p, rec), emptyReopen(p))
	return rec, r
}

// emptyReopen opens the store on an empty disk after the workload: no key
// may be there. A store that keeps its index in a package-level variable
// finds the workload's keys in memory, since the grader reopens it in the
// same interpreter; it would pass every power cut without reading a byte.
func emptyReopen(p *program) Case {
	c := Case{Input: "Open again, on a second and empty disk", Want: "no keys", Got: "no keys", Pass: true}
	s, err := openStore(p, newFS(newMemFS(), nil))
	if err != nil {
		c.Got, c.Pass = "Open failed: "+err.Error(), false
		return c
	}
	for _, w := range ackWorkload {
		if _, ok, err := s.Get(w.key); err != nil || ok {
			c.Got, c.Pass = fmt.Sprintf("key %s is there", w.key), false
			if err != nil {
				c.Got = fmt.Sprintf("Get(%q) failed: %v", w.key, err)
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
		if f.put != nil {
			if rule := rec.unwritten(f.put); rule != "" {
				c.Hint = rule
			}
		}
		return c
	}
	c.Pass = true
	return c
}

// cutRow cuts the power after every operation in mode and turns the first
// failure into a row and the trace up to it into a note.
func cutRow(p *program, rec *recording, mode engine.PowerMode) (Case, string) {
	c := Case{
		Input: fmt.Sprintf("power cut after each operation, %s mode", mode),
		Want:  "every acknowledged key comes back",
	}
	f, points := cutAll(rec, mode, trialSeeds, func(k cut, m *engine.MemFS) *cutFailure { return checkReopen(p, rec, k, m) })
	if f == nil {
		c.Got = fmt.Sprintf("all came back, at %d cut points × %d choices", points, len(trialSeeds))
		c.Pass = true
		return c, ""
	}
	c.Got = f.message(rec)
	c.Hint = diagnose(p, rec, f)
	return c, rec.traceNote(f.c)
}

// diagnose names the rule behind a failure: one the acknowledged Put
// broke, or else what Open did wrong.
func diagnose(p *program, rec *recording, f *cutFailure) string {
	if f.put == nil {
		return "Open must accept whatever a power cut leaves: no log yet, an empty one, or one with a torn last record"
	}
	if rule := rec.ackRule(f.put); rule != "" {
		return rule
	}
	if checkReopen(p, rec, cut{c: f.c}, rec.snaps[f.c].Copy()) != nil {
		return "your Open does not find it even with no power cut at this point: Open must read back every record"
	}
	return "its record was written and synced before the acknowledgement, yet Open did not find it after the power cut: check how Open reads the log"
}

// syncsRow checks that no Put syncs more than once.
func syncsRow(rec *recording) Case {
	c := Case{Input: "fdatasyncs and directory fsyncs per Put", Want: "at most 1"}
	total, worst, worstAt := 0, 0, -1
	for i, p := range rec.puts {
		n := rec.syncsIn(p.before, p.acked)
		total += n
		if n > worst {
			worst, worstAt = n, i
		}
	}
	c.Got = fmt.Sprintf("%.2f on average (%d for %d Puts), at most %d", float64(total)/float64(len(rec.puts)), total, len(rec.puts), worst)
	c.Pass = worst <= 1
	if !c.Pass {
		p := rec.puts[worstAt]
		c.Hint = fmt.Sprintf("Put(%q) synced %d times: one fdatasync after the write makes the record durable; a second makes nothing more durable and costs a second disk flush", p.key, worst)
	}
	return c
}
