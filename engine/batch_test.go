package engine

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
)

// TestApplyVisibleAndRecovered applies batches under every policy and
// checks that Get sees each record, that a later record of a key wins, and
// that a reopen (from a scan and from hints) recovers the same state.
func TestApplyVisibleAndRecovered(t *testing.T) {
	for _, p := range []string{"always", "group", "batch:3", "periodic:1m", "none"} {
		for _, noHints := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/nohints=%v", p, noHints), func(t *testing.T) {
				pol, err := ParseSync(p)
				if err != nil {
					t.Fatal(err)
				}
				opts := Options{Sync: pol, SegmentSize: MinSegmentSize, NoHints: noHints}
				db, mem := openMem(t, opts)
				mustPut(t, db, "gone", "x")
				want := map[string]string{}
				for i := range 40 {
					var b Batch
					for j := range 4 {
						k := fmt.Sprintf("k%02d", (i*3+j)%17)
						v := fmt.Sprintf("v%d-%d", i, j)
						b.Put([]byte(k), []byte(v))
						want[k] = v
					}
					if i%5 == 0 {
						k := fmt.Sprintf("k%02d", i%17)
						b.Delete([]byte(k))
						delete(want, k)
					}
					if i == 7 {
						b.Delete([]byte("gone"))
					}
					if err := db.Apply(&b); err != nil {
						t.Fatalf("Apply %d: %v", i, err)
					}
				}
				check := func(db *DB, when string) {
					t.Helper()
					for i := range 17 {
						k := fmt.Sprintf("k%02d", i)
						v, err := db.Get([]byte(k))
						switch w, ok := want[k]; {
						case ok && (err != nil || string(v) != w):
							t.Errorf("%s: Get(%s) = %q, %v; want %q", when, k, v, err, w)
						case !ok && !errors.Is(err, ErrNotFound):
							t.Errorf("%s: Get(%s) = %q, %v; want ErrNotFound", when, k, v, err)
						}
					}
					if _, err := db.Get([]byte("gone")); !errors.Is(err, ErrNotFound) {
						t.Errorf("%s: the key the batch deleted: %v, want ErrNotFound", when, err)
					}
				}
				check(db, "before Close")
				last := db.Stats().LastSeq
				if err := db.Close(); err != nil {
					t.Fatal(err)
				}
				db2 := reopenMem(t, mem, opts)
				check(db2, "after reopen")
				if got := db2.Stats().LastSeq; got != last {
					t.Errorf("LastSeq after reopen %d, want %d", got, last)
				}
				if err := db2.Compact(); err != nil {
					t.Fatal(err)
				}
				check(db2, "after Compact")
			})
		}
	}
}

// TestApplyOneSync: under "always" a batch of many records costs one
// fdatasync, where as many Puts cost one each.
func TestApplyOneSync(t *testing.T) {
	db, _ := openMem(t, Options{})
	defer db.Close()
	before := db.Stats()
	var b Batch
	for i := range 10 {
		b.Put(fmt.Appendf(nil, "k%d", i), []byte("v"))
	}
	if err := db.Apply(&b); err != nil {
		t.Fatal(err)
	}
	after := db.Stats()
	if got := after.FsyncsBy.Commit - before.FsyncsBy.Commit; got != 1 {
		t.Errorf("a batch of 10 under always made %d commit fdatasyncs, want 1", got)
	}
	if got := after.LastSeq - before.LastSeq; got != 10 {
		t.Errorf("LastSeq moved by %d, want 10 (one seq per record)", got)
	}
	if after.Puts-before.Puts != 10 {
		t.Errorf("Puts counted %d, want 10", after.Puts-before.Puts)
	}
}

// TestApplyRejects: an invalid record or an oversized batch fails Apply
// with its sentinel and writes nothing of the batch.
func TestApplyRejects(t *testing.T) {
	db, _ := openMem(t, Options{})
	defer db.Close()
	cases := []struct {
		name string
		fill func(b *Batch)
		want error
	}{
		{"empty key", func(b *Batch) { b.Put([]byte("ok"), nil); b.Put(nil, []byte("v")) }, ErrKeyTooLarge},
		{"long key", func(b *Batch) { b.Put([]byte("ok"), nil); b.Delete(make([]byte, MaxKeySize+1)) }, ErrKeyTooLarge},
		{"big value", func(b *Batch) { b.Put([]byte("ok"), nil); b.Put([]byte("v"), make([]byte, MaxValueSize+1)) }, ErrValueTooLarge},
		{"big batch", func(b *Batch) {
			b.Put([]byte("ok"), nil)
			for i := 0; b.Size() <= MaxBatchSize; i++ {
				b.Put(fmt.Appendf(nil, "b%d", i), make([]byte, 8<<20))
			}
		}, ErrBatchTooLarge},
	}
	for _, c := range cases {
		var b Batch
		c.fill(&b)
		if err := db.Apply(&b); !errors.Is(err, c.want) {
			t.Errorf("%s: Apply = %v, want %v", c.name, err, c.want)
		}
		if _, err := db.Get([]byte("ok")); !errors.Is(err, ErrNotFound) {
			t.Errorf("%s: the valid record before the bad one was written: %v", c.name, err)
		}
	}
	if st := db.Stats(); st.LastSeq != 0 {
		t.Errorf("LastSeq %d after only rejected batches, want 0", st.LastSeq)
	}
	var empty Batch
	if err := db.Apply(&empty); err != nil || db.Stats().LastSeq != 0 {
		t.Errorf("empty batch: %v, LastSeq %d; want nil and nothing written", err, db.Stats().LastSeq)
	}
}

// TestApplyTornTail cuts the one write(2) of a batch at every length and
// reopens: a torn batch at the tail is dropped whole, never in part.
func TestApplyTornTail(t *testing.T) {
	var b Batch
	for i := range 5 {
		b.Put(fmt.Appendf(nil, "k%d", i), bytes.Repeat([]byte{'a' + byte(i)}, 30))
	}
	enc := appendBatch(nil, &b, 2)
	for cut := 0; cut < len(enc); cut++ {
		db, mem := openMem(t, Options{Preallocate: -1})
		mustPut(t, db, "before", "x")
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		// Append the torn batch as a crash in its write(2) would leave it.
		f, err := mem.OpenFile("/db/000000001.seg", 2, 0)
		if err != nil {
			t.Fatal(err)
		}
		size, _ := f.Size()
		f.WriteAt(enc[:cut], size)
		f.Close()
		db2, err := Open("/db", Options{FS: mem})
		if err != nil {
			t.Fatalf("cut at %d of %d: reopen: %v", cut, len(enc), err)
		}
		n := 0
		for i := range 5 {
			if _, err := db2.Get(fmt.Appendf(nil, "k%d", i)); err == nil {
				n++
			}
		}
		if n != 0 {
			t.Errorf("cut at %d of %d bytes: %d of the torn batch's 5 records recovered, want 0", cut, len(enc), n)
		}
		if _, err := db2.Get([]byte("before")); err != nil {
			t.Errorf("cut at %d: the write before the batch: %v", cut, err)
		}
		db2.Close()
	}
}

// TestBatchDecode: a batch record's records are replayed from where they
// lie, and a batch whose checksum matches but holds a sync mark is
// refused.
func TestBatchDecode(t *testing.T) {
	var b Batch
	b.Put([]byte("a"), []byte("1"))
	b.Delete([]byte("b"))
	enc := appendBatch(nil, &b, 7)
	r, n, err := decodeRecord(enc)
	if err != nil || n != len(enc) || r.kind != kindBatch || r.seq != 8 {
		t.Fatalf("decode = kind %d seq %d n %d, %v; want a batch, seq 8, %d bytes", r.kind, r.seq, n, err, len(enc))
	}
	var got []string
	if err := batchRecords(r, func(in record, off, size int) {
		got = append(got, fmt.Sprintf("%d:%d:%s@%d+%d", in.seq, in.kind, in.key, off, size))
	}); err != nil {
		t.Fatal(err)
	}
	if want := "[7:1:a@0+21 8:2:b@21+20]"; fmt.Sprint(got) != want {
		t.Errorf("records %v, want %s", got, want)
	}
	bad := appendMark(nil, 5)
	body := append([]byte(nil), bad...)
	rec := appendRecord(nil, record{seq: 1, kind: kindBatch, value: body})
	r, _, err = decodeRecord(rec)
	if err != nil {
		t.Fatal(err)
	}
	if err := batchRecords(r, func(record, int, int) {}); !errors.Is(err, errBadRecord) {
		t.Errorf("a batch holding a sync mark: %v, want errBadRecord", err)
	}
}
