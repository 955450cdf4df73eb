package engine

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// countMarks returns how many sync marks and other records decode from the
// start of the segment at path.
func countMarks(t *testing.T, path string) (marks, records int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for off := 0; ; {
		r, n, err := decodeRecord(b[off:])
		if err != nil {
			return marks, records
		}
		if r.kind == kindMark {
			marks++
		} else {
			records++
		}
		off += n
	}
}

// TestSyncMarksAreNotData: under "always" every Put after the first
// carries a sync mark and Close adds one, but no mark is ever data: the
// index, the hint file and compaction's output hold the five keys only.
func TestSyncMarksAreNotData(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		mustPut(t, db, fmt.Sprintf("k%d", i), fmt.Sprintf("value-%d", i))
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	seg := filepath.Join(dir, segmentName(1))
	if marks, records := countMarks(t, seg); marks != 5 || records != 5 {
		t.Fatalf("after Close: %d marks and %d records, want 5 and 5 (one per fdatasync but the last Put's, plus Close's)", marks, records)
	}
	b, err := os.ReadFile(filepath.Join(dir, hintName(1)))
	if err != nil {
		t.Fatal(err)
	}
	h, err := parseHint(b)
	if err != nil || h.count != 5 {
		t.Fatalf("hint: %d entries (err %v), want 5", h.count, err)
	}
	// Reopening and closing without writing adds no mark.
	for _, hints := range []bool{true, false} {
		db, err = Open(dir, Options{NoHints: !hints})
		if err != nil {
			t.Fatal(err)
		}
		if got := db.Stats().Keys; got != 5 {
			t.Errorf("hints=%v: %d keys, want 5", hints, got)
		}
		db.Close()
		if marks, _ := countMarks(t, seg); marks != 5 {
			t.Errorf("hints=%v: reopen and Close left %d marks, want 5", hints, marks)
		}
	}
	db, err = Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	names, _ := filepath.Glob(filepath.Join(dir, "*"+segmentExt))
	total := 0
	for _, name := range names {
		marks, records := countMarks(t, name)
		if marks != 0 {
			t.Errorf("%s: %d sync marks after compaction, want 0", filepath.Base(name), marks)
		}
		total += records
	}
	if total != 5 {
		t.Errorf("compaction kept %d records, want 5", total)
	}
	for i := range 5 {
		checkGet(t, db, fmt.Sprintf("k%d", i), fmt.Sprintf("value-%d", i))
	}
}

// TestCloseMarkIsDurable: Close fdatasyncs its sync mark, so after a
// power cut that keeps nothing unsynced the newest segment is still
// vouched for to its last byte.
func TestCloseMarkIsDurable(t *testing.T) {
	db, mem := openMem(t, Options{})
	for i := range 3 {
		mustPut(t, db, fmt.Sprintf("k%d", i), "v")
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = reopenMem(t, mem.PowerCut(PowerPrefix, nil), Options{NoHints: true})
	if a := db.active; a.vouched < a.size || a.size == 0 {
		t.Errorf("after Close and a power cut: marks vouch for %d bytes of %d", a.vouched, a.size)
	}
}

// TestRecoveredBytesVouched: Open fdatasyncs what it recovered, and the
// first write after it carries a sync mark that says so. Damage to a
// recovered record is then refused after a power cut, not truncated as a
// torn tail. The records come from "none", which writes no marks, and
// reach the reopen through a process kill.
func TestRecoveredBytesVouched(t *testing.T) {
	db, mem := openMem(t, Options{Sync: SyncPolicy{Mode: SyncNone}, WriteBuffer: -1})
	for i := range 3 {
		mustPut(t, db, fmt.Sprintf("k%d", i), "recovered")
	}
	mem = mem.Kill()
	db = reopenMem(t, mem, Options{})
	mustPut(t, db, "after", "v")
	img := mem.PowerCut(PowerPrefix, nil)
	f, err := img.OpenFile("/db/"+segmentName(1), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte{0xff}, headerSize+1) // k0's key
	f.Sync()
	if _, err := Open("/db", Options{FS: img}); !errors.Is(err, ErrCorrupt) {
		t.Errorf("Open with a recovered record damaged: got %v, want ErrCorrupt", err)
	}
}

// TestNoMarkAfterRotation: a sync mark due in the active segment when it
// is sealed is not written into the new one, where it would claim the
// bytes of another file: every segment but the first starts with a
// record.
func TestNoMarkAfterRotation(t *testing.T) {
	db, mem := openMem(t, Options{SegmentSize: MinSegmentSize})
	defer db.Close()
	for i := 0; db.Stats().Segments < 3; i++ {
		mustPut(t, db, fmt.Sprintf("k%d", i), strings.Repeat("v", 200))
	}
	for id := uint32(2); id <= 3; id++ {
		f, err := mem.OpenFile("/db/"+segmentName(id), os.O_RDONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		b := make([]byte, headerSize)
		f.ReadAt(b, 0)
		if b[12] != kindPut {
			t.Errorf("segment %d starts with a record of kind %d, want a put (%d)", id, b[12], kindPut)
		}
	}
}
