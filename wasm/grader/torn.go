package grader

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"kvlab/engine"
)

// The exercise "torn-tail": records carry a length and a CRC; Open cuts a
// torn or garbled tail off and refuses damage in the middle of the log.

// errDamaged is declared in both the stub and the solution of torn-tail.
const errDamaged = `
// errDamaged is what scan returns for damage before the end of the log.
var errDamaged = fmt.Errorf("log: damaged record with more records after it")
`

// scanSolution is the function the student writes in torn-tail.
const scanSolution = errDamaged + `
// scan calls put for every intact record at the start of data, in order,
// and returns the length of those records. A record cut short, or a last
// record that does not match its CRC, is a torn tail: scan stops there
// without an error. A record that does not match its CRC and has more
// bytes after it is damage to durable data: scan returns an error.
func scan(data []byte, put func(key, value string)) (int, error) {
	off := 0
	for off < len(data) {
		if off+8 > len(data) {
			return off, nil // a torn header
		}
		klen := int(data[off+4]) | int(data[off+5])<<8
		vlen := int(data[off+6]) | int(data[off+7])<<8
		end := off + 8 + klen + vlen
		if end > len(data) {
			return off, nil // cut short
		}
		c := uint32(data[off]) | uint32(data[off+1])<<8 | uint32(data[off+2])<<16 | uint32(data[off+3])<<24
		if crc32.Checksum(data[off+4:end], table) != c {
			if end == len(data) {
				return off, nil // the last record, garbled
			}
			return off, fmt.Errorf("%w: offset %d, %d bytes after it", errDamaged, off, len(data)-end)
		}
		put(string(data[off+8:off+8+klen]), string(data[off+8+klen:end]))
		off = end
	}
	return off, nil
}
`

const scanStub = errDamaged + `
// scan calls put for every intact record at the start of data, in order,
// and returns the length of those records. A record cut short, or a last
// record that does not match its CRC, is a torn tail: scan stops there
// without an error. A record that does not match its CRC and has more
// bytes after it is damage to durable data: scan returns an error.
func scan(data []byte, put func(key, value string)) (int, error) {
	off := 0
	for off < len(data) {
		// TODO: a header or a record cut short; a CRC that does not match.
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

A power cut in the middle of an append leaves a torn tail: a header or a record cut short. Storage can also garble bytes. ` + "`scan`" + ` stops at the first record that is cut short, or that does not match its CRC and ends at the end of the file: that is a tail no fdatasync vouched for, and ` + "`Open`" + ` truncates the file there, so the next record follows the last good one. A record that does not match its CRC but has more bytes after it is damage to data that was durable: ` + "`Open`" + ` must fail with an error rather than drop it and every record after it.

The grader runs 12 Puts (` + "`Put`" + ` writes, fdatasyncs, then returns, as in the previous exercise), reopens the store with no power cut and once on an empty disk, as before, and cuts the power after each operation in ` + "`prefix`" + ` mode; after each cut it reopens your store, reads back every acknowledged key, puts one more key, reopens again and reads that too. Then it flips the last byte of the last record (the key of that Put must come back with its earlier value, and a new Put must survive a reopen), and the last byte of a record in the middle (` + "`Open`" + ` must return an error).`,
	Stub:     tornStub,
	Solution: tornSolution,
	LimitMs:  crashLimitMs,
	grade:    gradeTornTail,
	prelude:  storePrelude,
	Measure:  true,
}

// afterKey and afterValue are the Put the torn-tail grader makes after
// each reopen.
const afterKey, afterValue = "after", "written-after-the-reopen"

func gradeTornTail(p *program) Result {
	rec, r := runWorkload(p)
	if rec == nil {
		return r
	}

	c := Case{
		Input: "power cut after each operation, prefix mode; reopen, Put(after), reopen",
		Want:  "every acknowledged key comes back, and the Put after the reopen",
	}
	f, points := cutAll(rec, engine.PowerPrefix, trialSeeds, func(k cut, m *engine.MemFS) *cutFailure { return checkReopenAndAppend(p, rec, k, m) })
	if f != nil {
		c.Got = f.message(rec)
		c.Hint = tornHint(f)
		r.Notes = append(r.Notes, rec.traceNote(f.c))
	} else {
		c.Got = fmt.Sprintf("all came back, at %d cut points × %d choices", points, len(trialSeeds))
		c.Pass = true
	}
	r.Cases = append(r.Cases, c, flipLast(p, rec), flipMiddle(p, rec))
	r.Passed = allPass(r.Cases)
	return r
}

// lostAfter is the kind of failure where the Put after a reopen did not
// survive the next reopen.
const lostAfter = "lost the Put after the reopen"

// checkReopenAndAppend reopens the store after the cut k, reads back what
// was acknowledged, puts afterKey, reopens again (a process restart, no
// power cut) and reads everything back once more.
func checkReopenAndAppend(p *program, rec *recording, k cut, m *engine.MemFS) *cutFailure {
	s, f := openAndRead(p, k, m, rec.puts)
	if f != nil {
		return f
	}
	return putAfterReopen(p, k, s, m, rec.puts)
}

// putAfterReopen puts afterKey in s, which was opened on m, restarts the
// store and checks that afterKey and every key puts acknowledged before
// the cut are there.
func putAfterReopen(p *program, k cut, s *store, m *engine.MemFS, puts []putCall) *cutFailure {
	if err := s.Put(afterKey, afterValue); err != nil {
		return &cutFailure{cut: k, what: fmt.Sprintf("reopened, then Put(%q) failed: %v", afterKey, err)}
	}
	s2, f := openAndRead(p, k, m.Kill(), puts)
	if f != nil {
		f.what = fmt.Sprintf("reopened, Put(%q), reopened again: %s", afterKey, f.what)
		return f
	}
	got, ok, err := s2.Get(afterKey)
	if err != nil || !ok || got != afterValue {
		return &cutFailure{cut: k, what: fmt.Sprintf("reopened, Put(%q) acknowledged, reopened again: key %s is gone", afterKey, afterKey), kind: lostAfter}
	}
	return nil
}

// tornHint names the rule behind a torn-tail failure.
func tornHint(f *cutFailure) string {
	switch {
	case f.kind == lostAfter:
		return "Open must truncate the file at the end of the last good record: a record appended after a torn one is unreadable at the next Open"
	case f.put == nil:
		return "a power cut in the middle of an append leaves a torn tail, which is no error: scan must stop at a record cut short, and Open must open the log"
	}
	return "a record that was fdatasynced before its Put returned must come back: scan must read every intact record before the tail"
}

// recordEnd returns the file and the end offset of the record Put i wrote
// (the end of its last write), or "" if it wrote nothing.
func (r *recording) recordEnd(i int) (string, int64) {
	p := r.puts[i]
	for j := p.acked - 1; j >= p.before; j-- {
		if op := r.ops[j]; op.Kind == "write" {
			return op.File, op.Off + int64(op.Len)
		}
	}
	return "", 0
}

// flipped returns the filesystem after the workload with the last byte of
// the record of Put i flipped (as durable storage garbling it would).
func flipped(rec *recording, i int) (*engine.MemFS, string, error) {
	name, end := rec.recordEnd(i)
	if name == "" {
		return nil, "", fmt.Errorf("Put(%q) wrote nothing", rec.puts[i].key)
	}
	m := rec.final.Kill()
	f, err := m.OpenFile(filepath.Join(crashDir, name), os.O_RDWR, 0)
	if err != nil {
		return nil, "", err
	}
	b := []byte{0}
	if _, err := f.ReadAt(b, end-1); err != nil {
		return nil, "", err
	}
	b[0] ^= 0x55
	if _, err := f.WriteAt(b, end-1); err != nil {
		return nil, "", err
	}
	if err := f.Sync(); err != nil {
		return nil, "", err
	}
	return m, fmt.Sprintf("%s byte %d", name, end-1), nil
}

// flipLast garbles the last record: Open must drop it, keep every record
// before it, and let a new Put survive a reopen.
func flipLast(p *program, rec *recording) Case {
	last := len(rec.puts) - 1
	c := Case{
		Input: "the last byte of the last record flipped",
		Want:  fmt.Sprintf("Open drops that record: %s has its earlier value, the rest are there, and a Put after it survives a reopen", rec.puts[last].key),
	}
	m, where, err := flipped(rec, last)
	if err != nil {
		c.Got = err.Error()
		return c
	}
	k := cut{c: len(rec.ops)}
	// Every key of the Puts before it, k5 included, must hold its
	// value from before the garbled record.
	s, f := openAndRead(p, k, m, rec.puts[:last])
	if f == nil {
		f = putAfterReopen(p, k, s, m, rec.puts[:last])
	}
	if f == nil {
		c.Got = "dropped; the rest came back"
		c.Pass = true
		return c
	}
	c.Got = fmt.Sprintf("%s flipped: %s", where, f.what)
	switch {
	case f.kind == lostAfter:
		c.Hint = "Open must truncate the file at the end of the last good record: a record appended after a garbled one is unreadable at the next Open"
	case f.put == nil && strings.HasPrefix(f.what, "Open failed:"):
		c.Hint = "a garbled last record is a torn tail, not damage in the middle: nothing comes after it, so scan stops there without an error"
	default:
		c.Hint = "check the CRC of every record: a record whose bytes do not match it must not be read"
	}
	return c
}

// flipMiddle garbles a record in the middle: Open must fail.
func flipMiddle(p *program, rec *recording) Case {
	mid := len(rec.puts) / 2
	c := Case{
		Input: fmt.Sprintf("the last byte of record %d of %d flipped", mid+1, len(rec.puts)),
		Want:  "Open returns an error",
	}
	m, where, err := flipped(rec, mid)
	if err != nil {
		c.Got = err.Error()
		return c
	}
	s, err := openStore(p, newFS(m, nil))
	if err != nil {
		c.Got = fmt.Sprintf("%s flipped: Open failed: %v", where, err)
		c.Pass = true
		return c
	}
	missing := 0
	for _, pc := range rec.puts[mid+1:] {
		if v, ok, err := s.Get(pc.key); err != nil || !ok || v != pc.value {
			missing++
		}
	}
	c.Got = fmt.Sprintf("%s flipped: Open succeeded", where)
	if missing > 0 {
		c.Got += fmt.Sprintf("; %d of the %d Puts after it are gone", missing, len(rec.puts)-mid-1)
		c.Hint = "a damaged record with records after it is not a torn tail: those records were durable, and dropping them silently loses acknowledged writes; return an error"
	} else {
		c.Hint = "a record that does not match its CRC has changed since it was written: return an error rather than read it"
	}
	return c
}
