package archivetest

import (
	"context"
	"reflect"
	"testing"

	"kvlab/internal/archive"
)

// TestFillStoresWhatAddStores: the runs Fill writes to an SQLite file
// through its own connection read back exactly as the same runs stored
// with Add do, every field, so the two ways to store a run agree.
func TestFillStoresWhatAddStores(t *testing.T) {
	ctx := context.Background()
	const n = 3
	filled, err := archive.Open(ctx, "sqlite", t.TempDir(), t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	defer filled.Close()
	added, err := archive.Open(ctx, "sqlite", t.TempDir(), t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	defer added.Close()
	if err := Fill(ctx, filled, n, 2); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if _, err := added.Add(ctx, Synthetic(i, 2)); err != nil {
			t.Fatal(err)
		}
	}
	for id := int64(1); id <= n; id++ {
		got, err := filled.Get(ctx, id)
		if err != nil {
			t.Fatalf("run %d of the filled archive: %v", id, err)
		}
		want, err := added.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("run %d: Fill stored\n%+v\nAdd stored\n%+v", id, got, want)
		}
	}
	if _, err := filled.Get(ctx, n+1); err == nil {
		t.Errorf("run %d is in the archive: Fill stored more than %d runs", n+1, n)
	}
}
