package engine

import "testing"

func TestSmoke(t *testing.T) {
	for _, pol := range []string{"always", "group", "batch:3", "periodic:1ms", "none"} {
		p, _ := ParseSync(pol)
		dir := t.TempDir()
		db, err := Open(dir, Options{Sync: p, SegmentSize: 4096})
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 100; i++ {
			if err := db.Put([]byte{byte(i), 1}, make([]byte, 100)); err != nil {
				t.Fatal(err)
			}
		}
		db.Delete([]byte{5, 1})
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		db, err = Open(dir, Options{Sync: p, SegmentSize: 4096})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.Get([]byte{5, 1}); err != ErrNotFound {
			t.Fatal(err)
		}
		if v, err := db.Get([]byte{6, 1}); err != nil || len(v) != 100 {
			t.Fatal(err)
		}
		if err := db.Compact(); err != nil {
			t.Fatal(err)
		}
		if v, err := db.Get([]byte{6, 1}); err != nil || len(v) != 100 {
			t.Fatal(err)
		}
		t.Log(pol, db.Stats())
		db.Close()
	}
}
