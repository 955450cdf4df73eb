package engine

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"sync"
)

// A hint file lists, for one segment, every record's key and where it is,
// without the values, so Open can rebuild the index without reading them
// (Bitcask's hint files). It is only an accelerator: a missing or damaged
// hint makes Open scan the segment instead.
//
//	+-----------------+
//	| magic (8B)      |  "kvhint01"
//	+-----------------+---------+------------+----------+-----------+-----+
//	| Seq (8B)        | Kind(1B)| KeyLen(2B) | Off (4B) | Size (4B) | Key |  x count
//	+-----------------+---------+------------+----------+-----------+-----+
//	| Covered (8B) | Count (4B) | CRC-32C (4B) of everything before it   |
//	+--------------+------------+------------------------------------------+
//
// Covered is the segment length the entries describe; Open scans the
// segment from there for records written after the hint. A hint is written
// only after its segment was fdatasynced, to a temporary name, synced and
// renamed, so it never describes records a power cut could take away.
// THESE CONSTANTS ARE PART OF THE ON-DISK FORMAT.
const (
	hintMagic       = "kvhint01"
	hintEntryHeader = 19
	hintTrailer     = 16
)

// appendHintEntry adds one record's entry to a hint buffer.
func appendHintEntry(dst []byte, seq uint64, kind byte, key []byte, off, size uint32) []byte {
	var h [hintEntryHeader]byte
	binary.LittleEndian.PutUint64(h[0:8], seq)
	h[8] = kind
	binary.LittleEndian.PutUint16(h[9:11], uint16(len(key)))
	binary.LittleEndian.PutUint32(h[11:15], off)
	binary.LittleEndian.PutUint32(h[15:19], size)
	dst = append(dst, h[:]...)
	return append(dst, key...)
}

// hintEntry is one decoded hint entry; key aliases the hint buffer.
type hintEntry struct {
	seq       uint64
	kind      byte
	key       []byte
	off, size uint32
}

// writeHint writes seg's hint file, covering seg.size bytes.
//
// REQUIRES: seg's data up to seg.size is fdatasynced; db.writeMu held.
func (db *DB) writeHint(seg *segment) error {
	if db.noHints {
		return nil
	}
	count := 0
	for b := seg.hint; len(b) >= hintEntryHeader; count++ {
		b = b[hintEntryHeader+int(binary.LittleEndian.Uint16(b[9:11])):]
	}
	buf := make([]byte, 0, len(hintMagic)+len(seg.hint)+hintTrailer)
	buf = append(buf, hintMagic...)
	buf = append(buf, seg.hint...)
	buf = binary.LittleEndian.AppendUint64(buf, uint64(seg.size))
	buf = binary.LittleEndian.AppendUint32(buf, uint32(count))
	buf = binary.LittleEndian.AppendUint32(buf, crc32.Checksum(buf, castagnoli))

	path := filepath.Join(db.dir, hintName(seg.id))
	tmp := path + tmpExt
	f, err := db.fs.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("write hint: %w", err)
	}
	_, err = f.WriteAt(buf, 0)
	if err == nil {
		err = f.Sync()
		db.stats.fsyncsBy[causeHint].Add(1)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = db.fs.Rename(tmp, path)
	}
	if err == nil {
		err = db.fs.SyncDir(db.dir)
	}
	if err != nil {
		return fmt.Errorf("write hint %s: %w", path, err)
	}
	return nil
}

var errBadHint = errors.New("bad hint file")

// maxSegmentBytes bounds the length of any segment: a segment is sealed
// once the next record would take it past MaxSegmentSize, unless it is
// empty, so it holds at most MaxSegmentSize bytes or one record. A hint
// claiming to cover more (or a negative length: the top bit of its 8-byte
// field set) is damaged.
const maxSegmentBytes = MaxSegmentSize + headerSize + MaxKeySize + MaxValueSize

// hintFile is a hint file that parseHint checked.
type hintFile struct {
	data    []byte // the whole file, which entries alias
	covered int64  // the segment length the entries describe
	count   int    // the number of entries
	entries []byte // the entries, their framing checked
	last    int    // where the last entry starts in entries (-1: none)
}

// parseHint checks a hint file. It returns errBadHint (wrapped with the
// reason) if the file is damaged, so a bad file applies nothing. It never
// panics, whatever data holds. The entries alias data.
func parseHint(data []byte) (hintFile, error) {
	if len(data) < len(hintMagic)+hintTrailer || string(data[:len(hintMagic)]) != hintMagic {
		return hintFile{}, fmt.Errorf("%w: too short or wrong magic", errBadHint)
	}
	body := data[:len(data)-4]
	if crc32.Checksum(body, castagnoli) != binary.LittleEndian.Uint32(data[len(data)-4:]) {
		return hintFile{}, fmt.Errorf("%w: checksum mismatch", errBadHint)
	}
	t := data[len(data)-hintTrailer:]
	h := hintFile{
		data:    data,
		covered: int64(binary.LittleEndian.Uint64(t[0:8])),
		count:   int(binary.LittleEndian.Uint32(t[8:12])),
		entries: data[len(hintMagic) : len(data)-hintTrailer],
	}
	if h.covered < 0 || h.covered > maxSegmentBytes {
		return hintFile{}, fmt.Errorf("%w: covers %d bytes, a segment holds 0..%d", errBadHint, h.covered, int64(maxSegmentBytes))
	}
	n := 0
	h.last = -1
	for b := h.entries; len(b) > 0; n++ {
		h.last = len(h.entries) - len(b)
		if len(b) < hintEntryHeader {
			return hintFile{}, fmt.Errorf("%w: truncated entry", errBadHint)
		}
		e := hintEntryHeader + int(binary.LittleEndian.Uint16(b[9:11]))
		if len(b) < e {
			return hintFile{}, fmt.Errorf("%w: truncated key", errBadHint)
		}
		if off, size := binary.LittleEndian.Uint32(b[11:15]), binary.LittleEndian.Uint32(b[15:19]); int64(off)+int64(size) > h.covered {
			return hintFile{}, fmt.Errorf("%w: record at %d+%d past the covered %d bytes", errBadHint, off, size, h.covered)
		}
		b = b[e:]
	}
	if n != h.count {
		return hintFile{}, fmt.Errorf("%w: %d entries, trailer says %d", errBadHint, n, h.count)
	}
	return h, nil
}

// entryAt decodes the entry at offset at of the entries (key aliases them).
func (h hintFile) entryAt(at int) hintEntry {
	b := h.entries[at:]
	klen := int(binary.LittleEndian.Uint16(b[9:11]))
	return hintEntry{
		seq:  binary.LittleEndian.Uint64(b[0:8]),
		kind: b[8],
		key:  b[hintEntryHeader : hintEntryHeader+klen],
		off:  binary.LittleEndian.Uint32(b[11:15]),
		size: binary.LittleEndian.Uint32(b[15:19]),
	}
}

// describes reports whether the hint describes the segment in f, as far
// as one read can tell: its last entry's record is in f where the entry
// says, checksum verified, with the entry's seq, kind and key. A hint of
// another segment that had the same id (one that compaction rewrote in
// place, say) fails it, unless by chance a record of the same seq and
// key sits at the same offset; the store never leaves such a hint behind
// (installInPlace removes a segment's hint before replacing the
// segment), so this guards against hint files copied or restored by
// hand, which Open then ignores instead of trusting.
func (h hintFile) describes(f File) bool {
	if h.last < 0 {
		return true // no entries: nothing to mislead with
	}
	e := h.entryAt(h.last)
	buf := make([]byte, e.size)
	if _, err := f.ReadAt(buf, int64(e.off)); err != nil {
		return false
	}
	r, n, err := decodeRecord(buf)
	return err == nil && n == len(buf) && r.seq == e.seq && r.kind == e.kind && string(r.key) == string(e.key)
}

// each calls fn for every entry, in file order (key aliases the entries).
func (h hintFile) each(fn func(e hintEntry)) {
	for at := 0; at < len(h.entries); {
		e := h.entryAt(at)
		fn(e)
		at += hintEntryHeader + len(e.key)
	}
}

// hintBatch is how many entries buildHint hashes and prefetches at once.
const hintBatch = 16

// hintBuilt is what applying a hint file to the index changed besides
// the index, for recovery to fold into the store's own bookkeeping.
type hintBuilt struct {
	// live is the change in live record bytes per segment: what the hint's
	// segment gained, and what the segments whose records its entries
	// replaced or deleted lost.
	live map[uint32]int64
	// lastSeq is the highest seq of the entries, and lastAt where in the
	// entries the first entry with that seq starts (-1: no entries).
	lastSeq uint64
	lastAt  int
}

// buildHint applies every entry of h, the hint file of segment seg, to
// x: a Put entry points its key at its record, a Delete entry removes
// its key. It does so on workers goroutines (at most indexShards; 1
// means the calling goroutine alone), worker w taking the entries whose
// keys live in the tables t with t % workers == w. All the entries of a
// key are in one table, so one worker applies them, in file order, and
// the index ends exactly as applying every entry in file order on one
// goroutine leaves it. buildHint returns when every worker has.
//
// Open rebuilds the index with it, one segment after another, and so
// does MeasureOpenFloor. Each worker reads and hashes every entry to
// find its own, so two workers do more work in all than one, and gain
// only where a second core is free: measured (BenchmarkBuildHint, 1M
// keys, memory already the process's), 67-102 ns per key on two
// goroutines against 80-140 on one, in pairs run one after the other
// at load 3.5-4 on 2 cores; on a busy machine they came out even.
func buildHint(x *keyIndex, h hintFile, seg uint32, workers int) hintBuilt {
	workers = min(max(workers, 1), indexShards)
	if workers == 1 {
		return h.buildPart(x, seg, 1, 0)
	}
	parts := make([]hintBuilt, workers)
	var wg sync.WaitGroup
	for w := range parts {
		wg.Go(func() { parts[w] = h.buildPart(x, seg, workers, w) })
	}
	wg.Wait()
	b := hintBuilt{live: map[uint32]int64{}, lastAt: -1}
	for _, p := range parts {
		for id, d := range p.live {
			b.live[id] += d
		}
		if p.lastAt >= 0 && (b.lastAt < 0 || p.lastSeq > b.lastSeq || p.lastSeq == b.lastSeq && p.lastAt < b.lastAt) {
			b.lastSeq, b.lastAt = p.lastSeq, p.lastAt
		}
	}
	return b
}

// buildPart is worker w's share of buildHint: the entries of h whose
// keys live in the tables t of x with t % workers == w, in file order,
// hashed and prefetched hintBatch at a time (keyIndex.prefetch says
// why). It reads every entry's key to hash it, and touches only its own
// tables.
func (h hintFile) buildPart(x *keyIndex, seg uint32, workers, w int) hintBuilt {
	b := hintBuilt{live: map[uint32]int64{}, lastAt: -1}
	var own int64 // the change in seg's live bytes
	var batch [hintBatch]hintEntry
	var hashes [hintBatch]uint64
	var ats [hintBatch]int
	for at := 0; at < len(h.entries); {
		n := 0
		for n < hintBatch && at < len(h.entries) {
			e := h.entryAt(at)
			if hash := x.hash(e.key); shard(hash)%workers == w {
				batch[n], hashes[n], ats[n] = e, hash, at
				n++
			}
			at += hintEntryHeader + len(e.key)
		}
		x.prefetch(hashes[:n])
		for i := range n {
			e := &batch[i]
			var old entry
			var had bool
			if e.kind == kindPut {
				old, had = x.putHashed(e.key, hashes[i], entry{seg: seg, off: e.off, size: e.size})
				own += int64(e.size)
			} else {
				old, had = x.removeHashed(e.key, hashes[i])
			}
			if had && old.seg == seg {
				own -= int64(old.size)
			} else if had {
				b.live[old.seg] -= int64(old.size)
			}
			if b.lastAt < 0 || e.seq > b.lastSeq {
				b.lastSeq, b.lastAt = e.seq, ats[i]
			}
		}
	}
	b.live[seg] += own
	return b
}
