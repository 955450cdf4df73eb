package peers

import (
	"fmt"
	"testing"

	"kvlab/harness"
)

// BenchmarkPut measures one 128-byte Put on each peer under a durable and
// a non-durable policy. Compare engines from one run (go test -bench Put
// -count 5, then benchstat): the fsync dominates the durable rows.
func BenchmarkPut(b *testing.B) {
	for _, engineName := range []string{"bbolt", "pebble"} {
		for _, policy := range []string{"always", "none"} {
			b.Run(engineName+"/"+policy, func(b *testing.B) {
				s, err := open(engineName)(b.TempDir(), policy)
				if err != nil {
					b.Fatal(err)
				}
				defer s.Close()
				keys := make([][]byte, 1024)
				for i := range keys {
					keys[i] = fmt.Appendf(nil, "key%016d", i)
				}
				value := make([]byte, 128)
				i := 0
				for b.Loop() {
					if err := s.Put(keys[i%len(keys)], value); err != nil {
						b.Fatal(err)
					}
					i++
				}
			})
		}
	}
}

// BenchmarkGet measures a Get of a present key among 10,000 on each peer.
func BenchmarkGet(b *testing.B) {
	for _, engineName := range []string{"bbolt", "pebble"} {
		b.Run(engineName, func(b *testing.B) {
			s, keys := filled(b, engineName, 10000)
			i := 0
			for b.Loop() {
				if _, found, err := s.Get(keys[i%len(keys)]); err != nil || !found {
					b.Fatalf("Get: found %v, err %v", found, err)
				}
				i += 7919 // a prime stride, so reads hop around the key space
			}
		})
	}
}

// BenchmarkScan measures one seekrandom unit on each peer: a seek to a
// present key among 10,000, then 10 keys in order, with a callback that
// keeps nothing, as the harness's own is. allocs/op is the figure to watch:
// the harness runs Scan inside its timed loop.
func BenchmarkScan(b *testing.B) {
	for _, engineName := range []string{"bbolt", "pebble"} {
		b.Run(engineName, func(b *testing.B) {
			s, keys := filled(b, engineName, 10000)
			sc := s.(harness.Scanner)
			n := 0
			visit := func(key, value []byte) bool { n++; return true }
			i := 0
			for b.Loop() {
				if err := sc.Scan(keys[i%len(keys)], 10, visit); err != nil {
					b.Fatal(err)
				}
				i += 7919 // a prime stride, so seeks hop around the key space
			}
			if n == 0 {
				b.Fatal("Scan visited no keys")
			}
		})
	}
}

// filled opens engineName under -sync none in a fresh directory, puts n
// keys with 128-byte values, and returns the store and its keys in order.
// The store is closed when the benchmark ends.
func filled(b *testing.B, engineName string, n int) (harness.Store, [][]byte) {
	b.Helper()
	s, err := open(engineName)(b.TempDir(), "none")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	keys := make([][]byte, n)
	value := make([]byte, 128)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "key%016d", i)
		if err := s.Put(keys[i], value); err != nil {
			b.Fatal(err)
		}
	}
	return s, keys
}
