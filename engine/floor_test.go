package engine

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestMeasureOpenFloor: the floor's index holds the keys the store holds
// (deletes and overwrites applied), it read every hint byte, and a
// damaged hint file is an ErrCorrupt, not a floor.
func TestMeasureOpenFloor(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir, Options{SegmentSize: MinSegmentSize, Sync: SyncPolicy{Mode: SyncNone}})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 500 {
		mustPut(t, db, fmt.Sprintf("k%d", i%150), fmt.Sprintf("v%d", i))
		if i%9 == 0 {
			db.Delete([]byte(fmt.Sprintf("k%d", (i+5)%150)))
		}
	}
	want := db.Stats().Keys
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := MeasureOpenFloor(dir)
	if err != nil {
		t.Fatal(err)
	}
	if int64(f.Keys) != want {
		t.Errorf("floor index: %d keys, want %d", f.Keys, want)
	}
	hints, _ := filepath.Glob(filepath.Join(dir, "*"+hintExt))
	var size int64
	for _, h := range hints {
		st, _ := os.Stat(h)
		size += st.Size()
	}
	if len(hints) < 2 || f.HintBytes != size {
		t.Errorf("read %d hint bytes, want %d (%d files)", f.HintBytes, size, len(hints))
	}
	if f.Floor() != f.Read+f.Build {
		t.Errorf("Floor %v, want Read+Build %v", f.Floor(), f.Read+f.Build)
	}
	b, _ := os.ReadFile(hints[0])
	b[len(b)/2] ^= 1
	os.WriteFile(hints[0], b, 0o644)
	if _, err := MeasureOpenFloor(dir); !errors.Is(err, ErrCorrupt) {
		t.Errorf("a damaged hint: got %v, want ErrCorrupt", err)
	}
}
