package kvfs

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"kvlab/engine/vfs"
)

func newFS(t *testing.T) (FS, *vfs.MemFS, *[]string) {
	t.Helper()
	m := vfs.NewMemFS()
	if err := m.MkdirAll("/db", 0o755); err != nil {
		t.Fatal(err)
	}
	var ops []string
	f := New(m, "/db", Config{After: func(op Op) { ops = append(ops, op.String()) }})
	return f, m, &ops
}

// TestOpsAreNumberedAndDescribed: every operation that changes the disk
// is seen by After once, in the words the exercises quote; reads are not.
func TestOpsAreNumberedAndDescribed(t *testing.T) {
	f, _, ops := newFS(t)
	w, err := f.Create("seg-0")
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte("hello"))
	w.Write([]byte("world!"))
	w.Sync()
	f.SyncDir()
	w.Truncate(3)
	f.Rename("seg-0", "seg-1")
	f.ReadFile("seg-1")
	f.List()
	f.Remove("seg-1")
	want := []string{"create seg-0", "write seg-0 @0, 5 bytes", "write seg-0 @5, 6 bytes", "fdatasync seg-0",
		"fsync dir", "truncate seg-0 to 3 bytes", "rename seg-0 → seg-1", "remove seg-1"}
	if !slices.Equal(*ops, want) {
		t.Errorf("ops = %q\nwant %q", *ops, want)
	}
	if f.Ops() != len(want) {
		t.Errorf("Ops() = %d, want %d", f.Ops(), len(want))
	}
}

func TestOpenAppendWritesAtTheEnd(t *testing.T) {
	f, _, _ := newFS(t)
	w, _ := f.Create("log")
	w.Write([]byte("abc"))
	a, err := f.OpenAppend("log")
	if err != nil {
		t.Fatal(err)
	}
	a.Write([]byte("de"))
	got, err := f.ReadFile("log")
	if err != nil || string(got) != "abcde" {
		t.Errorf("ReadFile = %q, %v; want abcde", got, err)
	}
	if _, err := f.OpenAppend("nope"); !IsNotExist(err) {
		t.Errorf("OpenAppend of a missing file: %v, want IsNotExist", err)
	}
	if _, err := f.ReadFile("nope"); !IsNotExist(err) {
		t.Errorf("ReadFile of a missing file: %v, want IsNotExist", err)
	}
}

func TestBadNamesAndLimits(t *testing.T) {
	f, m, ops := newFS(t)
	for _, name := range []string{"", ".", "..", "a/b", "../x", `a\b`} {
		if _, err := f.Create(name); err == nil || !strings.Contains(err.Error(), "plain name") {
			t.Errorf("Create(%q): %v, want an error asking for a plain name", name, err)
		}
	}
	if len(*ops) != 0 {
		t.Errorf("refused names counted operations: %q", *ops)
	}
	f = New(m, "/db", Config{MaxOps: 2})
	w, _ := f.Create("log")
	w.Write([]byte("x"))
	if _, err := w.Write([]byte("y")); !errors.Is(err, ErrTooManyOps) {
		t.Errorf("third operation with MaxOps 2: %v, want ErrTooManyOps", err)
	}
	w.Close()
	if err := w.Sync(); !errors.Is(err, ErrClosed) {
		t.Errorf("Sync after Close: %v, want ErrClosed", err)
	}
}

// TestSyncDirMakesNamesDurable: through kvfs the MemFS's power cut keeps
// a created file only once the directory was synced.
func TestSyncDirMakesNamesDurable(t *testing.T) {
	for _, syncDir := range []bool{false, true} {
		f, m, _ := newFS(t)
		w, _ := f.Create("log")
		w.Write([]byte("data"))
		w.Sync()
		if syncDir {
			f.SyncDir()
		}
		got, err := New(m.PowerCut(vfs.PowerPrefix, nil), "/db", Config{}).ReadFile("log")
		if syncDir && string(got) != "data" || !syncDir && !IsNotExist(err) {
			t.Errorf("SyncDir %v: after a power cut ReadFile = %q, %v", syncDir, got, err)
		}
	}
}

// TestConcurrentOpsAreNumberedInOrder: operations from several goroutines
// (a store that syncs from a goroutine of its own) are each counted once
// and reach After numbered 1, 2, 3, ... in the order they ran.
func TestConcurrentOpsAreNumberedInOrder(t *testing.T) {
	m := vfs.NewMemFS()
	if err := m.MkdirAll("/db", 0o755); err != nil {
		t.Fatal(err)
	}
	var seen []int
	f := New(m, "/db", Config{After: func(op Op) { seen = append(seen, op.N) }})
	const workers, each = 4, 200
	var wg sync.WaitGroup
	for g := range workers {
		w, err := f.Create(fmt.Sprintf("f%d", g))
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				w.Write([]byte("x"))
				w.Sync()
			}
		}()
	}
	wg.Wait()
	want := workers + workers*each*2
	if f.Ops() != want || len(seen) != want {
		t.Fatalf("Ops() = %d, After saw %d, want %d each", f.Ops(), len(seen), want)
	}
	for i, n := range seen {
		if n != i+1 {
			t.Fatalf("After's %d-th operation is numbered %d", i+1, n)
		}
	}
}
