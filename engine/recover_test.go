package engine

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unsafe"
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

// openLog writes b, synced, as the only segment of a store in a fresh
// MemFS and opens that store, as recovery after a crash would find it.
func openLog(b []byte) (*DB, error) {
	mem := NewMemFS()
	mem.MkdirAll("/db", 0o755)
	fh, _ := mem.OpenFile("/db/"+segmentName(1), os.O_RDWR|os.O_CREATE, 0o644)
	fh.WriteAt(b, 0)
	fh.Sync()
	mem.SyncDir("/db")
	return Open("/db", Options{FS: mem})
}

// checkIndex fails t unless db's index holds exactly the entries in want,
// as an index taken before a Close should be after the reopen.
func checkIndex(t *testing.T, db *DB, want map[string]entry) {
	t.Helper()
	got := indexMap(db)
	if len(got) != len(want) {
		t.Errorf("got %d keys, want %d", len(got), len(want))
	}
	for k, e := range want {
		if got[k] != e {
			t.Errorf("index[%q]: got %+v, want %+v", k, got[k], e)
		}
	}
}

// indexMap returns a copy of db's index as a map.
func indexMap(db *DB) map[string]entry {
	db.mu.RLock()
	defer db.mu.RUnlock()
	m := make(map[string]entry, db.index.len())
	db.index.each(func(k []byte, e entry) { m[string(k)] = e })
	return m
}

// dataEnd returns where the records end in a zero-filled segment.
func dataEnd(t *testing.T, path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, _, end := layout(b)
	return end
}

// layout walks the records at the start of b and returns where each put or
// delete starts and ends (sync marks are skipped) and where the records end.
func layout(b []byte) (starts, ends []int, end int) {
	for {
		r, n, err := decodeRecord(b[end:])
		if err != nil {
			return starts, ends, end
		}
		if r.kind != kindMark {
			starts, ends = append(starts, end), append(ends, end+n)
		}
		end += n
	}
}

// TestRecoverNewestSegment damages the newest segment of a closed store of
// three keys in each way a crash or a bad disk can, under a policy that
// syncs every write and one that syncs every other write. A store that was
// closed ends with a sync mark that vouches for all of it, so damage to
// any record is refused; the tail cases first remove that mark, so the
// segment looks as it would after a power cut before the last record was
// synced, and the damaged tail is truncated.
func TestRecoverNewestSegment(t *testing.T) {
	// l: the three records' starts p and ends e, and the end of the data
	// (after Close's sync mark).
	type l struct {
		p, e []int
		end  int
	}
	// crashed drops Close's sync mark and whatever vouched for the last
	// record, as a power cut before the last record was synced would.
	crashed := func(b []byte, at l) []byte { clear(b[at.e[2]:at.end]); return b }
	cases := []struct {
		name    string
		damage  func(b []byte, at l) []byte
		present int    // keys k0..k(present-1) must be there afterwards
		wantErr string // "at offset N" for record N's start; "" = Open succeeds
		errAt   int    // the record whose offset the error names
	}{
		{"clean", func(b []byte, at l) []byte { return b }, 3, "", 0},
		{"crashed after the last record", crashed, 3, "", 0},
		{"cut mid last record", func(b []byte, at l) []byte { return b[:at.e[2]-5] }, 2, "", 0},
		{"cut mid header", func(b []byte, at l) []byte { return b[:at.p[2]+3] }, 2, "", 0},
		{"cut to the records only", func(b []byte, at l) []byte { return b[:at.e[2]] }, 3, "", 0},
		{"cut mid Close's sync mark", func(b []byte, at l) []byte { return b[:at.end-3] }, 3, "", 0},
		{"garbage after", func(b []byte, at l) []byte { copy(b[at.end:], "garbage!"); return b }, 3, "", 0},
		{"flip in last record, crashed", func(b []byte, at l) []byte { b = crashed(b, at); b[at.e[2]-2] ^= 1; return b }, 2, "", 0},
		// A power cut can keep a block holding a record's header but not
		// the next one holding its payload, which then reads as the
		// zero-filled space: the CRC covers the payload, so the record is
		// a torn tail, never a value of zeros.
		{"last header kept, payload zeros", func(b []byte, at l) []byte {
			b = crashed(b, at)
			clear(b[at.p[2]+headerSize : at.e[2]])
			return b
		}, 2, "", 0},
		{"last header zeros, payload kept", func(b []byte, at l) []byte { b = crashed(b, at); clear(b[at.p[2] : at.p[2]+headerSize]); return b }, 2, "", 0},
		// Close's sync mark vouches for the last record: damage to it is
		// damage to durable data.
		{"flip in last record, closed", func(b []byte, at l) []byte { b[at.e[2]-2] ^= 1; return b }, 0, "corrupt", 2},
		{"last header zeros, closed", func(b []byte, at l) []byte { clear(b[at.p[2] : at.p[2]+headerSize]); return b }, 0, "corrupt", 2},
		{"flip in first record", func(b []byte, at l) []byte { b[headerSize] ^= 1; return b }, 0, "corrupt", 0},
		{"flip in middle record", func(b []byte, at l) []byte { b[at.p[1]+headerSize+3] ^= 1; return b }, 0, "corrupt", 1},
		// Damage to the middle record's length fields or a zeroed header:
		// a sync mark after it still decodes where it is and vouches for
		// it, so this is not a torn tail, whatever the damaged lengths
		// claim.
		{"middle key length +1", func(b []byte, at l) []byte { b[at.p[1]+13] ^= 1; return b }, 0, "corrupt", 1},
		{"middle value length -1", func(b []byte, at l) []byte { b[at.p[1]+15] ^= 1; return b }, 0, "corrupt", 1},
		{"middle value length +16", func(b []byte, at l) []byte { b[at.p[1]+15] ^= 0x10; return b }, 0, "corrupt", 1},
		{"middle value length past the data", func(b []byte, at l) []byte { b[at.p[1]+17] ^= 0x01; return b }, 0, "corrupt", 1},
		{"middle value length top bit", func(b []byte, at l) []byte { b[at.p[1]+18] ^= 0x80; return b }, 0, "corrupt", 1},
		{"middle header zeros", func(b []byte, at l) []byte { clear(b[at.p[1] : at.p[1]+headerSize]); return b }, 0, "corrupt", 1},
		{"middle record zeros", func(b []byte, at l) []byte { clear(b[at.p[1]:at.e[1]]); return b }, 0, "corrupt", 1},
		{"middle record zeros, crashed", func(b []byte, at l) []byte { b = crashed(b, at); clear(b[at.p[1]:at.e[1]]); return b }, 0, "corrupt", 1},
	}
	for _, policy := range []string{"always", "batch:2"} {
		pol, err := ParseSync(policy)
		if err != nil {
			t.Fatal(err)
		}
		opts := Options{NoHints: true, Sync: pol}
		for _, c := range cases {
			t.Run(policy+"/"+c.name, func(t *testing.T) {
				dir, segs := writeStore(t, 3, opts)
				path := segs[len(segs)-1]
				b, _ := os.ReadFile(path)
				p, e, end := layout(b)
				if len(p) != 3 || end != e[2]+markSize {
					t.Fatalf("got records at %v..%v ending at %d, want 3 records and Close's sync mark", p, e, end)
				}
				at := l{p, e, end}
				b = c.damage(b, at)
				if err := os.WriteFile(path, b, 0o644); err != nil {
					t.Fatal(err)
				}
				db, err := Open(dir, opts)
				if c.wantErr != "" {
					want := fmt.Sprintf("%s at offset %d", filepath.Base(path), p[c.errAt])
					if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), want) {
						t.Fatalf("Open: got %v, want ErrCorrupt naming %q", err, want)
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
				// The next write lands right after the good prefix (and
				// the sync mark for it, if Open's fdatasync needs one).
				_, _, goodEnd := layout(b)
				mustPut(t, db, "new", "after")
				if got := int(indexMap(db)["new"].off); got != goodEnd && got != goodEnd+markSize {
					t.Errorf("next record at offset %d, want %d or %d", got, goodEnd, goodEnd+markSize)
				}
				db.Close()
				db, err = Open(dir, opts)
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
}

// TestRecoverUnvouchedTail: after a power cut that kept the unsynced tail
// of the newest segment out of order, a hole can sit before whole records
// that were never synced. No sync mark vouches for the hole, so Open
// truncates there instead of refusing the store; and a mark that vouches
// for less than the hole changes nothing.
func TestRecoverUnvouchedTail(t *testing.T) {
	t.Run("never synced", func(t *testing.T) {
		// batch:100 never syncs six Puts before Close: no marks but Close's.
		opts := Options{NoHints: true, Sync: SyncPolicy{Mode: SyncBatch, N: 100}}
		dir, segs := writeStore(t, 6, opts)
		b, _ := os.ReadFile(segs[0])
		p, e, end := layout(b)
		if len(p) != 6 || end != e[5]+markSize {
			t.Fatalf("got records at %v ending at %d, want 6 and Close's sync mark", p, end)
		}
		clear(b[e[5]:end])               // the power cut came before Close
		clear(b[p[1] : p[1]+headerSize]) // and kept a hole where k1's header was
		os.WriteFile(segs[0], b, 0o644)
		db, err := Open(dir, opts)
		if err != nil {
			t.Fatalf("Open: got %v, want the unvouched tail truncated", err)
		}
		defer db.Close()
		checkGet(t, db, "k0", "value-0")
		for i := 1; i < 6; i++ {
			checkGet(t, db, fmt.Sprintf("k%d", i), "")
		}
	})
	// A hand-made log: r0 r1 mark(end of r0) r2, as group commit writes it
	// when r1 was queued before r0's fdatasync returned.
	var log []byte
	rec := func(k string) {
		log = appendRecord(log, record{seq: uint64(len(log) + 1), kind: kindPut, key: []byte(k), value: []byte("v")})
	}
	rec("a")
	e0 := len(log)
	rec("b")
	log = appendMark(log, int64(e0))
	rec("c")
	for _, c := range []struct {
		name    string
		at      int  // the byte damaged
		refused bool // a mark after it claims it was durable
		keys    string
	}{
		{"hole in r1: the mark vouches for r0 only", e0 + 2, false, "a"},
		{"hole in r0: the mark vouches for it", 2, true, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := bytes.Clone(log)
			b[c.at] ^= 0xff
			b = append(b, make([]byte, 64)...)
			db, err := openLog(b)
			if c.refused {
				if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "at offset 0") {
					t.Fatalf("Open: got %v, want ErrCorrupt at offset 0", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Open: got %v, want the unvouched tail truncated", err)
			}
			defer db.Close()
			checkGet(t, db, "a", "v")
			checkGet(t, db, "b", "")
			checkGet(t, db, "c", "")
		})
	}
}

// TestRecoverForgedMark: a torn record followed by a record whose value
// holds the bytes of an encoded sync mark. Recovery looks for marks at
// every offset after the torn record, so it finds the one in the value;
// a mark claiming bytes after its own offset is impossible (syncmark.go,
// "Why this is sound") and must not make Open refuse the log, however
// large the claim. A claim at or before its own offset cannot be told
// from a real mark's, and is trusted.
func TestRecoverForgedMark(t *testing.T) {
	rec := func(log []byte, k string, v []byte) []byte {
		return appendRecord(log, record{seq: uint64(len(log) + 1), kind: kindPut, key: []byte(k), value: v})
	}
	a := rec(nil, "a", []byte("v"))
	torn := rec(bytes.Clone(a), "b", []byte("v"))
	torn[len(a)+2] ^= 0xff                         // b's checksum no longer matches
	at := int64(len(torn) + headerSize + len("c")) // where the forged mark lands
	for _, c := range []struct {
		name    string
		claim   int64
		refused bool
	}{
		{"claims 1 GiB", 1 << 30, false},
		{"claims the byte after itself", at + 1, false},
		{"claims its own offset", at, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			log := rec(bytes.Clone(torn), "c", appendMark(nil, c.claim))
			log = append(log, make([]byte, 16)...) // the zero-filled tail
			db, err := openLog(log)
			if c.refused {
				if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), fmt.Sprintf("at offset %d", len(a))) {
					t.Fatalf("Open of a %d-byte log: got %v, want ErrCorrupt at offset %d", len(log), err, len(a))
				}
				return
			}
			if err != nil {
				t.Fatalf("Open of a %d-byte log: got %v, want the torn tail truncated", len(log), err)
			}
			defer db.Close()
			checkGet(t, db, "a", "v")
			checkGet(t, db, "b", "")
			checkGet(t, db, "c", "")
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
			p, _, _ := layout(b)
			at := p[3]       // record 3 (k3)
			b[at+16] ^= 0x10 // inside its value length
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
			if want := fmt.Sprintf("%s at offset %d", filepath.Base(segs[0]), at); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), want) {
				t.Errorf("Open: got %v, want ErrCorrupt naming %q", err, want)
			}
		})
	}
}

// TestHintsMatchTheScan: a reopen with valid hints gives the same index as a scan, and
// a damaged hint is ignored (the segment is scanned instead).
func TestHintsMatchTheScan(t *testing.T) {
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
			want := indexMap(db)
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
			checkIndex(t, db, want)
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

// markedLog encodes ops as "always" writes them: each record after the
// first is preceded by a sync mark for everything before it. ends[i] is
// where record i ends, marks[i] where the i-th mark starts (and what it
// vouches for: a mark sits right where the fdatasync before it ended).
func markedLog(ops []record) (log []byte, ends, marks []int) {
	for i, r := range ops {
		if i > 0 {
			marks = append(marks, len(log))
			log = appendMark(log, int64(len(log)))
		}
		log = appendRecord(log, r)
		ends = append(ends, len(log))
	}
	return log, ends, marks
}

// FuzzRecover damages a log (cut at a point, a byte xored, garbage in the
// zero-filled tail) and opens it. Open must not panic, and must give
// either an error or exactly the state after some prefix of the writes
// that includes every record before the damage: never a wrong value. And
// when a whole sync mark survives after the xored byte, it vouches for the
// damaged byte, so the damage is not a torn tail: Open must refuse with
// ErrCorrupt rather than drop the durable records after it.
func FuzzRecover(f *testing.F) {
	ops := fuzzOps()
	log, ends, marks := markedLog(ops)
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
		db, err := openLog(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Open failed with %v, want nil or ErrCorrupt", err)
			}
			return
		}
		defer db.Close()
		if damaged < int(cut) {
			if i := markAfter(marks, damaged, min(int(cut), len(log))); i >= 0 {
				t.Fatalf("Open succeeded, but the sync mark at %d is intact after the damage at %d and vouches for it: want ErrCorrupt", marks[i], damaged)
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

// markAfter returns the index of a sync mark of markedLog that starts
// after byte damaged (so it vouches for it) and ends by end, or -1.
func markAfter(marks []int, damaged, end int) int {
	for i, m := range marks {
		if m > damaged && m+markSize <= end {
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
	log, _, marks := markedLog(fuzzOps())
	for range 300 {
		cut := rng.IntN(len(log) + 1)
		b := bytes.Clone(log[:cut])
		damaged := cut
		if cut > 0 && rng.IntN(2) == 0 {
			damaged = rng.IntN(cut)
			b[damaged] ^= byte(1 + rng.IntN(255))
		}
		b = append(b, make([]byte, 32)...)
		db, err := openLog(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Open: got %v, want nil or ErrCorrupt", err)
			}
			continue
		}
		if i := markAfter(marks, damaged, cut); damaged < cut && i >= 0 {
			t.Fatalf("Open succeeded, but the sync mark at %d is intact after the damage at %d and vouches for it: want ErrCorrupt", marks[i], damaged)
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

// TestStaleHint: a hint file that no longer describes its segment never
// makes Open return wrong data: a hint that covers only a prefix of its
// segment (records were appended after it was written) has the rest
// scanned, and the hint of an earlier segment that had the same id (one
// that compaction rewrote in place), put back by hand, is ignored even
// when the new segment is longer than the hint covers (before
// hintFile.describes, Open trusted it and then failed with ErrCorrupt at
// the offset where it resumed the scan).
func TestStaleHint(t *testing.T) {
	cases := []struct {
		name string
		// change writes to db after the hints were saved.
		change func(t *testing.T, db *DB, model map[string]string)
	}{
		{"covers a prefix", func(t *testing.T, db *DB, model map[string]string) {
			for i := range 40 {
				k, v := fmt.Sprintf("k%d", i%25), fmt.Sprintf("after-%d", i)
				mustPut(t, db, k, v)
				model[k] = v
			}
			db.Delete([]byte("k3"))
			delete(model, "k3")
		}},
		{"of a segment compacted in place", func(t *testing.T, db *DB, model map[string]string) {
			for i := range 600 {
				k, v := fmt.Sprintf("k%d", i%60), fmt.Sprintf("late-%d-%s", i, strings.Repeat("y", i%50))
				mustPut(t, db, k, v)
				model[k] = v
			}
			for i := 0; i < 60; i += 4 {
				k := fmt.Sprintf("k%d", i)
				db.Delete([]byte(k))
				delete(model, k)
			}
			if err := db.CompactSealed(); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			opts := Options{SegmentSize: MinSegmentSize, Sync: SyncPolicy{Mode: SyncNone}}
			db, err := Open(dir, opts)
			if err != nil {
				t.Fatal(err)
			}
			model := map[string]string{}
			for i := range 200 {
				k, v := fmt.Sprintf("k%d", i%100), fmt.Sprintf("v%d-%s", i, strings.Repeat("x", 40))
				mustPut(t, db, k, v)
				model[k] = v
			}
			db.Close()
			saved := map[string][]byte{}
			hints, _ := filepath.Glob(filepath.Join(dir, "*"+hintExt))
			for _, h := range hints {
				b, err := os.ReadFile(h)
				if err != nil {
					t.Fatal(err)
				}
				saved[h] = b
			}
			if db, err = Open(dir, opts); err != nil {
				t.Fatal(err)
			}
			c.change(t, db, model)
			db.Close()
			restored := 0
			for h, b := range saved {
				seg := strings.TrimSuffix(h, hintExt) + segmentExt
				if _, err := os.Stat(seg); err != nil {
					continue // the segment is gone: its hint would be ignored anyway
				}
				if err := os.WriteFile(h, b, 0o644); err != nil {
					t.Fatal(err)
				}
				restored++
			}
			if restored == 0 {
				t.Fatal("no stale hint put back")
			}
			db, err = Open(dir, opts)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			for i := range 100 {
				k := fmt.Sprintf("k%d", i)
				got, err := db.Get([]byte(k))
				want, ok := model[k]
				switch {
				case !ok && !errors.Is(err, ErrNotFound):
					t.Errorf("Get(%s): got %q, %v; want ErrNotFound", k, got, err)
				case ok && (err != nil || string(got) != want):
					t.Errorf("Get(%s): got %q, %v; want %q", k, got, err, want)
				}
			}
			if got := db.Stats().Keys; got != int64(len(model)) {
				t.Errorf("Keys: got %d, want %d", got, len(model))
			}
		})
	}
}

// recovered is what Open rebuilt from a store's files: the index, the
// live bytes of each segment, lastSeq and lastDel, and the ordered set.
type recovered struct {
	index   map[string]entry
	live    map[uint32]int64
	lastSeq uint64
	lastDel string
	ordered []string
}

// openRecovered opens dir with opts, records what recovery rebuilt, and
// closes it.
func openRecovered(t *testing.T, dir string, opts Options) recovered {
	t.Helper()
	db, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	r := recovered{index: map[string]entry{}, live: map[uint32]int64{}, lastSeq: db.lastSeq, lastDel: string(db.lastDel)}
	db.index.each(func(k []byte, e entry) { r.index[string(k)] = e })
	for id, s := range db.segs {
		r.live[id] = s.live
	}
	if db.ordered != nil {
		db.ordered.ascend("", func(k string) bool { r.ordered = append(r.ordered, k); return true })
	}
	return r
}

// TestParallelBuildMatchesSerial: Open rebuilds the index from the hint
// files on several goroutines (buildHint) and ends with exactly what one
// goroutine builds: the same keys at the same records (the newest record
// of a key wins across segments, a tombstone removes its key), the same
// live bytes per segment, the same lastSeq and lastDel (which a tie of
// seqs, as compaction's tombstone makes, must break in file order), the
// same ordered set; and those keys are the ones the writes left live.
// Randomized stores of many small segments: puts, overwrites, deletes,
// batches and compactions.
func TestParallelBuildMatchesSerial(t *testing.T) {
	for seed := range uint64(6) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 39))
			const dir = "/db"
			opts := Options{FS: NewMemFS(), Sync: SyncPolicy{Mode: SyncNone}, SegmentSize: MinSegmentSize, Index: IndexOrdered}
			db, err := Open(dir, opts)
			if err != nil {
				t.Fatal(err)
			}
			model := map[string]string{}
			keys := 50 + rng.IntN(400)
			key := func() string { return fmt.Sprintf("k%d%s", rng.IntN(keys), strings.Repeat("x", rng.IntN(12))) }
			for i := range 3000 {
				switch p := rng.IntN(100); {
				case p < 60:
					k, v := key(), fmt.Sprintf("v%d", i)
					mustPut(t, db, k, v)
					model[k] = v
				case p < 85:
					k := key()
					if err := db.Delete([]byte(k)); err != nil {
						t.Fatal(err)
					}
					delete(model, k)
				case p < 98:
					var b Batch
					for range 1 + rng.IntN(5) {
						k := key()
						if rng.IntN(3) == 0 {
							b.Delete([]byte(k))
							delete(model, k)
						} else {
							v := fmt.Sprintf("b%d", i)
							b.Put([]byte(k), []byte(v))
							model[k] = v
						}
					}
					if err := db.Apply(&b); err != nil {
						t.Fatal(err)
					}
				default:
					if err := db.Compact(); err != nil {
						t.Fatal(err)
					}
				}
			}
			if rng.IntN(2) == 0 {
				// End on a delete, so lastDel is set.
				k := key()
				if err := db.Delete([]byte(k)); err != nil {
					t.Fatal(err)
				}
				delete(model, k)
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}

			serial := openRecovered(t, dir, Options{FS: opts.FS, Sync: opts.Sync, Index: IndexOrdered, buildWorkers: 1})
			if len(serial.index) != len(model) {
				t.Fatalf("serial build: %d keys, the writes left %d", len(serial.index), len(model))
			}
			for k := range model {
				if _, ok := serial.index[k]; !ok {
					t.Fatalf("serial build: live key %q missing", k)
				}
			}
			for _, workers := range []int{2, 3, 4, 8} {
				got := openRecovered(t, dir, Options{FS: opts.FS, Sync: opts.Sync, Index: IndexOrdered, buildWorkers: workers})
				if !maps.Equal(got.index, serial.index) {
					t.Errorf("workers=%d: the index differs from the serial build's (%d keys, want %d)", workers, len(got.index), len(serial.index))
				}
				if !maps.Equal(got.live, serial.live) {
					t.Errorf("workers=%d: live bytes per segment %v, want %v", workers, got.live, serial.live)
				}
				if got.lastSeq != serial.lastSeq || got.lastDel != serial.lastDel {
					t.Errorf("workers=%d: lastSeq %d lastDel %q, want %d %q", workers, got.lastSeq, got.lastDel, serial.lastSeq, serial.lastDel)
				}
				if !slices.Equal(got.ordered, serial.ordered) {
					t.Errorf("workers=%d: ordered set of %d keys, want %d", workers, len(got.ordered), len(serial.ordered))
				}
			}
			db, err = Open(dir, Options{FS: opts.FS, Sync: opts.Sync, buildWorkers: 4})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			for k, want := range model {
				if got, err := db.Get([]byte(k)); err != nil || string(got) != want {
					t.Fatalf("Get(%q) after a parallel build: got %q %v, want %q", k, got, err, want)
				}
			}
		})
	}
}

// TestHintReaderReusesBuffers: the hint reader reads later hint files
// into the buffers of files already replayed, so a store of many
// segments holds a few files' worth of buffers while it opens, not all
// of them (each fresh page costs a page fault). Twenty hint files read
// with every buffer handed back must use at most hintsAhead+3 distinct
// buffers; without reuse they use twenty.
func TestHintReaderReusesBuffers(t *testing.T) {
	const dir = "/db"
	fs := NewMemFS()
	db, err := Open(dir, Options{FS: fs, Sync: SyncPolicy{Mode: SyncNone}, SegmentSize: MinSegmentSize})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for i := 0; db.active.id <= 20; i++ {
		mustPut(t, db, fmt.Sprintf("key-%06d", i), strings.Repeat("v", 100))
	}
	ids := make([]uint32, 20)
	has := map[uint32]bool{}
	for i := range ids {
		ids[i] = uint32(i + 1)
		has[ids[i]] = true
	}
	r := db.readHintsAhead(ids, has)
	defer r.stop()
	buffers := map[*byte]bool{}
	for _, id := range ids {
		h := <-r.next
		if h == nil {
			t.Fatalf("segment %d: no hint read", id)
		}
		buffers[unsafe.SliceData(h.data)] = true
		r.reuse(h.data)
	}
	if len(buffers) > hintsAhead+3 {
		t.Errorf("20 hint files read into %d distinct buffers, want at most %d", len(buffers), hintsAhead+3)
	}
}
