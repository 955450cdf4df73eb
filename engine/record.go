package engine

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// On-disk record format. THESE CONSTANTS ARE PART OF THE FILE FORMAT: changing
// any of them makes existing stores unreadable. See doc.go for the picture.
const (
	// headerSize is CRC (4) + Seq (8) + Kind (1) + KeyLen (2) + ValueLen (4).
	headerSize = 19

	kindPut    = 1 // a key and its value
	kindDelete = 2 // a tombstone: the key, no value
	// kindMark is a sync mark (syncmark.go): no key, and an 8-byte value
	// holding an offset Y of its segment, little-endian. It says every
	// byte of the segment before Y was made durable by an fdatasync that
	// returned before the mark was written. Its Seq is 0.
	kindMark = 3
	// kindBatch is an atomic batch (batch.go): no key, and a value holding
	// the batch's put and delete records, each whole, with its own seq
	// and checksum. Its Seq is the seq of the last record in it.
	kindBatch = 4

	markValueSize = 8                          // a sync mark's value: the offset Y
	markSize      = headerSize + markValueSize // a whole sync mark: 27 bytes
	// Kind 0 never appears in a record: a zero byte where a kind should be
	// is the zero-filled space after the last record of a segment.
)

// Size limits, checked by Put and Delete. MaxKeySize fits the 2-byte key
// length field; MaxValueSize is a policy choice well inside the 4-byte value
// length field, so that a damaged length cannot make recovery allocate
// gigabytes.
const (
	MaxKeySize   = 4096
	MaxValueSize = 16 << 20
)

// castagnoli is the CRC-32C table; the CPU computes it in hardware on amd64
// and arm64.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// record is one decoded log entry. key and value alias the buffer they were
// decoded from.
type record struct {
	seq   uint64
	kind  byte
	key   []byte
	value []byte
}

// recordSize is the number of bytes a record with these lengths occupies.
func recordSize(keyLen, valueLen int) int { return headerSize + keyLen + valueLen }

// appendRecord encodes r at the end of dst and returns the extended slice.
func appendRecord(dst []byte, r record) []byte {
	start := len(dst)
	dst = append(dst, make([]byte, headerSize)...)
	h := dst[start:]
	binary.LittleEndian.PutUint64(h[4:12], r.seq)
	h[12] = r.kind
	binary.LittleEndian.PutUint16(h[13:15], uint16(len(r.key)))
	binary.LittleEndian.PutUint32(h[15:19], uint32(len(r.value)))
	dst = append(dst, r.key...)
	dst = append(dst, r.value...)
	crc := crc32.Checksum(dst[start+4:], castagnoli)
	binary.LittleEndian.PutUint32(dst[start:start+4], crc)
	return dst
}

// Decoding outcomes other than success. They never leave the package: the
// recovery code turns them into a truncation or an ErrCorrupt naming the
// file and offset.
var (
	// errShort: b ends before the record does (a torn write, or the end of
	// a file that was not zero-filled).
	errShort = errors.New("record extends past the end of the data")
	// errEnd: the header is all zeros, the unwritten space after the log.
	errEnd = errors.New("end of log (zero-filled space)")
	// errBadRecord: the header is impossible or the checksum does not match.
	errBadRecord = errors.New("bad record")
)

// decodeRecord decodes the record at the start of b. It returns the record
// and its size in bytes, or one of errShort, errEnd, errBadRecord (wrapped
// with the reason). It never panics, whatever b holds: fuzzed by FuzzDecode.
func decodeRecord(b []byte) (record, int, error) {
	if len(b) < headerSize {
		if allZero(b) {
			return record{}, 0, errEnd
		}
		return record{}, 0, errShort
	}
	h := b[:headerSize]
	kind := h[12]
	if kind == 0 && allZero(h) {
		return record{}, 0, errEnd
	}
	keyLen := int(binary.LittleEndian.Uint16(h[13:15]))
	valueLen := int(binary.LittleEndian.Uint32(h[15:19]))
	switch {
	case kind == kindMark && (keyLen != 0 || valueLen != markValueSize):
		return record{}, 0, fmt.Errorf("%w: sync mark with a %d-byte key and a %d-byte value (want 0 and %d)", errBadRecord, keyLen, valueLen, markValueSize)
	case kind == kindMark:
		// A well-formed sync mark; the checksum is checked below.
	case kind == kindBatch && (keyLen != 0 || valueLen <= headerSize || valueLen > MaxBatchSize):
		return record{}, 0, fmt.Errorf("%w: batch with a %d-byte key and %d bytes of records (want 0 and %d..%d)", errBadRecord, keyLen, valueLen, headerSize+1, MaxBatchSize)
	case kind == kindBatch:
		// A batch's records are decoded by batchRecords, after its
		// checksum, below, matched.
	case kind != kindPut && kind != kindDelete:
		return record{}, 0, fmt.Errorf("%w: kind %d (want %d, %d, %d or %d)", errBadRecord, kind, kindPut, kindDelete, kindMark, kindBatch)
	case keyLen == 0 || keyLen > MaxKeySize:
		return record{}, 0, fmt.Errorf("%w: key length %d (want 1..%d)", errBadRecord, keyLen, MaxKeySize)
	case valueLen > MaxValueSize:
		return record{}, 0, fmt.Errorf("%w: value length %d (want at most %d)", errBadRecord, valueLen, MaxValueSize)
	case kind == kindDelete && valueLen != 0:
		return record{}, 0, fmt.Errorf("%w: tombstone with a %d-byte value", errBadRecord, valueLen)
	}
	n := recordSize(keyLen, valueLen)
	if len(b) < n {
		return record{}, 0, errShort
	}
	want := binary.LittleEndian.Uint32(h[0:4])
	if got := crc32.Checksum(b[4:n], castagnoli); got != want {
		return record{}, 0, fmt.Errorf("%w: checksum %#08x, stored %#08x", errBadRecord, got, want)
	}
	return record{
		seq:   binary.LittleEndian.Uint64(h[4:12]),
		kind:  kind,
		key:   b[headerSize : headerSize+keyLen],
		value: b[headerSize+keyLen : n],
	}, n, nil
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
