package engine

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeStore creates a store in a temporary OS directory with n keys
// k0..k(n-1) (values v0..), closes it, and returns the directory and the
// path of its only (or newest) segment.
func writeStore(t *testing.T, n int, opts Options) (dir string, segs []string) {
	t.Helper()
	dir = t.TempDir()
	db, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		mustPut(t, db, fmt.Sprintf("k%d", i), fmt.Sprintf("value-%d", i))
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	names, _ := filepath.Glob(filepath.Join(dir, "*"+segmentExt))
	return dir, names
}

// dataEnd returns where the records end in a zero-filled segment.
func dataEnd(t *testing.T, path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	off := 0
	for {
		_, n, err := decodeRecord(b[off:])
		if err != nil {
			return off
		}
		off += n
	}
}

func TestRecoverNewestSegment(t *testing.T) {
	const recLen = headerSize + 2 + 7 // "k1", "value-1"
	cases := []struct {
		name    string
		damage  func(b []byte, end int) []byte
		present int    // keys k0..k(present-1) must be there afterwards
		wantErr string // substring; "" = Open succeeds
	}{
		{"clean", func(b []byte, end int) []byte { return b }, 3, ""},
		{"cut mid last record", func(b []byte, end int) []byte { return b[:end-5] }, 2, ""},
		{"cut mid header", func(b []byte, end int) []byte { return b[:end-recLen+3] }, 2, ""},
		{"cut to the records only", func(b []byte, end int) []byte { return b[:end] }, 3, ""},
		{"garbage after", func(b []byte, end int) []byte { copy(b[end:], "garbage!"); return b }, 3, ""},
		{"flip in last record", func(b []byte, end int) []byte { b[end-2] ^= 1; return b }, 2, ""},
		// A power cut can keep a block holding a record's header but not
		// the next one holding its payload, which then reads as the
		// zero-filled space: the CRC covers the payload, so the record is
		// a torn tail, never a value of zeros.
		{"last header kept, payload zeros", func(b []byte, end int) []byte { clear(b[end-recLen+headerSize : end]); return b }, 2, ""},
		{"last header zeros, payload kept", func(b []byte, end int) []byte { clear(b[end-recLen : end-recLen+headerSize]); return b }, 2, ""},
		{"flip in first record", func(b []byte, end int) []byte { b[headerSize] ^= 1; return b }, 0, "offset 0"},
		{"flip in middle record", func(b []byte, end int) []byte { b[recLen+headerSize+3] ^= 1; return b }, 0, fmt.Sprintf("offset %d", recLen)},
		// Damage to the middle record's length fields or a zeroed header:
		// the third record still decodes where it is, so this is not a
		// torn tail, whatever the damaged lengths claim.
		{"middle key length +1", func(b []byte, end int) []byte { b[recLen+13] ^= 1; return b }, 0, fmt.Sprintf("offset %d", recLen)},
		{"middle value length -1", func(b []byte, end int) []byte { b[recLen+15] ^= 1; return b }, 0, fmt.Sprintf("offset %d", recLen)},
		{"middle value length +16", func(b []byte, end int) []byte { b[recLen+15] ^= 0x10; return b }, 0, fmt.Sprintf("offset %d", recLen)},
		{"middle value length past the data", func(b []byte, end int) []byte { b[recLen+17] ^= 0x01; return b }, 0, fmt.Sprintf("offset %d", recLen)},
		{"middle value length top bit", func(b []byte, end int) []byte { b[recLen+18] ^= 0x80; return b }, 0, fmt.Sprintf("offset %d", recLen)},
		{"middle header zeros", func(b []byte, end int) []byte { clear(b[recLen : recLen+headerSize]); return b }, 0, fmt.Sprintf("offset %d", recLen)},
		{"middle record zeros", func(b []byte, end int) []byte { clear(b[recLen : 2*recLen]); return b }, 0, fmt.Sprintf("offset %d", recLen)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir, segs := writeStore(t, 3, Options{NoHints: true})
			path := segs[len(segs)-1]
			b, _ := os.ReadFile(path)
			end := dataEnd(t, path)
			if end != 3*recLen {
				t.Fatalf("records end at %d, want %d", end, 3*recLen)
			}
			if err := os.WriteFile(path, c.damage(b, end), 0o644); err != nil {
				t.Fatal(err)
			}
			db, err := Open(dir, Options{NoHints: true})
			if c.wantErr != "" {
				if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), c.wantErr) || !strings.Contains(err.Error(), filepath.Base(path)) {
					t.Fatalf("Open: got %v, want ErrCorrupt naming %s and %q", err, filepath.Base(path), c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			for i := range 3 {
				want := ""
				if i < c.present {
					want = fmt.Sprintf("value-%d", i)
				}
				checkGet(t, db, fmt.Sprintf("k%d", i), want)
			}
			// The next write lands right after the good prefix.
			mustPut(t, db, "new", "after")
			if got := db.index["new"].off; got != uint32(c.present*recLen) {
				t.Errorf("next record at offset %d, want %d", got, c.present*recLen)
			}
			db.Close()
			db, err = Open(dir, Options{NoHints: true})
			if err != nil {
				t.Fatalf("second reopen: %v", err)
			}
			defer db.Close()
			checkGet(t, db, "new", "after")
			if got := db.Stats().Keys; got != int64(c.present+1) {
				t.Errorf("keys after second reopen: got %d, want %d", got, c.present+1)
			}
		})
	}
}

func TestRecoverOlderSegmentCorrupt(t *testing.T) {
	for _, hints := range []bool{false, true} {
		t.Run(fmt.Sprintf("hints=%v", hints), func(t *testing.T) {
			opts := Options{SegmentSize: MinSegmentSize, NoHints: !hints}
			dir, segs := writeStore(t, 400, opts)
			if len(segs) < 3 {
				t.Fatalf("got %d segments, want >= 3", len(segs))
			}
			b, _ := os.ReadFile(segs[0])
			b[100] ^= 0x10 // inside record 3 (k3), which starts at 3*28 = 84
			os.WriteFile(segs[0], b, 0o644)
			if hints {
				// A hint does not read values: the flip shows on Get.
				db, err := Open(dir, opts)
				if err != nil {
					t.Fatalf("Open with hints: %v", err)
				}
				defer db.Close()
				_, err = db.Get([]byte("k3"))
				if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), filepath.Base(segs[0])) {
					t.Errorf("Get of a flipped record: got %v, want ErrCorrupt naming %s", err, filepath.Base(segs[0]))
				}
				return
			}
			_, err := Open(dir, opts)
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), filepath.Base(segs[0])+" at offset 84") {
				t.Errorf("Open: got %v, want ErrCorrupt naming %s at offset 84", err, filepath.Base(segs[0]))
			}
		})
	}
}

// TestHints: a reopen with valid hints gives the same index as a scan, and
// a damaged hint is ignored (the segment is scanned instead).
func TestHints(t *testing.T) {
	opts := Options{SegmentSize: MinSegmentSize}
	cases := []struct {
		name   string
		damage func(path string)
	}{
		{"valid", func(string) {}},
		{"flipped", func(p string) { b, _ := os.ReadFile(p); b[len(b)/2] ^= 1; os.WriteFile(p, b, 0o644) }},
		{"truncated", func(p string) { b, _ := os.ReadFile(p); os.WriteFile(p, b[:len(b)-3], 0o644) }},
		{"empty", func(p string) { os.WriteFile(p, nil, 0o644) }},
		{"removed", func(p string) { os.Remove(p) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			db, err := Open(dir, opts)
			if err != nil {
				t.Fatal(err)
			}
			for i := range 300 {
				mustPut(t, db, fmt.Sprintf("k%d", i%120), fmt.Sprintf("v%d", i))
				if i%7 == 0 {
					db.Delete([]byte(fmt.Sprintf("k%d", (i+3)%120)))
				}
			}
			want := map[string]entry{}
			for k, e := range db.index {
				want[k] = e
			}
			db.Close()
			hints, _ := filepath.Glob(filepath.Join(dir, "*"+hintExt))
			if len(hints) < 2 {
				t.Fatalf("got %d hint files, want >= 2", len(hints))
			}
			for _, h := range hints {
				c.damage(h)
			}
			db, err = Open(dir, opts)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if len(db.index) != len(want) {
				t.Errorf("got %d keys, want %d", len(db.index), len(want))
			}
			for k, e := range want {
				if db.index[k] != e {
					t.Errorf("index[%q]: got %+v, want %+v", k, db.index[k], e)
				}
			}
		})
	}
}

// TestLeftoverTmpRemoved: Open deletes the .tmp files of an interrupted
// compaction or hint write.
func TestLeftoverTmpRemoved(t *testing.T) {
	dir, _ := writeStore(t, 3, Options{})
	tmp := filepath.Join(dir, segmentName(99)+tmpExt)
	os.WriteFile(tmp, []byte("half a compaction"), 0o644)
	db, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := os.Stat(tmp); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("leftover %s: got %v, want it removed", tmp, err)
	}
	checkGet(t, db, "k2", "value-2")
}

// TestHintCoveredTopBit: a hint whose covered length has its top bit set
// (negative as an int64) is a damaged hint. Open must scan the segment
// instead, not size a buffer from it.
func TestHintCoveredTopBit(t *testing.T) {
	for _, covered := range []uint64{1 << 63, 1<<64 - 1, 1<<63 | 100} {
		t.Run(fmt.Sprintf("%#x", covered), func(t *testing.T) {
			dir, segs := writeStore(t, 3, Options{NoHints: true})
			id, _ := parseID(filepath.Base(segs[0]), segmentExt)
			if err := os.WriteFile(filepath.Join(dir, hintName(id)), hintBytes(covered), 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := parseHint(hintBytes(covered)); !errors.Is(err, errBadHint) {
				t.Errorf("parseHint: got %v, want errBadHint", err)
			}
			db, err := Open(dir, Options{})
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			defer db.Close()
			for i := range 3 {
				checkGet(t, db, fmt.Sprintf("k%d", i), fmt.Sprintf("value-%d", i))
			}
		})
	}
}

// hintBytes is a hint file with no entries and the given covered length,
// its checksum valid.
func hintBytes(covered uint64) []byte {
	b := []byte(hintMagic)
	b = binary.LittleEndian.AppendUint64(b, covered)
	b = binary.LittleEndian.AppendUint32(b, 0)
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// fuzzOps is the fixed workload FuzzRecover damages: puts, overwrites and
// deletes of a few keys.
func fuzzOps() []record {
	var ops []record
	for i := range 24 {
		k := []byte(fmt.Sprintf("key%d", i%5))
		if i%4 == 3 {
			ops = append(ops, record{seq: uint64(i + 1), kind: kindDelete, key: k})
		} else {
			ops = append(ops, record{seq: uint64(i + 1), kind: kindPut, key: k, value: bytes.Repeat([]byte{byte('a' + i)}, i*3)})
		}
	}
	return ops
}

// FuzzRecover damages a log (cut at a point, a byte xored, garbage in the
// zero-filled tail) and opens it. Open must not panic, and must give
// either an error or exactly the state after some prefix of the writes
// that includes every record before the damage: never a wrong value. And
// when a whole record survives after the xored byte, the damage is not a
// torn tail: Open must refuse with ErrCorrupt rather than drop that record.
func FuzzRecover(f *testing.F) {
	ops := fuzzOps()
	var log []byte
	var ends []int // ends[i] = end of record i
	for _, r := range ops {
		log = appendRecord(log, r)
		ends = append(ends, len(log))
	}
	f.Add(uint16(len(log)), uint16(0), byte(0), []byte(nil))
	f.Add(uint16(len(log)-1), uint16(0), byte(0), []byte(nil))
	f.Add(uint16(len(log)), uint16(40), byte(4), []byte(nil))
	f.Add(uint16(len(log)), uint16(len(log)-3), byte(0x80), []byte("junk"))
	f.Add(uint16(100), uint16(0), byte(0), []byte{1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1})
	f.Fuzz(func(t *testing.T, cut, flipAt uint16, flip byte, tail []byte) {
		b := bytes.Clone(log[:min(int(cut), len(log))])
		damaged := len(b) // first damaged byte
		if int(flipAt) < len(b) && flip != 0 {
			b[flipAt] ^= flip
			damaged = min(damaged, int(flipAt))
		}
		b = append(b, tail...)
		b = append(b, make([]byte, 64)...) // zero-filled space
		mem := NewMemFS()
		mem.MkdirAll("/db", 0o755)
		fh, _ := mem.OpenFile("/db/"+segmentName(1), os.O_RDWR|os.O_CREATE, 0o644)
		fh.WriteAt(b, 0)
		fh.Sync()
		mem.SyncDir("/db")
		db, err := Open("/db", Options{FS: mem})
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Open failed with %v, want nil or ErrCorrupt", err)
			}
			return
		}
		defer db.Close()
		if damaged < int(cut) {
			if i := intactAfter(ends, damaged, min(int(cut), len(log))); i >= 0 {
				t.Fatalf("Open succeeded, but record %d (ending at %d) is intact after the damage at %d: want ErrCorrupt", i, ends[i], damaged)
			}
		}
		// The recovered state must be the state after some prefix of ops
		// that keeps every record fully before the damage.
		got := map[string]string{}
		for i := range 5 {
			k := fmt.Sprintf("key%d", i)
			v, err := db.Get([]byte(k))
			if err == nil {
				got[k] = string(v)
			} else if !errors.Is(err, ErrNotFound) {
				t.Fatalf("Get(%s): %v", k, err)
			}
		}
		state := map[string]string{}
		for p := 0; p <= len(ops); p++ {
			if p > 0 {
				r := ops[p-1]
				if r.kind == kindPut {
					state[string(r.key)] = string(r.value)
				} else {
					delete(state, string(r.key))
				}
			}
			// Every record that ends before the damage must be kept.
			keepsUndamaged := p == len(ops) || ends[p] > damaged
			if keepsUndamaged && equalMaps(state, got) {
				return
			}
		}
		t.Fatalf("recovered %v matches no prefix of the writes (damage at %d)", got, damaged)
	})
}

// intactAfter returns the index of a record that starts after byte
// damaged and ends by end, or -1. ends[i] is where record i ends.
func intactAfter(ends []int, damaged, end int) int {
	for i := range ends {
		start := 0
		if i > 0 {
			start = ends[i-1]
		}
		if start > damaged && ends[i] <= end {
			return i
		}
	}
	return -1
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestRecoverRandomDamage is FuzzRecover's property over random damage,
// run on every `go test`.
func TestRecoverRandomDamage(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	ops := fuzzOps()
	var log []byte
	var ends []int
	for _, r := range ops {
		log = appendRecord(log, r)
		ends = append(ends, len(log))
	}
	for range 300 {
		cut := rng.IntN(len(log) + 1)
		b := bytes.Clone(log[:cut])
		damaged := cut
		if cut > 0 && rng.IntN(2) == 0 {
			damaged = rng.IntN(cut)
			b[damaged] ^= byte(1 + rng.IntN(255))
		}
		b = append(b, make([]byte, 32)...)
		mem := NewMemFS()
		mem.MkdirAll("/db", 0o755)
		fh, _ := mem.OpenFile("/db/"+segmentName(1), os.O_RDWR|os.O_CREATE, 0o644)
		fh.WriteAt(b, 0)
		db, err := Open("/db", Options{FS: mem})
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Open: got %v, want nil or ErrCorrupt", err)
			}
			continue
		}
		if i := intactAfter(ends, damaged, cut); damaged < cut && i >= 0 {
			t.Fatalf("Open succeeded, but record %d (ending at %d) is intact after the damage at %d: want ErrCorrupt", i, ends[i], damaged)
		}
		for i := range 5 {
			v, err := db.Get([]byte(fmt.Sprintf("key%d", i)))
			if err != nil && !errors.Is(err, ErrNotFound) {
				t.Fatalf("Get: %v", err)
			}
			if err == nil && len(v) > 0 && bytes.Count(v, v[:1]) != len(v) {
				t.Fatalf("Get(key%d) = %q: not a written value", i, v)
			}
		}
		db.Close()
	}
}

// FuzzHint feeds parseHint arbitrary bytes. It must never panic, and a
// hint it accepts must be internally consistent: as many entries as its
// trailer says, each inside the covered length, with a key of the length
// its entry header gives.
func FuzzHint(f *testing.F) {
	var valid []byte
	valid = append(valid, hintMagic...)
	valid = appendHintEntry(valid, 1, kindPut, []byte("k1"), 0, 30)
	valid = appendHintEntry(valid, 2, kindDelete, []byte("k2"), 30, 21)
	valid = binary.LittleEndian.AppendUint64(valid, 51)
	valid = binary.LittleEndian.AppendUint32(valid, 2)
	valid = binary.LittleEndian.AppendUint32(valid, crc32.Checksum(valid, castagnoli))
	f.Add(valid)
	f.Add(valid[:len(valid)-1])
	f.Add([]byte(hintMagic))
	f.Add([]byte{})
	f.Add(hintBytes(1 << 63)) // covered negative as an int64: once panicked Open
	f.Fuzz(func(t *testing.T, data []byte) {
		h, err := parseHint(data)
		if err != nil {
			return
		}
		n := 0
		h.each(func(e hintEntry) {
			n++
			if int64(e.off)+int64(e.size) > maxCovered(data) {
				t.Errorf("entry at %d+%d past the covered length", e.off, e.size)
			}
		})
		if n != trailerCount(data) {
			t.Errorf("parseHint gave %d entries, trailer says %d", n, trailerCount(data))
		}
		if h.covered != maxCovered(data) {
			t.Errorf("covered %d, trailer says %d", h.covered, maxCovered(data))
		}
		if h.covered < 0 || h.covered > maxSegmentBytes {
			t.Errorf("accepted covered %d, want 0..%d", h.covered, int64(maxSegmentBytes))
		}
	})
}

// trailerCount is the entry count in a hint's trailer.
func trailerCount(data []byte) int {
	if len(data) < hintTrailer {
		return -1
	}
	return int(binary.LittleEndian.Uint32(data[len(data)-8 : len(data)-4]))
}

// maxCovered is the covered length in a hint's trailer.
func maxCovered(data []byte) int64 {
	if len(data) < hintTrailer {
		return -1
	}
	return int64(binary.LittleEndian.Uint64(data[len(data)-hintTrailer:]))
}
