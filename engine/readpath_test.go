package engine

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// flipValueByte flips one bit in the value of key's record, on disk, under
// an open store: damage the store did not cause and must notice.
func flipValueByte(t *testing.T, db *DB, mem *MemFS, key string) (seg string, off int64) {
	t.Helper()
	db.mu.RLock()
	e, ok := db.index.get([]byte(key))
	s := db.segs[e.seg]
	db.mu.RUnlock()
	if !ok {
		t.Fatalf("%s is not in the index", key)
	}
	path := filepath.Join(db.dir, s.name)
	f, err := mem.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	at := int64(e.off) + int64(e.size) - 1 // the last byte of the value
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, at); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x10
	if _, err := f.WriteAt(b, at); err != nil {
		t.Fatal(err)
	}
	return s.name, int64(e.off)
}

// TestGetChecksCRC: a record damaged on disk after it was written makes
// Get fail with ErrCorrupt naming the file and offset, never return the
// damaged value.
func TestGetChecksCRC(t *testing.T) {
	db, mem := openMem(t, Options{Sync: SyncPolicy{Mode: SyncAlways}})
	defer db.Close()
	mustPut(t, db, "a", "first value")
	mustPut(t, db, "b", "second value")
	seg, off := flipValueByte(t, db, mem, "a")
	v, err := db.Get([]byte("a"))
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Get of a damaged record: got %q, %v; want ErrCorrupt", v, err)
	}
	if want := fmt.Sprintf("%s at offset %d", seg, off); !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not name %q", err, want)
	}
	checkGet(t, db, "b", "second value")
}

// TestCompactChecksCRC: compaction that meets a damaged record fails with
// ErrCorrupt and leaves the store as it was, rather than copying the damage
// into a new segment with a fresh, valid checksum.
func TestCompactChecksCRC(t *testing.T) {
	db, mem := openMem(t, Options{Sync: SyncPolicy{Mode: SyncAlways}, SegmentSize: MinSegmentSize})
	for i := range 100 {
		mustPut(t, db, fmt.Sprintf("k%03d", i), strings.Repeat("v", 60))
	}
	segs := db.Stats().Segments
	flipValueByte(t, db, mem, "k010")
	if err := db.Compact(); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Compact over a damaged record: got %v, want ErrCorrupt", err)
	}
	if got := db.Stats().Segments; got != segs {
		t.Errorf("after the failed Compact: %d segments, want the %d it had", got, segs)
	}
	checkGet(t, db, "k011", strings.Repeat("v", 60))
	if _, err := db.Get([]byte("k010")); !errors.Is(err, ErrCorrupt) {
		t.Errorf("Get(k010) after the failed Compact: got %v, want ErrCorrupt", err)
	}
	db.Close()
	// The damage is still there for recovery to report.
	if _, err := Open("/db", Options{FS: mem, SegmentSize: MinSegmentSize, NoHints: true}); !errors.Is(err, ErrCorrupt) {
		t.Errorf("reopen: got %v, want ErrCorrupt for the damaged record", err)
	}
}

// TestHintDamagedEntry: a hint whose entries were damaged (a key byte, an
// offset byte) fails its CRC and is ignored; Open scans the segment and
// the index is exactly what it was.
func TestHintDamagedEntry(t *testing.T) {
	for _, c := range []struct {
		name string
		at   int // offset in the hint file
	}{
		{"key", len(hintMagic) + hintEntryHeader},
		{"offset", len(hintMagic) + 11},
		{"kind", len(hintMagic) + 8},
	} {
		t.Run(c.name, func(t *testing.T) {
			mem := NewMemFS()
			opts := Options{FS: mem, SegmentSize: MinSegmentSize}
			db, err := Open("/db", opts)
			if err != nil {
				t.Fatal(err)
			}
			for i := range 200 {
				mustPut(t, db, fmt.Sprintf("k%03d", i%90), fmt.Sprintf("v%d", i))
			}
			want := indexMap(db)
			db.Close()
			f, err := mem.OpenFile(filepath.Join("/db", hintName(1)), os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			b := make([]byte, 1)
			f.ReadAt(b, int64(c.at))
			b[0] ^= 0x04
			f.WriteAt(b, int64(c.at))
			db, err = Open("/db", opts)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			checkIndex(t, db, want)
		})
	}
}

// TestRecordsAfterHint: Close writes a hint for the active segment; after a
// reopen the same segment takes more records, and a crash before the next
// Close leaves a hint that covers only part of it. Open must scan past the
// hint's covered length and find them.
func TestRecordsAfterHint(t *testing.T) {
	mem := NewMemFS()
	opts := Options{FS: mem, Sync: SyncPolicy{Mode: SyncAlways}}
	db, err := Open("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	mustPut(t, db, "before", "the hint covers me")
	db.Close()
	db, err = Open("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	mustPut(t, db, "after", "written past the hint")
	mustPut(t, db, "before", "overwritten past the hint")
	opts.FS = mem.PowerCut(PowerPrefix, nil) // no Close: the hint is stale
	db, err = Open("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	checkGet(t, db, "after", "written past the hint")
	checkGet(t, db, "before", "overwritten past the hint")
}

// TestHintsDurable: the hints that rotation and Close write are durable
// when they return, so a power cut right after Close loses none of them and
// the next Open can use every one instead of scanning. (A hint is only an
// accelerator, so a lost one costs speed, not data; this checks the speed
// is kept.)
func TestHintsDurable(t *testing.T) {
	mem := NewMemFS()
	opts := Options{FS: mem, SegmentSize: MinSegmentSize, Sync: SyncPolicy{Mode: SyncBatch, N: 8}}
	db, err := Open("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		mustPut(t, db, fmt.Sprintf("k%03d", i%70), strings.Repeat("v", 50))
	}
	segs := db.Stats().Segments
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	opts.FS = mem.PowerCut(PowerPrefix, nil) // keeps exactly what was synced
	db, err = Open("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for id := uint32(1); id <= uint32(segs); id++ {
		b, ok := db.readHint(id, nil)
		if !ok {
			t.Errorf("segment %d: its hint did not survive the power cut", id)
			continue
		}
		if _, err := parseHint(b); err != nil {
			t.Errorf("segment %d: its hint survived damaged: %v", id, err)
		}
	}
}

// TestTornTailTruncated: Open cuts a torn tail off the newest segment, so
// the file ends right after the last good record (the doc's "truncated"),
// and the next write lands there.
func TestTornTailTruncated(t *testing.T) {
	mem := NewMemFS()
	opts := Options{FS: mem, Preallocate: -1, NoHints: true}
	db, err := Open("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"a", "b", "c"} {
		mustPut(t, db, k, "value of "+k)
	}
	end := db.active.size
	db.Close()
	f, err := mem.OpenFile(filepath.Join("/db", segmentName(1)), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	torn := appendRecord(nil, record{seq: 4, kind: kindPut, key: []byte("d"), value: []byte("a value torn in two")})
	if _, err := f.WriteAt(torn[:len(torn)/2], end); err != nil {
		t.Fatal(err)
	}
	db, err = Open("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	if size, _ := db.active.f.Size(); size != end {
		t.Errorf("after recovering a torn tail the segment is %d bytes, want %d (the good prefix)", size, end)
	}
	mustPut(t, db, "e", "after the torn tail")
	db.Close()
	db, err = Open("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, k := range []string{"a", "b", "c"} {
		checkGet(t, db, k, "value of "+k)
	}
	checkGet(t, db, "d", "")
	checkGet(t, db, "e", "after the torn tail")
}
