package engine

import (
	"bytes"
	"errors"
	"testing"
)

func TestRecordRoundTrip(t *testing.T) {
	cases := []struct {
		name  string
		rec   record
		wantN int
	}{
		{"small put", record{seq: 1, kind: kindPut, key: []byte("k"), value: []byte("v")}, headerSize + 2},
		{"empty value", record{seq: 7, kind: kindPut, key: []byte("key"), value: []byte{}}, headerSize + 3},
		{"tombstone", record{seq: 1 << 40, kind: kindDelete, key: []byte("gone")}, headerSize + 4},
		{"max key", record{seq: 2, kind: kindPut, key: bytes.Repeat([]byte("k"), MaxKeySize), value: []byte("v")}, headerSize + MaxKeySize + 1},
		{"binary", record{seq: 3, kind: kindPut, key: []byte{0, 0, 0}, value: []byte{0, 255, 0}}, headerSize + 6},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := appendRecord([]byte("prefix"), c.rec)[len("prefix"):]
			if len(b) != c.wantN {
				t.Fatalf("encoded size: got %d, want %d", len(b), c.wantN)
			}
			// Trailing bytes after the record must not matter.
			got, n, err := decodeRecord(append(b, 1, 2, 3))
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			if n != c.wantN || got.seq != c.rec.seq || got.kind != c.rec.kind || !bytes.Equal(got.key, c.rec.key) || !bytes.Equal(got.value, c.rec.value) {
				t.Errorf("got %+v (n=%d), want %+v (n=%d)", got, n, c.rec, c.wantN)
			}
		})
	}
}

func TestRecordLittleEndianLayout(t *testing.T) {
	b := appendRecord(nil, record{seq: 0x0102030405060708, kind: kindPut, key: []byte("ab"), value: []byte("xyz")})
	want := []byte{8, 7, 6, 5, 4, 3, 2, 1, kindPut, 2, 0, 3, 0, 0, 0, 'a', 'b', 'x', 'y', 'z'}
	if !bytes.Equal(b[4:], want) {
		t.Errorf("got % x, want % x", b[4:], want)
	}
}

func TestDecodeErrors(t *testing.T) {
	good := appendRecord(nil, record{seq: 9, kind: kindPut, key: []byte("key"), value: []byte("value")})
	flip := func(i int) []byte {
		b := bytes.Clone(good)
		b[i] ^= 0x40
		return b
	}
	cases := []struct {
		name string
		in   []byte
		want error
	}{
		{"empty", nil, errEnd},
		{"zeros", make([]byte, 64), errEnd},
		{"short zero header", make([]byte, 5), errEnd},
		{"short header", good[:10], errShort},
		{"torn value", good[:len(good)-1], errShort},
		{"crc flipped", flip(0), errBadRecord},
		{"seq flipped", flip(5), errBadRecord},
		{"kind flipped", flip(12), errBadRecord},
		{"value flipped", flip(len(good) - 1), errBadRecord},
		{"key flipped", flip(headerSize), errBadRecord},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := decodeRecord(c.in)
			if !errors.Is(err, c.want) {
				t.Errorf("got %v, want %v", err, c.want)
			}
		})
	}
}

// FuzzDecode: whatever the bytes, decodeRecord never panics, and what it
// accepts re-encodes to exactly the bytes it consumed.
func FuzzDecode(f *testing.F) {
	f.Add(appendRecord(nil, record{seq: 1, kind: kindPut, key: []byte("k"), value: []byte("v")}))
	f.Add(appendRecord(nil, record{seq: 2, kind: kindDelete, key: []byte("k")}))
	f.Add(make([]byte, headerSize))
	f.Add([]byte{1, 2, 3})
	f.Add(appendRecord(nil, record{seq: 3, kind: kindPut, key: []byte("key"), value: bytes.Repeat([]byte("v"), 300)})[:100])
	f.Fuzz(func(t *testing.T, b []byte) {
		r, n, err := decodeRecord(b)
		if err != nil {
			if n != 0 {
				t.Fatalf("error %v with n=%d", err, n)
			}
			return
		}
		if n > len(b) || n != recordSize(len(r.key), len(r.value)) {
			t.Fatalf("n=%d for %d input bytes, key %d, value %d", n, len(b), len(r.key), len(r.value))
		}
		if re := appendRecord(nil, r); !bytes.Equal(re, b[:n]) {
			t.Fatalf("re-encoding differs:\n got % x\nwant % x", re, b[:n])
		}
	})
}
