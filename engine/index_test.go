package engine

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
)

// TestSkipListModel checks the skip list against a sorted slice over
// random adds and removes, including every lower bound of an ascend.
func TestSkipListModel(t *testing.T) {
	s := newSkipList()
	model := map[string]bool{}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 20000 {
		k := fmt.Sprintf("k%04d", rng.IntN(3000))
		if rng.IntN(3) == 0 {
			s.remove(k)
			delete(model, k)
		} else {
			s.add(k)
			model[k] = true
		}
		if i%2000 != 0 {
			continue
		}
		var want []string
		for k := range model {
			want = append(want, k)
		}
		slices.Sort(want)
		var got []string
		s.ascend("", func(k string) bool { got = append(got, k); return true })
		if !slices.Equal(got, want) || s.len() != len(want) {
			t.Fatalf("step %d: %d keys in order, len %d; want %d", i, len(got), s.len(), len(want))
		}
		lo := fmt.Sprintf("k%04d", rng.IntN(3000))
		got = got[:0]
		s.ascend(lo, func(k string) bool { got = append(got, k); return len(got) < 5 })
		i0, _ := slices.BinarySearch(want, lo)
		if w := want[i0:min(i0+5, len(want))]; !slices.Equal(got, w) {
			t.Fatalf("ascend(%s) = %v, want %v", lo, got, w)
		}
	}
}

func scanAll(t *testing.T, db *DB, lo, hi string) []string {
	t.Helper()
	var out []string
	err := db.Scan([]byte(lo), []byte(hi), func(k, v []byte) bool {
		out = append(out, string(k)+"="+string(v))
		return true
	})
	if err != nil {
		t.Fatalf("Scan(%q, %q): %v", lo, hi, err)
	}
	return out
}

// TestScanOrdered: Scan returns the live keys of [lo, hi) in order with
// their values, across chunks, deletes, batches, a reopen (recovery
// builds the ordered set) and a compaction.
func TestScanOrdered(t *testing.T) {
	opts := Options{Index: IndexOrdered, SegmentSize: MinSegmentSize}
	db, mem := openMem(t, opts)
	want := map[string]string{}
	for i := range 300 {
		k := fmt.Sprintf("u%03d/item%d", i%50, i%7)
		v := fmt.Sprint(i)
		if i%4 == 0 {
			var b Batch
			b.Put([]byte(k), []byte(v))
			b.Delete([]byte(fmt.Sprintf("u%03d/item%d", (i+3)%50, 0)))
			if err := db.Apply(&b); err != nil {
				t.Fatal(err)
			}
			delete(want, fmt.Sprintf("u%03d/item%d", (i+3)%50, 0))
		} else {
			mustPut(t, db, k, v)
		}
		want[k] = v
	}
	expect := func(lo, hi string) []string {
		var out []string
		for k, v := range want {
			if k >= lo && (hi == "" || k < hi) {
				out = append(out, k+"="+v)
			}
		}
		slices.Sort(out)
		return out
	}
	check := func(db *DB, when string) {
		for _, r := range [][2]string{{"", ""}, {"u010/", "u011/"}, {"u020/item3", "u031"}, {"zzz", ""}, {"u005", "u005"}} {
			if got, w := scanAll(t, db, r[0], r[1]), expect(r[0], r[1]); !slices.Equal(got, w) {
				t.Errorf("%s: Scan(%q, %q) = %d pairs %.3v..., want %d %.3v...", when, r[0], r[1], len(got), got, len(w), w)
			}
		}
	}
	check(db, "live")
	n := 0
	db.Scan(nil, nil, func(k, v []byte) bool { n++; return n < 70 })
	if n != 70 {
		t.Errorf("fn returning false at the 70th pair: called %d times", n)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db2 := reopenMem(t, mem, opts)
	check(db2, "after reopen")
	if err := db2.Compact(); err != nil {
		t.Fatal(err)
	}
	check(db2, "after Compact")
}

// TestScanNeedsOrder: the hash index refuses Scan with ErrNoOrder, and a
// bad index kind is refused by ParseIndex and Open.
func TestScanNeedsOrder(t *testing.T) {
	db, _ := openMem(t, Options{})
	defer db.Close()
	if err := db.Scan(nil, nil, func(k, v []byte) bool { return true }); !errors.Is(err, ErrNoOrder) {
		t.Errorf("Scan on the hash index: %v, want ErrNoOrder", err)
	}
	if _, err := ParseIndex("btree"); !errors.Is(err, ErrBadIndex) {
		t.Errorf("ParseIndex(btree): %v, want ErrBadIndex", err)
	}
	if k, err := ParseIndex("ordered"); err != nil || k != IndexOrdered || k.String() != "ordered" {
		t.Errorf("ParseIndex(ordered) = %v, %v", k, err)
	}
	if _, err := Open("/x", Options{FS: NewMemFS(), Index: 7}); !errors.Is(err, ErrBadIndex) {
		t.Errorf("Open with Index 7: %v, want ErrBadIndex", err)
	}
}

// BenchmarkIndex measures what the ordered index costs against the hash
// index: Put of new keys, Get, and the heap per key (bytes/key) once
// 200k keys are in.
func BenchmarkIndex(b *testing.B) {
	const keys = 200_000
	for _, kind := range []IndexKind{IndexHash, IndexOrdered} {
		b.Run(kind.String(), func(b *testing.B) {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			db, err := Open(b.TempDir(), Options{Index: kind, Sync: SyncPolicy{Mode: SyncNone}})
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			val := make([]byte, 16)
			for i := range keys {
				db.Put(fmt.Appendf(nil, "key%09d", i*7919%keys), val)
			}
			runtime.GC()
			runtime.ReadMemStats(&after)
			perKey := float64(after.HeapAlloc-before.HeapAlloc) / keys
			b.Run("put", func(b *testing.B) {
				for i := 0; b.Loop(); i++ {
					db.Put(fmt.Appendf(nil, "new%09d", i), val)
				}
			})
			b.Run("get", func(b *testing.B) {
				for i := 0; b.Loop(); i++ {
					db.Get(fmt.Appendf(nil, "key%09d", i%keys))
				}
				b.ReportMetric(perKey, "heap-bytes/key")
			})
		})
	}
}

// len is the number of keys in s; the tests check it against a walk.
func (s *skipList) len() int { return s.n }
