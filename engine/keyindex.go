package engine

import (
	"bytes"
	"hash/maphash"
	"math/bits"
	"unsafe"
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
// key with Go 1.26, depending on where it was in its growth, and the
// same made with room for the keys: 100 at 1M keys, 83 at 5M in one run;
// BenchmarkIndexBytesPerKey measures both.) Open sizes the tables from
// the hint files' entry counts, so a reopened index does not grow at all:
// 46 bytes per key, the table two thirds full. Filling it to 80% would
// make that 41, but linear probing's misses (a Get of an absent key, a
// Put of a new one) then walk about 13 slots on average instead of 5.
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
// The index is indexShards tables, not one: two bits of a key's hash
// pick its table, and each table is the structure above, with slots and
// an arena of its own. A key lives in one table for good, so the tables
// share nothing, and Open rebuilds them from the hint files on as many
// goroutines as the machine has cores, each filling tables no other
// touches (buildHint): no locks, and each goroutine applies its keys'
// records in file order, as one goroutine would. A table also grows on
// its own, so the copy a growth makes under the store's lock is a
// quarter of the index.
//
// keyIndex is not safe for concurrent use: the store guards it with
// db.mu (readers share it, writers hold it alone), and only a goroutine
// holding db.writeMu adds keys (keyBytes changes only under it).
// buildHint is the one exception: it runs goroutines that each own
// different tables.
type keyIndex struct {
	seed   maphash.Seed
	tables [indexShards]table
}

// table is one shard of the index: an open-addressing table and its
// arena (the diagram above).
type table struct {
	// _ keeps the fields below off the cache lines of the table before
	// (and of the index's seed): goroutines building different tables
	// write them all the time, and two cores writing one cache line take
	// it from each other on every write (false sharing).
	_ [cacheLine]byte

	seed  maphash.Seed // the index's: a removal and a growth rehash keys
	slots []slot       // len(slots) is the capacity; at least minSlots
	n     int          // slots in use: the number of keys

	chunks [][]byte // the arena: keys back to back, each chunk arenaChunk bytes of capacity
	used   int64    // arena bytes taken, garbage included (in whole chunks' terms, see add)
	dead   int64    // arena bytes of removed keys

	sink uint32 // where prefetch puts what it read, so its reads are kept
}

// slot is one place in a table (the diagram above).
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
	// maxArena is the most arena a 32-bit ref reaches (in one table).
	maxArena = int64(keyAlign) << 32
	// maxKeyBytes is how many arena bytes the store lets its keys take
	// before it refuses new writes (ErrIndexFull): maxArena less room for
	// the keys of writes already queued (group commit) and for chunk
	// tails. It bounds the arenas of all the tables together, so each
	// table's is within reach of its refs.
	maxKeyBytes = maxArena - 1<<30
	// minSlots is the smallest table.
	minSlots = 8
	// indexShards is the number of tables, a power of two; shardShift
	// is where the bits that pick one sit in a key's hash (clear of the
	// tag's low 16 and of the high bits home uses).
	indexShards = 4
	shardShift  = 16
	// cacheLine is the size of a CPU cache line on the machines Go
	// runs on (64 bytes), as far as sharing one matters.
	cacheLine = 64
)

// newKeyIndex returns an empty index with room for n keys before it grows.
// Each table gets room for its share of them: the hash spreads keys
// evenly, and a table grows only at 3/4 full, so with room for 1.5×
// its share a table of a large index grows only if it holds 12% more
// than its share, which for a thousand keys or more it all but never
// does.
func newKeyIndex(n int) *keyIndex {
	x := &keyIndex{seed: maphash.MakeSeed()}
	share := (n + indexShards - 1) / indexShards
	for i := range x.tables {
		x.tables[i] = table{seed: x.seed, slots: newSlots(max(minSlots, share+share/2))}
	}
	return x
}

// newSlots returns n empty slots, in huge pages where the OS gives them
// (hugepage_linux.go says why).
func newSlots(n int) []slot {
	s := make([]slot, n)
	adviseHuge(unsafe.Pointer(unsafe.SliceData(s)), uintptr(n)*slotBytes)
	return s
}

// newBuffer returns a buffer of n bytes for a hint file, in huge pages
// where the OS gives them.
func newBuffer(n int) []byte {
	b := make([]byte, n)
	if n > 0 {
		adviseHuge(unsafe.Pointer(unsafe.SliceData(b)), uintptr(n))
	}
	return b
}

// shard returns which table holds a key of hash h.
func shard(h uint64) int { return int(h>>shardShift) & (indexShards - 1) }

// table returns the table that holds a key of hash h.
func (x *keyIndex) table(h uint64) *table { return &x.tables[shard(h)] }

// len returns the number of keys.
func (x *keyIndex) len() int {
	n := 0
	for i := range x.tables {
		n += x.tables[i].n
	}
	return n
}

// keyBytes returns the arena bytes taken, garbage included.
func (x *keyIndex) keyBytes() int64 {
	var n int64
	for i := range x.tables {
		n += x.tables[i].used
	}
	return n
}

// bytes returns the memory the index holds: its slots and its arenas.
func (x *keyIndex) bytes() int64 {
	var n int64
	for i := range x.tables {
		t := &x.tables[i]
		n += int64(len(t.slots))*slotBytes + int64(len(t.chunks))*arenaChunk
	}
	return n
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
func (t *table) key(s *slot) []byte {
	pos := int64(s.ref-1) * keyAlign
	c := t.chunks[pos/arenaChunk]
	o := int(pos % arenaChunk)
	return c[o : o+int(s.klen)]
}

// find returns the slot of t holding key, or the empty slot where it
// would go.
func (t *table) find(key []byte, h uint64) (i int, found bool) {
	tag := uint16(h)
	for i = home(h, len(t.slots)); ; {
		s := &t.slots[i]
		if s.ref == 0 {
			return i, false
		}
		if s.tag == tag && int(s.klen) == len(key) && bytes.Equal(t.key(s), key) {
			return i, true
		}
		if i++; i == len(t.slots) {
			i = 0
		}
	}
}

// get returns the entry of key.
func (x *keyIndex) get(key []byte) (entry, bool) {
	h := x.hash(key)
	t := x.table(h)
	i, ok := t.find(key, h)
	if !ok {
		return entry{}, false
	}
	return t.slots[i].e, true
}

// put points key at e and returns the entry it replaced, if any. The key
// is copied into the arena only if it is new.
func (x *keyIndex) put(key []byte, e entry) (old entry, had bool) {
	h := x.hash(key)
	return x.table(h).put(key, h, e)
}

// putHashed is put for a key whose hash, h, the caller computed.
func (x *keyIndex) putHashed(key []byte, h uint64, e entry) (old entry, had bool) {
	return x.table(h).put(key, h, e)
}

// put is keyIndex.put in the table that holds key.
func (t *table) put(key []byte, h uint64, e entry) (old entry, had bool) {
	i, ok := t.find(key, h)
	if ok {
		old = t.slots[i].e
		t.slots[i].e = e
		return old, true
	}
	if t.n+1 > len(t.slots)*3/4 {
		t.resize(len(t.slots) + len(t.slots)/2)
		i, _ = t.find(key, h)
	}
	t.slots[i] = slot{ref: t.add(key), tag: uint16(h), klen: uint16(len(key)), e: e}
	t.n++
	return entry{}, false
}

// setEntry points key at e only if key is there; it never adds a key.
func (x *keyIndex) setEntry(key []byte, e entry) {
	h := x.hash(key)
	t := x.table(h)
	if i, ok := t.find(key, h); ok {
		t.slots[i].e = e
	}
}

// remove deletes key and returns its entry, if it was there.
func (x *keyIndex) remove(key []byte) (old entry, had bool) {
	h := x.hash(key)
	return x.table(h).remove(key, h)
}

// removeHashed is remove for a key whose hash, h, the caller computed.
func (x *keyIndex) removeHashed(key []byte, h uint64) (old entry, had bool) {
	return x.table(h).remove(key, h)
}

// remove is keyIndex.remove in the table that holds key.
func (t *table) remove(key []byte, h uint64) (old entry, had bool) {
	i, ok := t.find(key, h)
	if !ok {
		return entry{}, false
	}
	old = t.slots[i].e
	t.dead += alignKey(int(t.slots[i].klen))
	t.n--
	// Backward shift: walk the run after i and move back every slot whose
	// home is not between the hole and itself, so that no lookup stops
	// at the hole before reaching its key.
	for j := i; ; {
		if j++; j == len(t.slots) {
			j = 0
		}
		s := &t.slots[j]
		if s.ref == 0 {
			break
		}
		k := home(maphash.Bytes(t.seed, t.key(s)), len(t.slots))
		// s may move to the hole at i if its home k is not in (i, j],
		// cyclically.
		if (j > i && (k <= i || k > j)) || (j < i && k <= i && k > j) {
			t.slots[i] = *s
			i = j
		}
	}
	t.slots[i] = slot{}
	if t.dead > arenaChunk && t.dead > t.used-t.dead {
		t.rewriteArena()
	}
	return old, true
}

// prefetch reads the slots the hashes hs pick, and nothing else. The
// reads do not depend on one another, so the CPU fetches their cache
// lines from memory together; the puts that follow then find them in
// the cache. A table of a million keys is far larger than the CPU's
// caches, so nearly every slot a key picks is a miss: rebuilding the
// index from hint files (buildHint) is bound by these misses, and
// overlapping them made it about twice as fast (measured: 1M 16-byte
// keys, 73-113 ns per key prefetched 16 at a time, 151-743 ns one at a
// time, CPU time, on a busy 2-core machine).
func (x *keyIndex) prefetch(hs []uint64) {
	for _, h := range hs {
		t := x.table(h)
		t.sink += t.slots[home(h, len(t.slots))].ref
	}
}

// each calls fn for every key and its entry, in no order. key aliases
// the arena: fn must copy it to keep it, and must not change the index.
func (x *keyIndex) each(fn func(key []byte, e entry)) {
	for ti := range x.tables {
		t := &x.tables[ti]
		for i := range t.slots {
			if s := &t.slots[i]; s.ref != 0 {
				fn(t.key(s), s.e)
			}
		}
	}
}

// alignKey returns the arena bytes a key of n bytes takes.
func alignKey(n int) int64 { return int64(n+keyAlign-1) &^ (keyAlign - 1) }

// add copies key into t's arena and returns its ref.
func (t *table) add(key []byte) uint32 {
	n := int(alignKey(len(key)))
	last := len(t.chunks) - 1
	if last < 0 || len(t.chunks[last])+n > arenaChunk {
		if last >= 0 {
			t.used += int64(arenaChunk - len(t.chunks[last])) // the tail no key fits in
		}
		t.chunks = append(t.chunks, make([]byte, 0, arenaChunk))
		last++
	}
	pos := int64(last)*arenaChunk + int64(len(t.chunks[last]))
	if pos/keyAlign+1 > 1<<32-1 {
		panic("engine: broken invariant: the index arena is full (the store checks maxKeyBytes before it writes)")
	}
	c := append(t.chunks[last], key...)
	t.chunks[last] = c[:len(c)+n-len(key)] // the padding: zeros, chunks start zeroed
	t.used += int64(n)
	return uint32(pos/keyAlign) + 1
}

// resize moves every key of t to a table of n slots (n > t.n).
func (t *table) resize(n int) {
	old := t.slots
	t.slots = newSlots(max(minSlots, n))
	for i := range old {
		s := &old[i]
		if s.ref == 0 {
			continue
		}
		k := t.key(s)
		j, _ := t.find(k, maphash.Bytes(t.seed, k))
		t.slots[j] = *s
	}
}

// rewriteArena copies t's live keys into a fresh arena, dropping the
// bytes of removed keys. Slots stay where they are (a key's hash does not
// change); only their refs do.
func (t *table) rewriteArena() {
	old := t.chunks
	t.chunks, t.used, t.dead = nil, 0, 0
	for i := range t.slots {
		s := &t.slots[i]
		if s.ref == 0 {
			continue
		}
		pos := int64(s.ref-1) * keyAlign
		o := int(pos % arenaChunk)
		s.ref = t.add(old[pos/arenaChunk][o : o+int(s.klen)])
	}
}
