package engine

import "testing"

// TestPutOverwriteAllocations: a Put that overwrites a key makes no
// allocation under every policy a single writer uses: the record is
// encoded into a reused buffer, the sync mark into the store's own array,
// and the index (keyindex.go) finds the key's slot without converting the
// key (a map[string]entry assignment did, one allocation per Put). (The hint's entry list grows by doubling, which
// AllocsPerRun's average rounds away.)
func TestPutOverwriteAllocations(t *testing.T) {
	const want = 0
	for _, sync := range []string{"none", "batch:16", "always"} {
		t.Run(sync, func(t *testing.T) {
			pol, err := ParseSync(sync)
			if err != nil {
				t.Fatal(err)
			}
			db, err := Open(t.TempDir(), Options{Sync: pol})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			key, value := []byte("key-000000000001"), make([]byte, 128)
			if err := db.Put(key, value); err != nil {
				t.Fatal(err)
			}
			var putErr error
			allocs := testing.AllocsPerRun(200, func() {
				if err := db.Put(key, value); err != nil {
					putErr = err
				}
			})
			if putErr != nil {
				t.Fatal(putErr)
			}
			if allocs != want {
				t.Errorf("a Put that overwrites a key: %v allocations, want %d", allocs, want)
			}
		})
	}
}
