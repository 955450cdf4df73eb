package engine

import (
	"fmt"
	"os"
	"path/filepath"
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
