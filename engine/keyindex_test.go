package engine

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
	"unsafe"
)

// TestSlotSize: a slot is the 20 bytes keyindex.go's diagram and its
// memory figures count.
func TestSlotSize(t *testing.T) {
	if got := unsafe.Sizeof(slot{}); got != slotBytes {
		t.Fatalf("a slot takes %d bytes, want %d", got, slotBytes)
	}
}

// checkAgainst fails t unless x holds exactly the keys and entries of m.
func checkAgainst(t testing.TB, x *keyIndex, m map[string]entry) {
	t.Helper()
	if x.len() != len(m) {
		t.Fatalf("len: got %d, want %d", x.len(), len(m))
	}
	for k, want := range m {
		if got, ok := x.get([]byte(k)); !ok || got != want {
			t.Fatalf("get(%q): got %+v %v, want %+v true", k, got, ok, want)
		}
	}
	seen := 0
	x.each(func(k []byte, e entry) {
		seen++
		if want, ok := m[string(k)]; !ok || e != want {
			t.Fatalf("each: %q -> %+v, want %+v (present %v)", k, e, want, ok)
		}
	})
	if seen != len(m) {
		t.Fatalf("each visited %d keys, want %d", seen, len(m))
	}
}

// TestKeyIndexMatchesMap runs the same puts, overwrites and removes on a
// keyIndex and on a Go map and compares them throughout: growth, the
// backward shift of removals (with runs that wrap past the table's end,
// which a small key space over a small table makes common) and the
// arena's rewrite after many removals.
func TestKeyIndexMatchesMap(t *testing.T) {
	for _, c := range []struct {
		name       string
		keys, ops  int
		removeFrac float64
	}{
		{"small-table-wrapping", 12, 5000, 0.4},
		{"growth", 20000, 40000, 0.05},
		{"mostly-removes", 3000, 60000, 0.6},
	} {
		t.Run(c.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, uint64(c.keys)))
			x := newKeyIndex(0)
			m := map[string]entry{}
			for i := range c.ops {
				// Keys of varied lengths, some longer than keyAlign.
				k := fmt.Sprintf("k%d%s", rng.IntN(c.keys), "abcdefghijklmnopqrstuvwxyz"[:rng.IntN(20)])
				if rng.Float64() < c.removeFrac {
					old, had := x.remove([]byte(k))
					want, wantHad := m[k]
					if had != wantHad || old != want {
						t.Fatalf("op %d remove(%q): got %+v %v, want %+v %v", i, k, old, had, want, wantHad)
					}
					delete(m, k)
				} else {
					e := entry{seg: uint32(i), off: uint32(2 * i), size: uint32(3 * i)}
					old, had := x.put([]byte(k), e)
					want, wantHad := m[k]
					if had != wantHad || old != want {
						t.Fatalf("op %d put(%q): got %+v %v, want %+v %v", i, k, old, had, want, wantHad)
					}
					m[k] = e
				}
				if i%997 == 0 {
					checkAgainst(t, x, m)
				}
			}
			checkAgainst(t, x, m)
		})
	}
}

// TestKeyIndexArenaRewrite: removing most keys makes the index rewrite
// its arena, and the keys left are still found.
func TestKeyIndexArenaRewrite(t *testing.T) {
	x := newKeyIndex(0)
	m := map[string]entry{}
	const n = 40000 // 40000 × 16 bytes: ten arena chunks, two or three per table
	for i := range n {
		k := fmt.Sprintf("key-%011d", i)
		x.put([]byte(k), entry{off: uint32(i)})
		m[k] = entry{off: uint32(i)}
	}
	before := arenaChunks(x)
	for i := range n {
		if i%10 != 0 {
			k := fmt.Sprintf("key-%011d", i)
			x.remove([]byte(k))
			delete(m, k)
		}
	}
	if after := arenaChunks(x); after >= before {
		t.Errorf("arena: %d chunks after removing 90%% of the keys, %d before: want fewer", after, before)
	}
	checkAgainst(t, x, m)
}

// arenaChunks returns the number of arena chunks of x's tables.
func arenaChunks(x *keyIndex) int {
	n := 0
	for i := range x.tables {
		n += len(x.tables[i].chunks)
	}
	return n
}

// heapOf returns how many heap bytes build leaves allocated, by
// runtime.MemStats.HeapAlloc around it (a garbage collection before each
// reading), and build's result, kept alive until the second reading.
func heapOf[T any](build func() T) (int64, T) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	v := build()
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(v)
	return int64(after.HeapAlloc) - int64(before.HeapAlloc), v
}

// indexKeys returns n distinct 16-byte keys.
func indexKeys(n int) [][]byte {
	keys := make([][]byte, n)
	for i := range keys {
		keys[i] = binary.BigEndian.AppendUint64([]byte("key-0000"), uint64(i)*0x9e3779b97f4a7c15)
	}
	return keys
}

// indexCost measures, with runtime.MemStats, the heap bytes per key of a
// keyIndex of keys filled by put (grown as it goes) and of one sized for
// them in advance (as Open sizes it from the hint files), and of a bare
// map[string]entry of the same keys, grown as it goes (goMap) and made
// with room for them (goMapSized), each the same way.
func indexCost(keys [][]byte) (grown, sized, goMap, goMapSized float64) {
	n := float64(len(keys))
	fill := func(x *keyIndex) *keyIndex {
		for i, k := range keys {
			x.put(k, entry{seg: 1, off: uint32(i), size: 163})
		}
		return x
	}
	g, _ := heapOf(func() *keyIndex { return fill(newKeyIndex(0)) })
	s, _ := heapOf(func() *keyIndex { return fill(newKeyIndex(len(keys))) })
	fillMap := func(m map[string]entry) map[string]entry {
		for i, k := range keys {
			m[string(k)] = entry{seg: 1, off: uint32(i), size: 163}
		}
		return m
	}
	m, _ := heapOf(func() map[string]entry { return fillMap(map[string]entry{}) })
	ms, _ := heapOf(func() map[string]entry { return fillMap(make(map[string]entry, len(keys))) })
	return float64(g) / n, float64(s) / n, float64(m) / n, float64(ms) / n
}

// TestIndexBytesPerKey: the hash index of 16-byte keys costs at most 64
// bytes per key, the key included, whether it grew as keys came or was
// sized in advance (as Open sizes it). Heap bytes, measured by
// runtime.MemStats; a map[string]entry of the same keys is measured
// beside it and logged.
//
// The map is not a fixed yardstick: measured with Go 1.26 (swiss tables,
// whose seed and splits vary per map), its cost per key swung between
// about 56 and 100 bytes at 1M keys from one run to the next, and was 83
// at 5M. Half of it is not a bound any index that keeps the 16-byte key
// and a 12-byte entry per key can promise (that alone is 28 bytes), so
// BenchmarkIndexBytesPerKey reports the ratio instead of a test
// asserting it.
func TestIndexBytesPerKey(t *testing.T) {
	n := 1 << 20
	if testing.Short() {
		n = 1 << 16
	}
	grown, sized, goMap, goMapSized := indexCost(indexKeys(n))
	t.Logf("%d keys of 16 bytes: %.1f B/key grown, %.1f B/key sized, map[string]entry %.1f B/key grown, %.1f sized", n, grown, sized, goMap, goMapSized)
	for _, c := range []struct {
		name string
		got  float64
	}{{"grown", grown}, {"sized", sized}} {
		if c.got > 64 {
			t.Errorf("%s: %.1f bytes per key, want at most 64", c.name, c.got)
		}
	}
}

// BenchmarkIndexBytesPerKey reports the heap bytes per 16-byte key of the
// hash index (grown by puts, and sized ahead as Open does) beside a bare
// map[string]entry (grown by the same puts, and made with room for the
// keys), for 1M and 5M keys, and the ratios of like to like. The
// targets: at most 64 B/key and at most half the map's.
func BenchmarkIndexBytesPerKey(b *testing.B) {
	for _, n := range []int{1_000_000, 5_000_000} {
		b.Run(fmt.Sprintf("keys=%d", n), func(b *testing.B) {
			keys := indexKeys(n)
			var grown, sized, goMap, goMapSized float64
			for b.Loop() {
				grown, sized, goMap, goMapSized = indexCost(keys)
			}
			b.ReportMetric(grown, "grown-B/key")
			b.ReportMetric(sized, "sized-B/key")
			b.ReportMetric(goMap, "map-B/key")
			b.ReportMetric(goMapSized, "sized-map-B/key")
			b.ReportMetric(grown/goMap, "grown/map")
			b.ReportMetric(sized/goMapSized, "sized/sized-map")
		})
	}
}

// FuzzKeyIndex replays a sequence of puts and removes, read from the
// fuzzer's bytes, on a keyIndex and on a map, and compares them.
func FuzzKeyIndex(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 0x81, 0x82, 4, 5, 0x80, 1})
	f.Add([]byte("a long run of puts with some removes \x80\x81\x82\x83 in between"))
	f.Fuzz(func(t *testing.T, ops []byte) {
		x := newKeyIndex(0)
		m := map[string]entry{}
		for i, op := range ops {
			// The low 5 bits choose one of 32 keys, of 1 to 32 bytes
			// (one key per length); the top bit removes.
			k := string(make([]byte, 1+op&31))
			if op&0x80 != 0 {
				x.remove([]byte(k))
				delete(m, k)
			} else {
				e := entry{off: uint32(i)}
				x.put([]byte(k), e)
				m[k] = e
			}
		}
		checkAgainst(t, x, m)
	})
}

// BenchmarkBuildHint builds the index of 1M 16-byte keys from one hint
// file in memory, as Open does from each (buildHint), on 1 goroutine and
// on one per core, and reports the time per key. The memory is the
// process's own after the first round (no page faults), so this is the
// build alone; a cold open adds the faults and the reads.
func BenchmarkBuildHint(b *testing.B) {
	const n = 1_000_000
	var entries []byte
	for i, k := range indexKeys(n) {
		entries = appendHintEntry(entries, uint64(i+1), kindPut, k, uint32(i*163), 163)
	}
	h := hintFile{entries: entries, count: n, last: -1}
	for _, workers := range []int{1, runtime.GOMAXPROCS(0)} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			for b.Loop() {
				x := newKeyIndex(n)
				buildHint(x, h, 1, workers)
				if x.len() != n {
					b.Fatalf("built %d keys, want %d", x.len(), n)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/key")
		})
	}
}
