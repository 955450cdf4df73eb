package engine

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// memSize returns the size of the file name in dir of mem.
func memSize(t *testing.T, mem *MemFS, dir, name string) int64 {
	t.Helper()
	f, err := mem.OpenFile(filepath.Join(dir, name), os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n, err := f.Size()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// Preallocation never zero-fills past the segment size (a 4 KiB segment
// used to get 1 MiB of zeros), a sealed segment keeps no zero tail (its
// file ends with its last record), a record larger than a segment gets a
// file of exactly its size, and the store reopens with every value.
func TestPreallocateWithinSegmentAndSealCutsZeroTail(t *testing.T) {
	for _, prealloc := range []int64{0, 1 << 10, 3000} {
		t.Run(fmt.Sprintf("prealloc=%d", prealloc), func(t *testing.T) {
			mem := NewMemFS()
			opts := Options{FS: mem, SegmentSize: MinSegmentSize, Preallocate: prealloc}
			db, err := Open("/db", opts)
			if err != nil {
				t.Fatal(err)
			}
			want := map[string][]byte{}
			put := func(k string, v []byte) {
				t.Helper()
				if err := db.Put([]byte(k), v); err != nil {
					t.Fatal(err)
				}
				want[k] = v
			}
			// 'x' values: a sealed file whose last byte is 0 kept zeros.
			for i := range 60 {
				put(fmt.Sprintf("k%02d", i), bytes.Repeat([]byte("x"), 150))
			}
			big := bytes.Repeat([]byte("y"), 3*MinSegmentSize)
			put("big", big)
			put("after", bytes.Repeat([]byte("x"), 150))

			names, err := mem.List("/db")
			if err != nil {
				t.Fatal(err)
			}
			var segs []string
			for _, n := range names {
				if _, ok := parseID(n, segmentExt); ok {
					segs = append(segs, n)
				}
			}
			if len(segs) < 4 {
				t.Fatalf("%d segments (%v), want at least 4: the test must rotate", len(segs), segs)
			}
			sawBig := false
			for i, n := range segs {
				size := memSize(t, mem, "/db", n)
				b := make([]byte, size)
				f, _ := mem.OpenFile(filepath.Join("/db", n), os.O_RDONLY, 0)
				f.ReadAt(b, 0)
				f.Close()
				last := i == len(segs)-1
				switch {
				case !last && size == int64(recordSize(3, len(big))):
					sawBig = true
				case size > MinSegmentSize:
					t.Errorf("%s: %d bytes, want at most the segment size %d", n, size, MinSegmentSize)
				}
				if !last && (size == 0 || b[size-1] == 0) {
					t.Errorf("sealed %s (%d bytes) ends in a zero byte: its zero tail was kept", n, size)
				}
			}
			if !sawBig {
				t.Errorf("no sealed segment of exactly %d bytes, the record larger than a segment", recordSize(3, len(big)))
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			db, err = Open("/db", opts)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			for k, v := range want {
				got, err := db.Get([]byte(k))
				if err != nil || !bytes.Equal(got, v) {
					t.Errorf("Get(%s) after reopen: %d bytes, %v; want %d bytes", k, len(got), err, len(v))
				}
			}
		})
	}
}

// With preallocation on, the active segment is zero-filled in chunks of
// Preallocate, up to the segment size and not past it.
func TestPreallocateFillsUpToSegmentSize(t *testing.T) {
	mem := NewMemFS()
	db, err := Open("/db", Options{FS: mem, SegmentSize: 8 << 10, Preallocate: 3 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	id := db.active.id
	var sizes []int64
	for i := range 40 {
		if err := db.Put(fmt.Appendf(nil, "k%02d", i), make([]byte, 150)); err != nil {
			t.Fatal(err)
		}
		if db.active.id != id {
			break
		}
		if s := memSize(t, mem, "/db", segmentName(id)); len(sizes) == 0 || sizes[len(sizes)-1] != s {
			sizes = append(sizes, s)
		}
	}
	if got, want := fmt.Sprint(sizes), "[3072 6144 8192]"; got != want {
		t.Errorf("active segment's file sizes as it fills: %s, want %s (3 KiB chunks, the last cut at 8 KiB)", got, want)
	}
}
