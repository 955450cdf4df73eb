package grader

import (
	"errors"
	"hash/maphash"
	"os"
	"path/filepath"

	"kvlab/engine/vfs"
	"kvlab/gohost"
)

// The crash exercises open the student's store some hundreds of times a
// grading, and most of the grading's time is the interpreter running
// those Opens. Many of them find the same bytes: a cut with none of the
// unsynced data surviving leaves the disk of the last sync, whatever the
// cut point; a second cut during a recovery often leaves a disk a first
// cut left already; torn-tail's Put after the reopen finds the same disk
// again and again. The student's code can reach no clock, no randomness
// and no disk but the one it is given, so an Open on the same bytes does
// the same (the grader assumes so already when it checks a disk once per
// cut point): what it did is kept by the disk's fingerprint, the Gets of
// every key of the workload right after it included, and reused.
//
// What is checked does not change: each cut still reads back its own
// acknowledged keys against its own expectations, from the answers of
// an Open on exactly its bytes, and still cuts the power again during
// that Open's own operations with its own random choices.

// cacheOpens switches the cache on; the tests switch it off to compare.
var cacheOpens = true

// opened is what an Open of the student's store on one disk did.
type opened struct {
	err     error                // what Open returned
	answers map[string]getResult // Get of every key of openCache.keys, right after Open
	// rec is Open's own operations and the disk after each, when the
	// Open was recorded (a first reopen after a cut; nil for one that is
	// not cut again).
	rec *recording
}

// errNotAsked is what get returns for a key the cache did not ask the
// store for; the grader always asks for every key of its workload.
var errNotAsked = errors.New("grader: the key was not read after Open")

// get is a Get of the store as Open left it.
func (o *opened) get(key string) (string, bool, error) {
	a, ok := o.answers[key]
	if !ok {
		return "", false, errNotAsked
	}
	return a.value, a.ok, a.err
}

// afterPut is what torn-tail's Put after a reopen did, from one disk: the
// Put's error, and the reopen after it.
type afterPut struct {
	err error
	re  *opened
}

// openCache holds what Opens did, by the fingerprint of the disk they
// found, for one grading (one program).
type openCache struct {
	keys   []string             // the keys every Open is asked for: the workload's, and afterKey
	opens  map[uint64]*opened   // by the fingerprint of the disk Open started from
	afters map[uint64]*afterPut // by the fingerprint of the disk the first Open started from
	hits   int                  // Opens saved, for the tests
}

// setKeys sets the keys every later Open is asked for: those of work,
// and afterKey.
func (c *openCache) setKeys(work []kv) {
	seen := map[string]bool{afterKey: true}
	c.keys = []string{afterKey}
	for _, w := range work {
		if !seen[w.key] {
			seen[w.key] = true
			c.keys = append(c.keys, w.key)
		}
	}
}

// open opens the student's store on m, whose fingerprint is fp, or
// returns what an Open on the same bytes did before (with its operations
// recorded when record). s is the open store when this call opened it,
// nil when it did not: m is then untouched.
func (c *openCache) open(p *program, m *vfs.MemFS, fp uint64, record bool) (o *opened, s *gohost.Store) {
	if o := c.opens[fp]; o != nil && (o.rec != nil || !record) && cacheOpens {
		c.hits++
		return o, nil
	}
	var rec *recording
	fsys := newFS(m, nil)
	if record {
		rec, fsys = recordFrom(m, nil) // the disk before is m's fingerprint: no copy of it
	}
	s, err := openStore(p, fsys)
	if rec != nil {
		rec.mu.Lock()
		rec.done = true
		rec.mu.Unlock()
		if len(rec.ops) == 0 {
			rec.snaps = nil // nothing to cut again: keep no copy of the disk
		}
	}
	o = &opened{err: err, rec: rec, answers: map[string]getResult{}}
	if err == nil {
		for _, key := range c.keys {
			v, ok, err := s.Get(key)
			o.answers[key] = getResult{v, ok, err}
		}
	}
	if c.opens == nil {
		c.opens = map[uint64]*opened{}
	}
	c.opens[fp] = o
	return o, s
}

// fpSeed seeds the fingerprints: any seed will do, as long as it is one
// for the whole process.
var fpSeed = maphash.MakeSeed()

// fpBuf is fingerprint's buffer, kept from one call to the next (nothing
// in this package runs two gradings at once).
var fpBuf []byte

// fingerprint hashes the names and contents of the files of m's crashDir.
func fingerprint(m *vfs.MemFS) uint64 {
	var h maphash.Hash
	h.SetSeed(fpSeed)
	names, _ := m.List(crashDir)
	b := fpBuf
	defer func() { fpBuf = b }()
	for _, name := range names {
		h.WriteString(name)
		h.WriteByte(0)
		f, err := m.OpenFile(filepath.Join(crashDir, name), os.O_RDONLY, 0)
		if err != nil {
			h.WriteByte('?')
			continue
		}
		size, _ := f.Size()
		if int64(cap(b)) < size {
			b = make([]byte, size)
		}
		b = b[:size]
		f.ReadAt(b, 0)
		f.Close()
		var n [8]byte
		for i := range n {
			n[i] = byte(size >> (8 * i))
		}
		h.Write(n[:])
		h.Write(b)
	}
	return h.Sum64()
}
