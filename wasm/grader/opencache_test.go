package grader

import (
	"fmt"
	"reflect"
	"testing"

	"kvlab/engine/vfs"
	"kvlab/gohost"
)

// TestOpenCacheKeepsVerdicts grades the catalogue's stores, wrong and
// right, with the cache of Opens and without it: every row must read the
// same, and the cache must save a good part of the Opens of the model
// solutions on their largest workload.
func TestOpenCacheKeepsVerdicts(t *testing.T) {
	defer func() { cacheOpens = true }()
	grade := func(exercise, src string, cached bool) (Result, int) {
		cacheOpens = cached
		before := opens
		r := Run(exercise, src)
		return r, opens - before
	}
	type store struct{ name, exercise, src string }
	var stores []store
	for i, w := range wrongStores() {
		stores = append(stores, store{w.name, w.exercise, seeded(w.src(t), 3+i%5)})
	}
	for name, s := range rightStores(t) {
		stores = append(stores, store{name, s[0], seeded(s[1], 2)})
	}
	for _, s := range stores {
		with, _ := grade(s.exercise, s.src, true)
		without, _ := grade(s.exercise, s.src, false)
		if reflect.DeepEqual(with, without) {
			continue
		}
		// A store that writes its map in Go's map order does other
		// operations from one run to the next, cache or not: such a
		// store must still get the same verdict.
		if again, _ := grade(s.exercise, s.src, false); !reflect.DeepEqual(again, without) && with.Passed == without.Passed {
			t.Logf("%s: differs from run to run without the cache; the same verdict with it", s.name)
			continue
		}
		t.Errorf("%s: with the cache\n%+v\nwithout\n%+v", s.name, with, without)
	}
	for _, name := range []string{"durable-ack", "torn-tail"} {
		src := mustLookup(t, name).Solution + "\n// kvlab:seed 905\n"
		_, with := grade(name, src, true)
		_, without := grade(name, src, false)
		t.Logf("%s, largest workload: %d Opens with the cache, %d without", name, with, without)
		if with*10 > without*7 {
			t.Errorf("%s, largest workload: %d Opens with the cache, %d without; want at least 30%% fewer", name, with, without)
		}
	}
}

func mustLookup(t *testing.T, name string) Exercise {
	t.Helper()
	e, err := Lookup(name)
	if err != nil {
		t.Fatal(fmt.Errorf("lookup: %w", err))
	}
	return e
}

// TestCleanPoints checks the cut points cutAll tries with seed 0 alone:
// at each, every choice of what survives leaves the same disk.
func TestCleanPoints(t *testing.T) {
	for _, name := range []string{"durable-ack", "torn-tail"} {
		p, ce := load(mustLookup(t, name).Solution, gohost.StorePrelude)
		if ce != nil {
			t.Fatal(ce)
		}
		for _, seed := range []uint64{3, 905} {
			rec, err := record(p, drawWorkload(seed))
			if err != nil {
				t.Fatal(err)
			}
			clean, n := rec.cleanPoints(), 0
			for c, ok := range clean {
				if !ok {
					continue
				}
				n++
				for _, mode := range []vfs.PowerMode{vfs.PowerPrefix, vfs.PowerReorder, vfs.PowerDirent} {
					want := fingerprint(cutDisk(rec, cut{c: c, mode: mode}))
					for s := uint64(1); s <= 4; s++ {
						if got := fingerprint(cutDisk(rec, cut{c: c, mode: mode, seed: s})); got != want {
							t.Fatalf("%s, workload %d: after operation %d (%s), called clean, choice %d in %v leaves another disk", name, seed, c, rec.opAt(c), s, mode)
						}
					}
				}
			}
			if n < len(rec.puts) {
				t.Errorf("%s, workload %d: %d clean points of %d, want one after each Put's fdatasync at least", name, seed, n, len(clean))
			}
		}
	}
}
