package engine

import (
	"encoding/binary"
	"fmt"
)

// Sync marks: how recovery knows how far the newest segment was durable.
//
// A sync mark is a record of kind kindMark with no key and an 8-byte value,
// an offset Y of its segment. It promises: every byte of this segment
// before Y was made durable by an fdatasync that returned before this
// record was written.
//
// When the store writes them:
//
//   - After an fdatasync of the active segment that covered it up to Y
//     returns (syncSegment records Y in segment.synced), the next record
//     appended to that segment is preceded by mark(Y), in the same
//     write(2), the same write buffer or the same commit group: no extra
//     system call, and at most one mark per fdatasync. Under "always" a
//     mark precedes every Put but the first; under "group" it opens the
//     flusher's next group; under "batch:N" and "periodic:D" it goes
//     into the write buffer after each sync. Open's own fdatasync of the
//     recovered segments counts too.
//   - Close, after its final fdatasync, writes a mark for the segment's
//     end and fdatasyncs once more (closeMarkLocked), so that the newest
//     segment of a cleanly closed store is vouched for to its last byte.
//
// Sealed segments get no more marks: their damage is ErrCorrupt wherever
// it is.
//
// What recovery does with them (recoverSegment): at a bad record at offset
// B of the newest segment it looks, at every later offset, for a sync mark
// that decodes (vouchingMark). A mark after B with Y > B says byte B was
// durable, so the bad record is damage to durable data: Open refuses with
// ErrCorrupt naming the file and B. Without such a mark nothing says B
// was ever durable, and the bad record is the start of a torn tail that
// no fdatasync vouched for; records that decode after it were never
// durable either (else a mark after them would vouch for B), and
// truncating them loses nothing a Put was promised.
//
// Why this is sound whatever order the disk persisted things in: a mark
// reaches the disk only after it was written, and it was written only
// after the fdatasync covering every byte before Y returned. So if a mark
// claiming Y is on disk at all, the bytes before Y were durable before it
// was written, and a power cut cannot have taken them.
//
// That argument holds only for marks the store wrote, and recovery cannot
// tell those from the bytes of a value that happen to encode a mark (a
// store holding store files, say) when it looks for marks at every offset
// after damage. The condition it relies on: every real mark sits at an
// offset at or after the Y it claims, since an fdatasync covers only
// bytes written before it, and the mark is written after them. So a mark
// at offset X claiming Y > X (and so any mark claiming more than the file
// holds) is impossible, and recovery does not trust it (trusted). A forged
// mark whose claim is possible cannot be told from a real one: the worst
// it can do is make recovery refuse a torn tail as ErrCorrupt, never drop
// or invent a record. The converse is
// not needed: a durable byte that no mark vouches for (the last records
// synced before a crash) looks like a torn tail if it is damaged, exactly
// as before marks existed, and recovery truncates there; nothing after it
// was vouched for, so nothing durable after it is dropped.
//
// A mark is never data: recovery does not index it, Get never finds it
// (it has no key), compaction never copies it (it copies only indexed
// records) and hint files never list it. Stats().BytesWritten counts its
// 27 bytes, as it counts every byte appended to a segment.

// appendMark encodes a sync mark vouching for the bytes before y at the
// end of dst and returns the extended slice.
func appendMark(dst []byte, y int64) []byte {
	var v [markValueSize]byte
	binary.LittleEndian.PutUint64(v[:], uint64(y))
	return appendRecord(dst, record{kind: kindMark, key: nil, value: v[:]})
}

// markOffset returns the offset Y a decoded sync mark vouches for.
func markOffset(r record) int64 {
	return int64(binary.LittleEndian.Uint64(r.value))
}

// markDue returns the offset a sync mark written into s now would vouch
// for, and whether one is due: an fdatasync of s returned since the last
// mark, and covered bytes that no mark vouches for yet.
//
// REQUIRES: db.writeMu held; s is the active segment.
func (s *segment) markDue() (int64, bool) {
	y := s.synced.Load()
	return y, y > s.vouched
}

// noteMark records that a sync mark claiming y now sits at offset off of
// s. A mark right at its own y that nothing follows vouches for its own
// bytes too: if it is damaged and nothing after it was vouched for, it is
// a torn tail, and truncating it loses nothing.
//
// A mark that is not trusted (it claims bytes after itself) is ignored.
//
// REQUIRES: db.writeMu held, or recovery running alone.
func (s *segment) noteMark(off, y int64) {
	if !trusted(off, y) {
		return
	}
	v := y
	if off == y {
		v = off + markSize
	}
	s.vouched = max(s.vouched, v)
}

// closeMarkLocked writes a sync mark for the whole active segment and
// fdatasyncs it, so that the next Open knows every byte of it was
// durable. Close calls it after its own fdatasync; it costs Close a
// second fdatasync, unless no mark is due (nothing was written since the
// last mark) or the mark would take the segment past Options.SegmentSize.
//
// REQUIRES: db.writeMu held; everything written is fdatasynced.
func (db *DB) closeMarkLocked() error {
	seg := db.active
	y, due := seg.markDue()
	if !due || seg.size+markSize > db.segSize {
		return nil
	}
	m := appendMark(nil, y)
	if _, err := seg.f.WriteAt(m, seg.size); err != nil {
		db.commit.fail(fmt.Errorf("write %s at offset %d: %w", seg.name, seg.size, err))
		return db.commit.failure()
	}
	seg.noteMark(seg.size, y)
	seg.size += markSize
	seg.filled = max(seg.filled, seg.size)
	db.stats.bytesWritten.Add(markSize)
	return db.syncSegment(causeSeal, seg, db.lastSeq, seg.size)
}

// trusted reports whether a sync mark at offset off of its segment that
// claims y could have been written by the store: only if y <= off (see
// "Why this is sound" above). A mark claiming bytes after itself is
// impossible, whatever its checksum says.
func trusted(off, y int64) bool { return y <= off }

// vouchingMark looks for a trusted sync mark that decodes in b at an
// offset after bad, trying every offset in turn (the lengths of the
// records around bad may be what was damaged), and claims that some byte
// at or after bad was durable. It returns the mark's offset in b and its
// Y, or -1. base is the offset of b[0] in the segment; bad and the result
// are offsets in b, Y an offset in the segment.
func vouchingMark(b []byte, base, bad int64) (at, y int64) {
	for i := bad + 1; i+markSize <= int64(len(b)); i++ {
		if b[i+12] != kindMark {
			continue // not a mark's header (fast path over zeros and data)
		}
		r, _, err := decodeRecord(b[i:])
		if err != nil || r.kind != kindMark {
			continue
		}
		if y := markOffset(r); y > base+bad && trusted(base+i, y) {
			return i, y
		}
	}
	return -1, 0
}
