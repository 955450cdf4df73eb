package grader

import (
	"strings"
	"testing"
)

// largestWorkload is the seed, among 1..2000, of the workload whose keys
// and values add up to the most bytes (TestWorkloadBounds checks it): the
// timing tests grade on it.
const largestWorkload = 905

// TestWorkloadBounds: the drawn workloads vary as the exercise text says
// (Put counts, key lengths, empty and multi-KiB values, overwrites), span
// many sectors, and fit the FS's bounds with room for a store that keeps
// a second copy.
func TestWorkloadBounds(t *testing.T) {
	counts, keyLens := map[int]bool{}, map[int]bool{}
	largest, largestSeed := 0, uint64(0)
	for seed := uint64(1); seed <= 2000; seed++ {
		w := drawWorkload(seed)
		if len(w) < workMinPuts || len(w) > workMaxPuts {
			t.Fatalf("seed %d: %d Puts, want %d to %d", seed, len(w), workMinPuts, workMaxPuts)
		}
		counts[len(w)] = true
		keys, bytes, empty, big, log := map[string]bool{}, 0, 0, 0, 0
		over := 0
		for _, p := range w {
			if keys[p.key] {
				over++
			}
			keys[p.key] = true
			keyLens[len(p.key)] = true
			bytes += len(p.key) + len(p.value)
			log += 8 + len(p.key) + len(p.value)
			if p.value == "" {
				empty++
			}
			if len(p.value) >= 1000 {
				big++
			}
			if len(p.key) == 0 || len(p.key) > workMaxKey || len(p.value) > workMaxValue {
				t.Fatalf("seed %d: Put of a %d-byte key and a %d-byte value", seed, len(p.key), len(p.value))
			}
		}
		// A log of 12 sectors at the least (6.1 KiB over seeds 1..2000;
		// 25 KiB the median, 55 KiB the most).
		if empty == 0 || big < 2 || over == 0 || log < 12*512 {
			t.Errorf("seed %d: %d empty values, %d of 1000 bytes or more, %d overwrites, a log of %d bytes; want at least 1, 2, 1 and %d", seed, empty, big, over, log, 12*512)
		}
		if 2*log+4096 > crashMaxBytes {
			t.Errorf("seed %d: a log of %d bytes leaves no room for a second copy within %d", seed, log, crashMaxBytes)
		}
		if bytes > largest {
			largest, largestSeed = bytes, seed
		}
	}
	if len(counts) < 10 || len(keyLens) < 30 {
		t.Errorf("%d different Put counts, %d key lengths over 2000 seeds: the workloads barely vary", len(counts), len(keyLens))
	}
	if largestSeed != largestWorkload {
		t.Errorf("the largest workload is seed %d (%d bytes), largestWorkload says %d", largestSeed, largest, largestWorkload)
	}
}

// TestWorkloadIsDrawnAndReplayed: two Runs without a seed line grade
// different workloads, each named in the notes; a seed line grades the
// one it names, the same every time.
func TestWorkloadIsDrawnAndReplayed(t *testing.T) {
	defer func(f func() uint64) { newSeed = f }(newSeed)
	next := uint64(100)
	newSeed = func() uint64 { next++; return next }
	sol := durableAckExercise.Solution
	a, b := mustRun(t, "durable-ack", sol), mustRun(t, "durable-ack", sol)
	if !strings.Contains(a.Notes[0], "// kvlab:seed 101") || !strings.Contains(b.Notes[0], "// kvlab:seed 102") {
		t.Fatalf("notes %q and %q, want seeds 101 and 102 with the line that replays them", a.Notes[0], b.Notes[0])
	}
	if a.Cases[0].Got == b.Cases[0].Got && a.Notes[0][20:] == b.Notes[0][20:] {
		t.Errorf("two draws graded alike: %q", a.Cases[0].Got)
	}
	r1, r2 := mustRun(t, "durable-ack", seeded(sol, 101)), mustRun(t, "durable-ack", seeded(sol, 101))
	same := func(n string) string { return n[strings.Index(n, "):"):][:40] } // the workload's figures
	if r1.Notes[0] != r2.Notes[0] || same(r1.Notes[0]) != same(a.Notes[0]) || r1.Cases[0].Got != a.Cases[0].Got || !strings.Contains(r1.Notes[0], "named by the `// kvlab:seed 101` line") {
		t.Errorf("replays of seed 101: %q / %q, want the workload of %q, named by the line", r1.Notes[0], r2.Notes[0], a.Notes[0])
	}
	for _, e := range []*Exercise{durableAckExercise, tornTailExercise} {
		for _, p := range drawWorkload(101) {
			if len(p.key) > 3 && strings.Contains(e.Instructions, p.key) {
				t.Errorf("%s's text names key %q", e.Name, p.key)
			}
		}
		if !strings.Contains(e.Instructions, "at random") {
			t.Errorf("%s's text does not say the workload is random", e.Name)
		}
	}
}

// TestShrunkFailure: a store that never syncs fails at its first Put
// whatever the workload; the failure is shrunk to that one Put, replayable
// by its seed.
func TestShrunkFailure(t *testing.T) {
	r := mustRun(t, "durable-ack", seeded(variant(t, durableAckExercise.Solution, ackSync, ""), 11))
	c := rowOf(t, r, "power cut after each operation, prefix")
	w := drawWorkload(11)
	if c.Pass || !strings.Contains(c.Got, "(the workload shrunk to the 1 Put(s) that still fail: "+putText(w[0])+")") {
		t.Errorf("row got %q, want it shrunk to %s", c.Got, putText(w[0]))
	}
	if !strings.Contains(r.Notes[0], "kvlab:seed 11") {
		t.Errorf("notes %q, want seed 11", r.Notes)
	}
}
