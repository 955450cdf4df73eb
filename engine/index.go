package engine

import (
	"fmt"
	"math/bits"
	"strings"
)

// The ordered index.
//
// The index of a Bitcask is a hash map: Get finds a key in one probe, but
// the keys are in no order, so a range of keys ("every key from cart/7/
// up to cart/8") means looking at all of them. With Options.Index set to
// IndexOrdered the store keeps, beside the map, an ordered set of its live
// keys (a skip list, below) and serves Scan. The map stays what Get uses,
// so Get costs the same either way; every Put of a new key and every
// Delete also updates the set, a search of about log4(n) levels, and
// each key costs a node in it (BenchmarkIndex measures both).
//
// The set holds its own copy of each key, a string per key, beside the
// hash index's arena (keyindex.go): the ordered index costs a heap
// object per key where the hash index costs none. Compaction moves
// records but never changes which keys are live, so it leaves the set
// alone.

// IndexKind is the kind of in-memory index a store keeps (Options.Index).
type IndexKind int

const (
	// IndexHash is the default: a hash map from key to record, no order.
	IndexHash IndexKind = iota
	// IndexOrdered keeps the hash map and an ordered set of the keys
	// beside it, so that Scan can serve ranges.
	IndexOrdered
)

// String returns the index's name, as ParseIndex reads it.
func (k IndexKind) String() string {
	switch k {
	case IndexHash:
		return "hash"
	case IndexOrdered:
		return "ordered"
	}
	return fmt.Sprintf("index(%d)", int(k))
}

// ParseIndex reads an index kind: "hash" or "ordered".
func ParseIndex(s string) (IndexKind, error) {
	switch s {
	case "hash":
		return IndexHash, nil
	case "ordered":
		return IndexOrdered, nil
	}
	return 0, fmt.Errorf("%w: %q: allowed: hash, ordered", ErrBadIndex, s)
}

// keySet is an ordered set of keys: what the store needs of an ordered
// index. skipList is the one implementation.
type keySet interface {
	// add inserts key if it is not there.
	add(key string)
	// remove deletes key if it is there.
	remove(key string)
	// ascend calls fn for each key >= lo, in order, until fn returns
	// false.
	ascend(lo string, fn func(key string) bool)
}

// noteIndex tells the ordered set, if the store keeps one, that key was
// written: present after a Put, absent after a Delete.
//
// REQUIRES: db.mu held for writing (or Open's recovery, alone).
func (db *DB) noteIndex(key []byte, kind byte) {
	if db.ordered == nil {
		return
	}
	if kind == kindPut {
		db.ordered.add(string(key))
	} else {
		db.ordered.remove(string(key))
	}
}

// scanChunk is the most keys Scan reads under one hold of the read lock.
// The first chunk is scanFirst keys and each next one twice the last, so
// a scan that fn stops after a few keys reads few values it never uses
// (each is a pread).
const (
	scanChunk = 64
	scanFirst = 8
)

// Scan calls fn with each live key in [lo, hi) and its value, in key
// order, until fn returns false; an empty hi means no upper bound. It
// needs Options.Index = IndexOrdered (else it fails with ErrNoOrder).
// key and value are copies fn may keep. Scan reads scanChunk keys at a
// time under the read lock and calls fn without it, so fn may write to
// the store; each chunk is read at one moment, the whole scan is not.
func (db *DB) Scan(lo, hi []byte, fn func(key, value []byte) bool) error {
	if db.ordered == nil {
		return fmt.Errorf("%w: the store was opened with the %s index", ErrNoOrder, db.indexKind)
	}
	type kv struct{ k, v []byte }
	chunk := make([]kv, 0, scanChunk)
	from, skip := string(lo), false // skip: from was the last key of the previous chunk
	for size := scanFirst; ; size = min(2*size, scanChunk) {
		chunk = chunk[:0]
		var err error
		db.mu.RLock()
		if db.closed.Load() {
			db.mu.RUnlock()
			return ErrClosed
		}
		db.ordered.ascend(from, func(k string) bool {
			if skip && k == from {
				return true
			}
			if len(hi) > 0 && k >= string(hi) {
				return false
			}
			var v []byte
			if v, err = db.readLocked(k); err != nil {
				return false
			}
			chunk = append(chunk, kv{[]byte(k), v})
			return len(chunk) < size
		})
		db.mu.RUnlock()
		if err != nil {
			return err
		}
		for _, c := range chunk {
			if !fn(c.k, c.v) {
				return nil
			}
		}
		if len(chunk) < size {
			return nil
		}
		from, skip = string(chunk[len(chunk)-1].k), true
	}
}

// readLocked returns a copy of the live value of key, which the index
// holds, as Get does.
//
// REQUIRES: db.mu held for reading.
func (db *DB) readLocked(key string) ([]byte, error) {
	e, ok := db.index.get([]byte(key))
	if !ok {
		return nil, fmt.Errorf("%w: %q is in the ordered index but not in the hash index", ErrCorrupt, key)
	}
	seg := db.segs[e.seg]
	buf := make([]byte, e.size)
	if !db.readPending(e, buf) {
		if _, err := seg.f.ReadAt(buf, int64(e.off)); err != nil {
			return nil, fmt.Errorf("engine: read %s at offset %d: %w", seg.name, e.off, err)
		}
	}
	db.stats.gets.Add(1)
	r, _, err := decodeRecord(buf)
	if err != nil || r.kind != kindPut || string(r.key) != key {
		return nil, fmt.Errorf("%w: %s at offset %d: record does not match the index (%v)", ErrCorrupt, seg.name, e.off, err)
	}
	return r.value, nil
}

// skipList is a skip list of strings (Pugh, 1990): a sorted linked list
// where each node also sits, with probability 1/4 per level, in sparser
// lists above it, so a search skips ahead level by level and takes about
// log4(n) steps per level. Not safe for concurrent use: the store guards
// it with db.mu.
type skipList struct {
	head  skipNode // head.next[i] is the first node of level i
	level int      // levels in use, 1..skipMaxLevel
	n     int
	rng   uint64 // xorshift state for node levels
}

const skipMaxLevel = 16 // enough for 4^16 keys

type skipNode struct {
	key  string
	next []*skipNode
}

func newSkipList() *skipList {
	return &skipList{head: skipNode{next: make([]*skipNode, skipMaxLevel)}, level: 1, rng: 0x9e3779b97f4a7c15}
}

// randomLevel returns 1 with probability 3/4, 2 with 3/16, and so on.
func (s *skipList) randomLevel() int {
	s.rng ^= s.rng << 13
	s.rng ^= s.rng >> 7
	s.rng ^= s.rng << 17
	// Two bits per level: the level grows while both are zero.
	return min(1+bits.TrailingZeros64(s.rng|1<<62)/2, skipMaxLevel)
}

// seek fills prev[i] with the last node of level i whose key is < key,
// and returns the first node of level 0 whose key is >= key (nil: none).
func (s *skipList) seek(key string, prev *[skipMaxLevel]*skipNode) *skipNode {
	x := &s.head
	for i := s.level - 1; i >= 0; i-- {
		for x.next[i] != nil && strings.Compare(x.next[i].key, key) < 0 {
			x = x.next[i]
		}
		if prev != nil {
			prev[i] = x
		}
	}
	return x.next[0]
}

func (s *skipList) add(key string) {
	var prev [skipMaxLevel]*skipNode
	if x := s.seek(key, &prev); x != nil && x.key == key {
		return
	}
	lvl := s.randomLevel()
	for i := s.level; i < lvl; i++ {
		prev[i] = &s.head
	}
	s.level = max(s.level, lvl)
	x := &skipNode{key: key, next: make([]*skipNode, lvl)}
	for i := range lvl {
		x.next[i] = prev[i].next[i]
		prev[i].next[i] = x
	}
	s.n++
}

func (s *skipList) remove(key string) {
	var prev [skipMaxLevel]*skipNode
	x := s.seek(key, &prev)
	if x == nil || x.key != key {
		return
	}
	for i := range x.next {
		prev[i].next[i] = x.next[i]
	}
	for s.level > 1 && s.head.next[s.level-1] == nil {
		s.level--
	}
	s.n--
}

func (s *skipList) ascend(lo string, fn func(string) bool) {
	for x := s.seek(lo, nil); x != nil; x = x.next[0] {
		if !fn(x.key) {
			return
		}
	}
}
