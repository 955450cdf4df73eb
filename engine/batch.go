package engine

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// Atomic write batches.
//
// A Batch collects Puts and Deletes; DB.Apply writes them as one batch
// record (kind 4, doc.go has the picture): a header like any record's,
// with no key, whose value is the batch's records, each a whole put or
// delete record with its own seq and checksum. The batch record's
// checksum covers all of them, so a crash that tears the batch anywhere
// leaves a record that fails its checksum, and recovery truncates it
// whole as a torn tail (or refuses it as ErrCorrupt where a sync mark
// says it was durable): after a crash either every record of the batch
// is there or none is.
//
// Inside the batch each record sits where a record of its own would:
// the index points at it, and Get and compaction read it exactly as
// they read a record written by Put. Only recovery's scan sees the
// batch record, and replays the records it holds. Compaction copies a
// batch's live records one by one: by then they are durable, and a
// crash during compaction keeps the old segments until the copies are.
//
// Under every policy a batch is one write: one WriteAt under "always"
// followed by one fdatasync, one entry in a commit group, one append to
// the write buffer. "batch:N" counts each of its records as a write.

// MaxBatchSize is the most bytes a batch's records may take, encoded
// (each record is its header, 19 bytes, plus its key and value).
const MaxBatchSize = 64 << 20

// Batch is a list of Puts and Deletes that DB.Apply writes atomically.
// The zero value is an empty batch. A Batch copies the keys and values
// it is given, so the caller may reuse them. It is not safe for
// concurrent use, but Apply does not change it: one batch may be applied
// many times, or to many stores.
type Batch struct {
	// data holds the records encoded as appendRecord does, with seq and
	// checksum left zero: Apply fills them in when it copies them out.
	data []byte
	// ops is the offset of each record in data.
	ops []int
	// err is the first invalid Put or Delete, returned by Apply.
	err error
}

// Put adds a Put of value under key. A key or value out of range makes
// Apply fail with ErrKeyTooLarge or ErrValueTooLarge, writing nothing.
func (b *Batch) Put(key, value []byte) { b.add(kindPut, key, value) }

// Delete adds a Delete of key.
func (b *Batch) Delete(key []byte) { b.add(kindDelete, key, nil) }

// Len is the number of Puts and Deletes in the batch.
func (b *Batch) Len() int { return len(b.ops) }

// Size is the number of bytes the batch's records take, encoded.
func (b *Batch) Size() int { return len(b.data) }

// Reset empties the batch, keeping its memory.
func (b *Batch) Reset() {
	b.data, b.ops, b.err = b.data[:0], b.ops[:0], nil
}

func (b *Batch) add(kind byte, key, value []byte) {
	switch {
	case b.err != nil:
		return
	case len(key) == 0 || len(key) > MaxKeySize:
		b.err = fmt.Errorf("%w: record %d of the batch: %d bytes, allowed 1..%d", ErrKeyTooLarge, len(b.ops)+1, len(key), MaxKeySize)
		return
	case len(value) > MaxValueSize:
		b.err = fmt.Errorf("%w: record %d of the batch: %d bytes, the limit is %d", ErrValueTooLarge, len(b.ops)+1, len(value), MaxValueSize)
		return
	}
	b.ops = append(b.ops, len(b.data))
	b.data = appendRecord(b.data, record{kind: kind, key: key, value: value})
}

// appendBatch encodes the batch record holding b's records, numbered from
// seq0 on, at the end of dst.
func appendBatch(dst []byte, b *Batch, seq0 uint64) []byte {
	start := len(dst)
	dst = append(dst, make([]byte, headerSize)...)
	last := seq0 + uint64(len(b.ops)) - 1
	h := dst[start:]
	binary.LittleEndian.PutUint64(h[4:12], last)
	h[12] = kindBatch
	binary.LittleEndian.PutUint32(h[15:19], uint32(len(b.data)))
	body := len(dst)
	dst = append(dst, b.data...)
	for i, off := range b.ops {
		end := len(b.data)
		if i+1 < len(b.ops) {
			end = b.ops[i+1]
		}
		r := dst[body+off : body+end]
		binary.LittleEndian.PutUint64(r[4:12], seq0+uint64(i))
		binary.LittleEndian.PutUint32(r[0:4], crc32.Checksum(r[4:], castagnoli))
	}
	binary.LittleEndian.PutUint32(dst[start:start+4], crc32.Checksum(dst[start+4:], castagnoli))
	return dst
}

// batchRecords calls fn for each record inside the batch record r (whose
// value holds them), with its offset from the start of r's value and its
// size. It returns an error if one does not decode or is not a put or a
// delete: the batch's checksum matched, so that is damage written by
// something other than this store.
func batchRecords(r record, fn func(inner record, off, n int)) error {
	body := r.value
	for off := 0; off < len(body); {
		in, n, err := decodeRecord(body[off:])
		if err == nil && in.kind != kindPut && in.kind != kindDelete {
			err = fmt.Errorf("%w: kind %d inside a batch", errBadRecord, in.kind)
		}
		if err != nil {
			return fmt.Errorf("record at offset %d of the batch: %w", off, err)
		}
		fn(in, off, n)
		off += n
	}
	return nil
}

// Apply writes every Put and Delete of b atomically: after a crash the
// store holds all of them or none (see the top of this file). It returns
// when the sync policy says, as Put does; under "always" the batch costs
// one write and one fdatasync. The records get consecutive seqs, in the
// order they were added; a later record of a key wins over an earlier
// one. Apply of an empty batch does nothing. It fails with
// ErrKeyTooLarge or ErrValueTooLarge for an invalid record and
// ErrBatchTooLarge above MaxBatchSize, writing nothing.
func (db *DB) Apply(b *Batch) error {
	if b.err != nil {
		return b.err
	}
	if len(b.ops) == 0 {
		return nil
	}
	if len(b.data) > MaxBatchSize {
		return fmt.Errorf("%w: %d bytes of records, the limit is %d", ErrBatchTooLarge, len(b.data), MaxBatchSize)
	}
	n := int64(headerSize + len(b.data))

	if err := db.waitForCompaction(); err != nil {
		return err
	}
	if err := db.lockForWrite(); err != nil {
		return err
	}
	if err := db.roomForKeysLocked(); err != nil {
		db.writeMu.Unlock()
		return err
	}
	seq, err := db.appendBatchLocked(b, n)
	return db.commitLocked(seq, len(b.ops), err)
}

// appendBatchLocked is appendLocked for a batch record of n bytes: it
// places the record where the policy says, points the index at each
// record inside it and returns the seq of the last one.
//
// REQUIRES: db.writeMu held.
func (db *DB) appendBatchLocked(b *Batch, n int64) (uint64, error) {
	mark, markY, err := db.makeRoomLocked(db.markBuf[:0], n)
	if err != nil {
		return 0, err
	}
	seg := db.active
	at := seg.size
	off := at + int64(len(mark)) // where the batch record starts
	seq0 := db.lastSeq + 1
	last := seq0 + uint64(len(b.ops)) - 1
	handed := uint64(0)
	switch {
	case db.policy.Mode == SyncGroup:
		db.group = append(db.group, mark...)
		start := len(db.group)
		db.group = appendBatch(db.group, b, seq0)
		db.eachInBatch(b, db.group[start:], off, func(key []byte, kind byte, e entry) {
			db.groupIdx = append(db.groupIdx, groupEntry{key: bytes.Clone(key), kind: kind, e: e})
		})
	case db.buffering():
		db.mu.Lock()
		if len(db.pending) == 0 {
			db.pendingSeg, db.pendingOff = seg.id, at
		}
		db.pending = append(db.pending, mark...)
		start := len(db.pending)
		db.pending = appendBatch(db.pending, b, seq0)
		db.eachInBatch(b, db.pending[start:], off, func(key []byte, kind byte, e entry) {
			db.setIndex(key, kind, e)
		})
		db.mu.Unlock()
	default:
		handed = last
		db.buf = append(db.buf[:0], mark...)
		db.buf = appendBatch(db.buf, b, seq0)
		if _, err := seg.f.WriteAt(db.buf, at); err != nil {
			db.commit.fail(fmt.Errorf("write %s at offset %d: %w", seg.name, at, err))
			return 0, db.commit.failure()
		}
		db.mu.Lock()
		db.eachInBatch(b, db.buf[len(mark):], off, func(key []byte, kind byte, e entry) {
			db.setIndex(key, kind, e)
		})
		db.mu.Unlock()
		db.buf = idle(db.buf)
	}

	// What noteAppendedLocked does for one record, for the batch.
	if mark != nil {
		seg.noteMark(at, markY)
	}
	seg.size += int64(len(mark)) + n
	if seg.size > seg.filled {
		seg.filled = seg.size
	}
	db.lastSeq = last
	db.lastDel = nil
	lastOp := b.data[b.ops[len(b.ops)-1]:]
	if lastOp[12] == kindDelete {
		db.lastDel = bytes.Clone(lastOp[headerSize : headerSize+int(binary.LittleEndian.Uint16(lastOp[13:15]))])
	}
	for i := range b.ops {
		in, size := b.op(i)
		if !db.noHints {
			seg.hint = appendHintEntry(seg.hint, seq0+uint64(i), in.kind, in.key, uint32(off+headerSize+int64(b.ops[i])), uint32(size))
		}
		if in.kind == kindPut {
			db.stats.puts.Add(1)
		} else {
			db.stats.deletes.Add(1)
		}
	}
	db.commit.wrote(last, handed, db.policy.Mode == SyncGroup)
	db.stats.bytesWritten.Add(int64(len(mark)) + n)
	if db.buffering() && len(db.pending) >= db.wbufSize {
		if err := db.flushBufferLocked(); err != nil {
			return 0, err
		}
	}
	return last, nil
}

// op returns the i-th record of b (key and kind; seq and checksum are
// not set) and its size.
func (b *Batch) op(i int) (record, int) {
	end := len(b.data)
	if i+1 < len(b.ops) {
		end = b.ops[i+1]
	}
	r := b.data[b.ops[i]:end]
	klen := int(binary.LittleEndian.Uint16(r[13:15]))
	return record{kind: r[12], key: r[headerSize : headerSize+klen], value: r[headerSize+klen:]}, end - b.ops[i]
}

// eachInBatch calls fn with the key, kind and index entry of each record
// of b, whose batch record is enc, placed at offset off of the active
// segment. The keys alias enc.
func (db *DB) eachInBatch(b *Batch, enc []byte, off int64, fn func(key []byte, kind byte, e entry)) {
	body := enc[headerSize:]
	for i := range b.ops {
		in, size := b.op(i)
		at := b.ops[i]
		fn(body[at+headerSize:at+headerSize+len(in.key)], in.kind, entry{seg: db.active.id, off: uint32(off + headerSize + int64(at)), size: uint32(size)})
	}
}
