package engine

import (
	"bytes"
	"hash/maphash"
	"math/bits"
)

// The hash index: key -> where its live record is.
//
// A Go map[string]entry is the obvious index, and it is what this store
// used first. Per key it costs a string header (16 bytes), a heap object
// of its own for the key bytes, the 12-byte entry and the map's own room
// around them, and Open made a million allocations to rebuild a million
// keys (and every Put of a key converted it to a string, one more). keyIndex keeps the same mapping
// in two flat structures and allocates nothing per key:
//
//   - the arena: every key's bytes back to back in 64 KiB chunks, each key
//     at a position that is a multiple of 8 (keyAlign) so that a 32-bit
//     reference reaches 32 GiB of keys;
//
//   - the slots: an open-addressing hash table, one fixed-size slot per
//     key, found by linear probing from the slot the key's hash picks.
//
//     slot (20 bytes)
//     +----------+----------+-----------+----------+----------+-----------+
//     | ref (4B) | tag (2B) | klen (2B) | seg (4B) | off (4B) | size (4B) |
//     +----------+----------+-----------+----------+----------+-----------+
//     ref   the key's arena position / keyAlign, plus 1; 0 marks an empty slot
//     tag   16 bits of the key's hash: a probe compares the key bytes only
//     when the tag and the length match
//     klen  the key's length (MaxKeySize fits)
//     seg, off, size  the entry: the live record's segment, offset and size
//
// A 16-byte key thus costs 16 bytes of arena and one slot of 20 bytes per
// load factor: the table grows by half when it is three quarters full, so
// between 27 and 40 bytes; 43 to 56 bytes per key in all. (A bare
// map[string]entry of the same keys measured between 56 and 100 bytes per
// key with Go 1.26, depending on where it was in its growth;
// BenchmarkIndexBytesPerKey measures both.) Open sizes the table from the
// hint files' entry counts, so a reopened index does not grow at all.
//
// Linear probing keeps a key's probe sequence in neighbouring slots, so a
// lookup usually touches one or two cache lines. A removal shifts the
// slots after it back (no tombstones), so lookups never slow down with
// deletes; the removed key's arena bytes become garbage, reclaimed by
// rewriting the arena once garbage outweighs the live keys.
//
// The hash is maphash with a seed chosen per index, so the slot of a key
// differs between runs and an adversary cannot pick keys that collide.
//
// keyIndex is not safe for concurrent use: the store guards it with
// db.mu (readers share it, writers hold it alone), and only a goroutine
// holding db.writeMu adds keys (keyBytes changes only under it).
type keyIndex struct {
	seed  maphash.Seed
	slots []slot // len(slots) is the capacity; at least minSlots
	n     int    // slots in use: the number of keys

	chunks [][]byte // the arena: keys back to back, each chunk arenaChunk bytes of capacity
	used   int64    // arena bytes taken, garbage included (in whole chunks' terms, see add)
	dead   int64    // arena bytes of removed keys

	sink uint32 // where prefetch puts what it read, so its reads are kept
}

// slot is one place in the table (the diagram above).
type slot struct {
	ref  uint32 // arena position/keyAlign + 1; 0 = empty
	tag  uint16 // low 16 bits of the key's hash
	klen uint16 // key length
	e    entry
}

const (
	// slotBytes is the size of a slot; TestSlotSize keeps it honest.
	slotBytes = 20
	// arenaChunk is the size of one arena chunk. A key never spans two
	// chunks (MaxKeySize is smaller), so a chunk wastes at most the tail
	// a key did not fit in.
	arenaChunk = 64 << 10
	// keyAlign is the alignment of a key in the arena, the unit of ref.
	keyAlign = 8
	// maxArena is the most arena a 32-bit ref reaches.
	maxArena = int64(keyAlign) << 32
	// maxKeyBytes is how many arena bytes the store lets its keys take
	// before it refuses new writes (ErrIndexFull): maxArena less room for
	// the keys of writes already queued (group commit) and for chunk
	// tails.
	maxKeyBytes = maxArena - 1<<30
	// minSlots is the smallest table.
	minSlots = 8
)

// newKeyIndex returns an empty index with room for n keys before it grows.
func newKeyIndex(n int) *keyIndex {
	x := &keyIndex{seed: maphash.MakeSeed()}
	x.slots = make([]slot, max(minSlots, n+n/2))
	return x
}

// len returns the number of keys.
func (x *keyIndex) len() int { return x.n }

// keyBytes returns the arena bytes taken, garbage included.
func (x *keyIndex) keyBytes() int64 { return x.used }

// bytes returns the memory the index holds: its slots and its arena.
func (x *keyIndex) bytes() int64 {
	return int64(len(x.slots))*slotBytes + int64(len(x.chunks))*arenaChunk
}

// hash returns the hash of key.
func (x *keyIndex) hash(key []byte) uint64 { return maphash.Bytes(x.seed, key) }

// home returns the slot a hash picks: the high word of h × capacity
// (Lemire's "fastrange"), which spreads h over any capacity, not only
// powers of two.
func home(h uint64, n int) int {
	hi, _ := bits.Mul64(h, uint64(n))
	return int(hi)
}

// key returns the bytes of the key in s (aliasing the arena).
func (x *keyIndex) key(s *slot) []byte {
	pos := int64(s.ref-1) * keyAlign
	c := x.chunks[pos/arenaChunk]
	o := int(pos % arenaChunk)
	return c[o : o+int(s.klen)]
}

// find returns the slot holding key, or the empty slot where it would go.
func (x *keyIndex) find(key []byte, h uint64) (i int, found bool) {
	tag := uint16(h)
	for i = home(h, len(x.slots)); ; {
		s := &x.slots[i]
		if s.ref == 0 {
			return i, false
		}
		if s.tag == tag && int(s.klen) == len(key) && bytes.Equal(x.key(s), key) {
			return i, true
		}
		if i++; i == len(x.slots) {
			i = 0
		}
	}
}

// get returns the entry of key.
func (x *keyIndex) get(key []byte) (entry, bool) {
	i, ok := x.find(key, x.hash(key))
	if !ok {
		return entry{}, false
	}
	return x.slots[i].e, true
}

// put points key at e and returns the entry it replaced, if any. The key
// is copied into the arena only if it is new.
func (x *keyIndex) put(key []byte, e entry) (old entry, had bool) {
	return x.putHashed(key, x.hash(key), e)
}

// putHashed is put for a key whose hash, h, the caller computed.
func (x *keyIndex) putHashed(key []byte, h uint64, e entry) (old entry, had bool) {
	i, ok := x.find(key, h)
	if ok {
		old = x.slots[i].e
		x.slots[i].e = e
		return old, true
	}
	if x.n+1 > len(x.slots)*3/4 {
		x.resize(len(x.slots) + len(x.slots)/2)
		i, _ = x.find(key, h)
	}
	x.slots[i] = slot{ref: x.add(key), tag: uint16(h), klen: uint16(len(key)), e: e}
	x.n++
	return entry{}, false
}

// setEntry points key at e only if key is there; it never adds a key.
func (x *keyIndex) setEntry(key []byte, e entry) {
	if i, ok := x.find(key, x.hash(key)); ok {
		x.slots[i].e = e
	}
}

// remove deletes key and returns its entry, if it was there.
func (x *keyIndex) remove(key []byte) (old entry, had bool) {
	return x.removeHashed(key, x.hash(key))
}

// removeHashed is remove for a key whose hash, h, the caller computed.
func (x *keyIndex) removeHashed(key []byte, h uint64) (old entry, had bool) {
	i, ok := x.find(key, h)
	if !ok {
		return entry{}, false
	}
	old = x.slots[i].e
	x.dead += alignKey(int(x.slots[i].klen))
	x.n--
	// Backward shift: walk the run after i and move back every slot whose
	// home is not between the hole and itself, so that no lookup stops
	// at the hole before reaching its key.
	for j := i; ; {
		if j++; j == len(x.slots) {
			j = 0
		}
		s := &x.slots[j]
		if s.ref == 0 {
			break
		}
		k := home(x.hash(x.key(s)), len(x.slots))
		// s may move to the hole at i if its home k is not in (i, j],
		// cyclically.
		if (j > i && (k <= i || k > j)) || (j < i && k <= i && k > j) {
			x.slots[i] = *s
			i = j
		}
	}
	x.slots[i] = slot{}
	if x.dead > arenaChunk && x.dead > x.used-x.dead {
		x.rewriteArena()
	}
	return old, true
}

// prefetch reads the slots the hashes hs pick, and nothing else. The
// reads do not depend on one another, so the CPU fetches their cache
// lines from memory together; the puts that follow then find them in
// the cache. A table of a million keys is far larger than the CPU's
// caches, so nearly every slot a key picks is a miss: rebuilding the
// index from hint files (eachHinted) is bound by these misses, and
// overlapping them made it about twice as fast (measured: 1M 16-byte
// keys, 73-113 ns per key prefetched 16 at a time, 151-743 ns one at a
// time, CPU time, on a busy 2-core machine).
func (x *keyIndex) prefetch(hs []uint64) {
	var s uint32
	for _, h := range hs {
		s += x.slots[home(h, len(x.slots))].ref
	}
	x.sink = s
}

// each calls fn for every key and its entry, in no order. key aliases
// the arena: fn must copy it to keep it, and must not change the index.
func (x *keyIndex) each(fn func(key []byte, e entry)) {
	for i := range x.slots {
		if s := &x.slots[i]; s.ref != 0 {
			fn(x.key(s), s.e)
		}
	}
}

// alignKey returns the arena bytes a key of n bytes takes.
func alignKey(n int) int64 { return int64(n+keyAlign-1) &^ (keyAlign - 1) }

// add copies key into the arena and returns its ref.
func (x *keyIndex) add(key []byte) uint32 {
	n := int(alignKey(len(key)))
	last := len(x.chunks) - 1
	if last < 0 || len(x.chunks[last])+n > arenaChunk {
		if last >= 0 {
			x.used += int64(arenaChunk - len(x.chunks[last])) // the tail no key fits in
		}
		x.chunks = append(x.chunks, make([]byte, 0, arenaChunk))
		last++
	}
	pos := int64(last)*arenaChunk + int64(len(x.chunks[last]))
	if pos/keyAlign+1 > 1<<32-1 {
		panic("engine: broken invariant: the index arena is full (the store checks maxKeyBytes before it writes)")
	}
	c := append(x.chunks[last], key...)
	x.chunks[last] = c[:len(c)+n-len(key)] // the padding: zeros, chunks start zeroed
	x.used += int64(n)
	return uint32(pos/keyAlign) + 1
}

// resize moves every key to a table of n slots (n > x.n).
func (x *keyIndex) resize(n int) {
	old := x.slots
	x.slots = make([]slot, max(minSlots, n))
	for i := range old {
		s := &old[i]
		if s.ref == 0 {
			continue
		}
		j, _ := x.find(x.key(s), x.hash(x.key(s)))
		x.slots[j] = *s
	}
}

// rewriteArena copies the live keys into a fresh arena, dropping the
// bytes of removed keys. Slots stay where they are (a key's hash does not
// change); only their refs do.
func (x *keyIndex) rewriteArena() {
	old := x.chunks
	x.chunks, x.used, x.dead = nil, 0, 0
	for i := range x.slots {
		s := &x.slots[i]
		if s.ref == 0 {
			continue
		}
		pos := int64(s.ref-1) * keyAlign
		o := int(pos % arenaChunk)
		s.ref = x.add(old[pos/arenaChunk][o : o+int(s.klen)])
	}
}
