package grader

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"

	"kvlab/engine/vfs"
	"kvlab/gohost"
)

// The exercise "torn-tail": records carry a length and a CRC; Open cuts a
// torn or garbled tail off and refuses damage in the middle of the log.

// errDamaged is declared in both the stub and the solution of torn-tail.
const errDamaged = `
// errDamaged is what scan returns for damage to a record that was durable.
var errDamaged = fmt.Errorf("log: damaged record with an intact record after it")
`

// scanDoc is the doc comment of scan, in the stub and the solution.
const scanDoc = `
// scan calls put for every intact record at the start of data, in order,
// and returns the length of those records. At the first record that is
// cut short or does not match its CRC it looks for an intact record at
// any later offset: each record was written after an fdatasync of every
// byte before it returned, so an intact record after the bad one proves
// the bad one was durable, and scan returns an error. With none after
// it, the bad record is a torn tail that no fdatasync vouched for: scan
// stops there without an error.
`

// scanSolution is the function the student writes in torn-tail.
const scanSolution = errDamaged + scanDoc + `func scan(data []byte, put func(key, value string)) (int, error) {
	off := 0
	for off < len(data) {
		n := intact(data[off:])
		if n == 0 {
			for later := off + 1; later+8 <= len(data); later++ {
				// Cheap tests first: most offsets hold no record. An
				// all-zero header (a sector the disk never wrote) is
				// never one, as the CRC of an empty record is not 0.
				n := (int(data[later+4]) | int(data[later+5])<<8) + (int(data[later+6]) | int(data[later+7])<<8)
				if later+8+n > len(data) || n == 0 && data[later]|data[later+1]|data[later+2]|data[later+3] == 0 {
					continue
				}
				if intact(data[later:]) > 0 {
					return off, fmt.Errorf("%w: offset %d, intact record at %d", errDamaged, off, later)
				}
			}
			return off, nil // a torn tail
		}
		klen := int(data[off+4]) | int(data[off+5])<<8
		put(string(data[off+8:off+8+klen]), string(data[off+8+klen:off+n]))
		off += n
	}
	return off, nil
}

// intact returns the length of the record at the start of data if it is
// whole and matches its CRC, and 0 if it is not.
func intact(data []byte) int {
	if len(data) < 8 {
		return 0
	}
	klen := int(data[4]) | int(data[5])<<8
	vlen := int(data[6]) | int(data[7])<<8
	end := 8 + klen + vlen
	if end > len(data) {
		return 0
	}
	c := uint32(data[0]) | uint32(data[1])<<8 | uint32(data[2])<<16 | uint32(data[3])<<24
	if crc32.Checksum(data[4:end], table) != c {
		return 0
	}
	return end
}
`

const scanStub = errDamaged + scanDoc + `func scan(data []byte, put func(key, value string)) (int, error) {
	off := 0
	for off < len(data) {
		// TODO: a header or a record cut short; a CRC that does not
		// match; an intact record after a bad one.
		klen := int(data[off+4]) | int(data[off+5])<<8
		vlen := int(data[off+6]) | int(data[off+7])<<8
		end := off + 8 + klen + vlen
		put(string(data[off+8:off+8+klen]), string(data[off+8+klen:end]))
		off = end
	}
	return off, nil
}
`

// tornScan is Open's reading in torn-tail: scan, and refuse what it
// refuses.
const tornScan = `	good, err := scan(data, func(key, value string) { s.index[key] = value })
	if err != nil {
		return nil, err
	}
`

var (
	tornSolution = storeSource(storeParts{
		imports: "\t\"fmt\"\n",
		newLog:  syncDirNewLog,
		scan:    tornScan,
		tail:    truncateTail,
		put:     writeSyncPut,
		codec:   recordEncode + scanSolution,
	})
	tornStub = storeSource(storeParts{
		imports: "\t\"fmt\"\n",
		newLog:  syncDirNewLog,
		scan:    tornScan,
		tail:    "\t// TODO: what happens to data[good:]?\n",
		put:     writeSyncPut,
		codec:   recordEncode + scanStub,
	})
)

var tornTailExercise = &Exercise{
	Name:  "torn-tail",
	Title: "Survive a torn tail",
	Instructions: `Write ` + "`scan`" + `, which reads the log back for ` + "`Open`" + `, and make ` + "`Open`" + ` cut a torn tail off. A record is ` + "`| CRC (4B) | key length (2B) | value length (2B) | key | value |`" + `, little-endian, the CRC-32C covering everything after it (` + "`encode`" + ` is given).

A power cut in the middle of an append leaves a torn tail: a record cut short, or, as the disk may write a record's 512-byte sectors back in any order, one whose later sectors reached the disk and earlier ones did not. Storage can also garble bytes that were durable. Tell the two apart by what follows: ` + "`Put`" + ` writes each record only after the fdatasync of every byte before it returned, so an intact record anywhere after a bad one proves the bad one was durable, and ` + "`Open`" + ` must fail with an error rather than drop it and the records after it. With no intact record after it, the bad record is a tail no fdatasync vouched for: ` + "`scan`" + ` stops there, and ` + "`Open`" + ` truncates the file at the end of the last good record, so the next record follows it.

` + faultModel + `

The grader draws a new workload at random each Run, as in the previous exercise (its seed is shown; ` + "`// kvlab:seed N`" + ` replays it), runs it (` + "`Put`" + ` writes, fdatasyncs, then returns), reopens the store with no power cut and once on an empty disk, and cuts the power after each operation in ` + "`prefix`" + ` and ` + "`reorder`" + ` mode; after each cut it reopens your store, reads back every acknowledged key, puts one more key, reopens again and reads that too. Then it garbles one byte of the last record, in its CRC, its lengths, its key and its value in turn (that key must come back with its earlier value, and a new Put must survive a reopen), and the same bytes of a record in the middle (` + "`Open`" + ` must return an error).`,
	Stub:     tornStub,
	Solution: tornSolution,
	LimitMs:  crashLimitMs,
	grade:    gradeTornTail,
	prelude:  gohost.StorePrelude,
	Measure:  true,
}

// tornSeeds are the choices of unsynced data torn-tail tries at each cut
// point: none, and one random. One fewer than durable-ack's: a scan that
// must look at every offset of a torn tail for an intact record costs the
// interpreter a few microseconds a byte, and the tails are what the
// random choices leave.
var tornSeeds = trialSeeds[:2]

// afterKey and afterValue are the Put the torn-tail grader makes after
// each reopen.
const afterKey, afterValue = "after", "written-after-the-reopen"

func gradeTornTail(p *program) Result {
	work := drawWorkload(gradeSeed)
	rec, r := runWorkload(p, work)
	if rec == nil {
		return r
	}
	for _, mode := range crashModes {
		c := Case{
			Input: fmt.Sprintf("power cut after each operation, %s mode; reopen, Put(after), reopen", mode),
			Want:  "every acknowledged key comes back, and the Put after the reopen",
		}
		check := func(rec *recording) (*cutFailure, int) {
			return cutAll(rec, mode, tornSeeds, func(k cut, m *vfs.MemFS) *cutFailure { return checkReopenAndAppend(p, rec, k, m) })
		}
		f, points := check(rec)
		if f != nil {
			rec, f, shrunk := shrink(p, rec, f, work, check)
			c.Got = f.message(rec) + shrunkNote(shrunk)
			var blame int
			c.Hint, blame = tornHint(p, rec, f)
			c.Timeline = rec.timeline(f, blame)
			if len(r.Notes) == 1 {
				r.Notes = append(r.Notes, rec.traceNote(f.c))
			}
		} else {
			c.Got = fmt.Sprintf("all came back, at %d cut points × %d choices", points, len(tornSeeds))
			c.Pass = true
		}
		r.Cases = append(r.Cases, c)
	}
	r.Cases = append(r.Cases, flipLast(p, rec), flipMiddle(p, rec))
	r.Passed = allPass(r.Cases)
	return r
}

// lostAfter is the kind of failure where the Put after a reopen did not
// survive the next reopen.
const lostAfter = "lost the Put after the reopen"

// checkReopenAndAppend reopens the store after the cut k, reads back what
// was acknowledged, puts afterKey, reopens again (a process restart, no
// power cut) and reads everything back once more.
func checkReopenAndAppend(p *program, rec *recording, k cut, m *vfs.MemFS) *cutFailure {
	if k.fp == 0 {
		k.fp = fingerprint(m)
	}
	s, f := openAndRead(p, k, m, rec.puts)
	if f != nil || k.seed == 0 {
		// With nothing unsynced surviving (seed 0) there is no torn
		// tail to cut off before the next Put.
		return f
	}
	return putAfterReopen(p, k, s, m, rec.puts)
}

// putAfterReopen puts afterKey in s, the store opened on m as the cut k
// left it (k.fp its fingerprint), restarts the store and checks that
// afterKey and every key puts acknowledged before the cut are there. With
// s nil (the Open on m's bytes was done before, and m is untouched) the
// store is opened on m again, unless what the Put and the restart did
// from the same bytes is known already.
func putAfterReopen(p *program, k cut, s *gohost.Store, m *vfs.MemFS, puts []putCall) *cutFailure {
	a := p.cache.afters[k.fp]
	if a == nil || !cacheOpens {
		a = &afterPut{}
		if s == nil {
			var err error
			if s, err = openStore(p, newFS(m, nil)); err != nil {
				return &cutFailure{cut: k, what: "Open failed: " + err.Error()}
			}
		}
		if a.err = s.Put(afterKey, afterValue); a.err == nil {
			m2 := m.Kill()
			a.re, _ = p.cache.open(p, m2, fingerprint(m2), false)
		}
		if p.cache.afters == nil {
			p.cache.afters = map[uint64]*afterPut{}
		}
		p.cache.afters[k.fp] = a
	} else {
		p.cache.hits++
	}
	if a.err != nil {
		return &cutFailure{cut: k, what: fmt.Sprintf("reopened, then Put(%q) failed: %v", afterKey, a.err)}
	}
	again := k
	again.inRecovery = true // the first reopen's recovery was cut already
	f := readBack(a.re.get, again, puts)
	if a.re.err != nil {
		f = &cutFailure{cut: again, what: "Open failed: " + a.re.err.Error()}
	}
	if f != nil {
		f.what = fmt.Sprintf("reopened, Put(%q), reopened again: %s", afterKey, f.what)
		if f.put == nil && f.recovery == nil {
			// The first Open was fine, the second is not: the
			// record of the Put between them is what it cannot read.
			f.kind = lostAfter
		}
		return f
	}
	got, ok, err := a.re.get(afterKey)
	if err != nil || !ok || got != afterValue {
		return &cutFailure{cut: k, what: fmt.Sprintf("reopened, Put(%q) acknowledged, reopened again: key %s is gone", afterKey, afterKey), kind: lostAfter}
	}
	return nil
}

// tornHint names the rule behind a torn-tail failure, and the operation
// whose promise broke, as diagnose does.
func tornHint(p *program, rec *recording, f *cutFailure) (string, int) {
	switch {
	case f.recovery != nil:
		return recoveryRule(f)
	case f.kind == lostAfter:
		return "Open must truncate the file at the end of the last good record: a record appended after a torn one is unreadable at the next Open", 0
	case f.put == nil && readsBadCRC(p):
		return "your Open reads a record whose CRC does not match as if it were whole (a log whose last record was garbled came back with the garbled value): check each record's CRC before reading it", 0
	case f.put == nil && f.mode == vfs.PowerReorder:
		return "the disk may write a record's later sectors back and not its first, so a torn record can have bytes after it: those bytes prove nothing; only an intact record after a bad one shows it was durable. With none, it is a torn tail: stop there without an error", 0
	case f.put == nil:
		return "a power cut in the middle of an append leaves a torn tail, which is no error: scan must stop at a record cut short, and Open must open the log", 0
	}
	return diagnose(p, rec, f)
}

// readsBadCRC opens the student's store on a log of two records in the
// exercise's format, the last one's value garbled, and reports whether Get
// returned the garbled value: a store that checks no CRC.
func readsBadCRC(p *program) bool {
	m := newMemFS()
	f, err := m.OpenFile(filepath.Join(crashDir, "log"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return false
	}
	last := encodeRecord("probe-b", "a value the probe garbles")
	last[len(last)-1] ^= 0x55
	f.WriteAt(append(encodeRecord("probe-a", "a"), last...), 0)
	f.Sync()
	m.SyncDir(crashDir)
	s, err := openStore(p, newFS(m, nil))
	if err != nil {
		return false
	}
	v, ok, err := s.Get("probe-b")
	return err == nil && ok && v == string(last[len(last)-len("a value the probe garbles"):])
}

// encodeRecord is the crash exercises' record format (recordEncode).
func encodeRecord(key, value string) []byte {
	b := make([]byte, 8, 8+len(key)+len(value))
	binary.LittleEndian.PutUint16(b[4:], uint16(len(key)))
	binary.LittleEndian.PutUint16(b[6:], uint16(len(value)))
	b = append(b, key...)
	b = append(b, value...)
	binary.LittleEndian.PutUint32(b, crc32.Checksum(b[4:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

// recordAt returns the file, start and end offsets of the record Put i
// wrote (its last write), or "" if it wrote nothing.
func (r *recording) recordAt(i int) (string, int64, int64) {
	p := r.puts[i]
	for j := p.acked - 1; j >= p.before; j-- {
		if op := r.ops[j]; op.Kind == "write" {
			return op.File, op.Off, op.Off + int64(op.Len)
		}
	}
	return "", 0, 0
}

// damage is a byte of a record to garble: where, relative to its start
// (a negative at counts from its end).
type damage struct {
	part string
	at   int64
}

// damages are the bytes of a record the torn-tail grader garbles in turn.
var damages = []damage{{"its CRC", 1}, {"its key length", 4}, {"its value length", 7}, {"its key", 8}, {"its value", -1}}

// flipped returns the filesystem after the workload with one byte of the
// record of Put i garbled (as durable storage garbling it would), and
// where; ok is false when the record has no such byte (an empty key).
func flipped(rec *recording, i int, d damage) (m *vfs.MemFS, where string, ok bool, err error) {
	name, start, end := rec.recordAt(i)
	if name == "" {
		return nil, "", false, fmt.Errorf("Put(%s) wrote nothing", quote(rec.puts[i].key))
	}
	pc := rec.puts[i]
	off := start + d.at
	if d.at < 0 {
		off = end + d.at
	}
	if (d.part == "its key" && pc.key == "") || (d.part == "its value" && pc.value == "") || off < start || off >= end {
		return nil, "", false, nil
	}
	m = rec.final.Kill()
	f, err := m.OpenFile(filepath.Join(crashDir, name), os.O_RDWR, 0)
	if err != nil {
		return nil, "", false, err
	}
	b := []byte{0}
	if _, err := f.ReadAt(b, off); err != nil {
		return nil, "", false, err
	}
	b[0] ^= 0x55
	if _, err := f.WriteAt(b, off); err != nil {
		return nil, "", false, err
	}
	if err := f.Sync(); err != nil {
		return nil, "", false, err
	}
	return m, fmt.Sprintf("%s byte %d (%s) flipped", name, off, d.part), true, nil
}

// flipLast garbles the last record, one byte at a time: Open must drop
// it, keep every record before it, and let a new Put survive a reopen.
func flipLast(p *program, rec *recording) Case {
	last := len(rec.puts) - 1
	c := Case{
		Input: "one byte of the last record garbled: its CRC, lengths, key, value in turn",
		Want:  fmt.Sprintf("Open drops that record: key %s has its earlier value, the rest are there, and a Put after it survives a reopen", quote(rec.puts[last].key)),
	}
	tried := 0
	for _, d := range damages {
		m, where, ok, err := flipped(rec, last, d)
		if err != nil {
			c.Got = err.Error()
			return c
		}
		if !ok {
			continue
		}
		tried++
		k := cut{c: len(rec.ops), inRecovery: true, fp: fingerprint(m)}
		// Every key of the Puts before it must hold its value from
		// before the garbled record.
		s, f := openAndRead(p, k, m, rec.puts[:last])
		if f == nil {
			f = putAfterReopen(p, k, s, m, rec.puts[:last])
		}
		if f == nil {
			continue
		}
		c.Got = fmt.Sprintf("%s: %s", where, f.what)
		switch {
		case f.kind == lostAfter:
			c.Hint = "Open must truncate the file at the end of the last good record: a record appended after a garbled one is unreadable at the next Open"
		case f.put == nil && strings.HasPrefix(f.what, "Open failed:"):
			c.Hint = "a garbled last record with no intact record after it is a torn tail as far as Open can tell: no fdatasync vouches for it, so scan stops there without an error"
		default:
			c.Hint = "check the length and the CRC of every record: a record whose bytes do not match its CRC must not be read"
		}
		return c
	}
	c.Got = fmt.Sprintf("dropped each time (%d bytes tried); the rest came back", tried)
	c.Pass = true
	return c
}

// flipMiddle garbles a record in the middle, one byte at a time: Open
// must fail.
func flipMiddle(p *program, rec *recording) Case {
	// The middle record, or the first after it whose key is not written
	// again: skipping it must show.
	mid := len(rec.puts) / 2
	for i := mid; i < len(rec.puts)-1; i++ {
		if lastPutOf(rec.puts, rec.puts[i].key) == rec.puts[i].value {
			mid = i
			break
		}
	}
	c := Case{
		Input: fmt.Sprintf("one byte of record %d of %d garbled: its CRC, lengths, key, value in turn", mid+1, len(rec.puts)),
		Want:  "Open returns an error",
	}
	tried := 0
	for _, d := range damages {
		m, where, ok, err := flipped(rec, mid, d)
		if err != nil {
			c.Got = err.Error()
			return c
		}
		if !ok {
			continue
		}
		tried++
		s, err := openStore(p, newFS(m, nil))
		if err != nil {
			continue
		}
		missing := 0
		for _, pc := range rec.puts[mid+1:] {
			if v, ok, err := s.Get(pc.key); err != nil || !ok || v != pc.value {
				if last := lastPutOf(rec.puts, pc.key); last == pc.value {
					missing++
				}
			}
		}
		c.Got = fmt.Sprintf("%s: Open succeeded", where)
		pc := rec.puts[mid]
		v, ok, _ := s.Get(pc.key)
		switch {
		case missing > 0:
			c.Got += fmt.Sprintf("; %d of the %d Puts after it are gone", missing, len(rec.puts)-mid-1)
			c.Hint = "a bad record with an intact record after it is not a torn tail: it and the records after it were durable, and dropping them silently loses acknowledged writes (a garbled length can make a record look cut short); return an error"
		case lastPutOf(rec.puts, pc.key) == pc.value && (!ok || v != pc.value):
			c.Got += fmt.Sprintf("; key %s, written by that record, is gone or holds an older value, every other key is there", quote(pc.key))
			c.Hint = "your scan skips the damaged record and reads on: that record was durable and its Put acknowledged, so its key silently lost its value; a damaged record with intact records after it must make Open return an error"
		default:
			c.Hint = "a record that does not match its CRC has changed since it was written: return an error rather than read it"
		}
		return c
	}
	c.Got = fmt.Sprintf("Open failed each time (%d bytes tried)", tried)
	c.Pass = true
	return c
}

// lastPutOf returns the value of the last Put of key among puts.
func lastPutOf(puts []putCall, key string) string {
	v := ""
	for _, p := range puts {
		if p.key == key {
			v = p.value
		}
	}
	return v
}
