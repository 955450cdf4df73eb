package harness

import (
	"strconv"
	"sync"
	"testing"
	"time"
)

// keyLog is a Store that records the keys of its Puts, in order.
type keyLog struct {
	nullStoreForTest
	mu   sync.Mutex // guards keys
	keys []string
}

func (s *keyLog) Put(k, v []byte) error {
	s.mu.Lock()
	s.keys = append(s.keys, string(k))
	s.mu.Unlock()
	return nil
}

// TestFillBatchUnitTakesTheNextBatchKeys: a fillbatch unit Puts the
// -batch keys of the plan after the previous unit's, one after another,
// each recorded as an op; a second loop carries on where the first
// stopped, and a unit that reaches the end of the plan wraps around.
func TestFillBatchUnitTakesTheNextBatchKeys(t *testing.T) {
	const batch, keys = 4, 10
	cfg := runConfig{engine: "testlog", workload: "fillbatch", batch: batch, dist: "uniform", threads: 1, ops: 5, valueSize: 8, keys: keys}
	store := &keyLog{}
	// fillseq's plan visits keys 0, 1, 2, ... so the order is visible.
	w := &worker{cfg: &cfg, step: stepBatch, stride: batch, store: store, quota: 5, live: new(liveView),
		plan: planWorker("fillseq", "uniform", 0, 1, keys, keys, 8, 1)}
	w.setRecorders(newExactBudget(DefaultExactCap, 8))
	r := &run{cfg: &cfg, stopCh: make(chan struct{}), base: time.Now(), start: time.Millisecond}
	table := newKeyTable(keys)
	w.loop(r, table, 0, 2, 0) // units 0 and 1: keys 0-3, 4-7
	w.loop(r, table, 2, 1, 0) // unit 2: keys 8, 9, then 0, 1 (the plan wraps)
	want := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 1}
	if len(store.keys) != len(want) {
		t.Fatalf("%d Puts, want %d: %q", len(store.keys), len(want), store.keys)
	}
	for i, k := range want {
		if got, _ := strconv.Atoi(store.keys[i]); got != k {
			t.Errorf("Put %d wrote key %s, want key %d (all: %q)", i, store.keys[i], k, store.keys)
		}
	}
	samples := 0
	for _, c := range w.put.samples() {
		samples += len(c)
	}
	if w.units != 3 || w.ops != 12 || samples != 12 {
		t.Errorf("units %d, ops %d, put samples %d; want 3 units of %d Puts, 12 ops", w.units, w.ops, samples, batch)
	}
}

// TestFillBatchRates: fillbatch's ops/s is -batch times its units/s, and
// its default -keys gives every Put of the run a key of its own.
func TestFillBatchRates(t *testing.T) {
	r := bench(t, "bench -engine testmap -workload fillbatch -batch 8 -ops 300")
	if r.Ops != 8*r.Units || r.Units != 300 {
		t.Errorf("ops %d, units %d: want 300 units of 8 Puts", r.Ops, r.Units)
	}
	if ratio := r.OpsPerSec / r.UnitsPerSec; ratio < 7.999 || ratio > 8.001 {
		t.Errorf("ops/s %.1f ÷ units/s %.1f = %.4f, want 8 (-batch)", r.OpsPerSec, r.UnitsPerSec, ratio)
	}
	s, err := ParseSpec("bench -workload fillbatch -ops 300", DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	if s.Batch != defaultBatch || s.Keys != 300*defaultBatch {
		t.Errorf("fillbatch defaults: -batch %d, -keys %d; want %d and %d", s.Batch, s.Keys, defaultBatch, 300*defaultBatch)
	}
}
