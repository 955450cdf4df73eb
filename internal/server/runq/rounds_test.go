package runq

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"kvlab/harness"
)

// A repeated cell runs its lines in mirrored rounds (A B, B A, A B), so a
// drift of the machine lands on both lines alike, and its Results are
// still the last round's, in the cell's line order.
func TestRepeatedCellRunsMirroredRounds(t *testing.T) {
	var mu sync.Mutex
	var ran []int64 // each run's -ops, in run order
	exec := func(ctx context.Context, sp *harness.Spec, env harness.Env) (harness.Output, error) {
		mu.Lock()
		defer mu.Unlock()
		ran = append(ran, sp.Ops)
		return harness.Output{JSON: fmt.Appendf(nil, `{"kind":"bench","ops":%d,"seq":%d}`, sp.Ops, len(ran)), Head: harness.Head{Kind: "bench"}}, nil
	}
	r, _ := newTestRunner(t, 10, exec)
	j := job(t, "c", Cell, Discard{}, "bench -engine null -ops 1", "bench -engine null -ops 2")
	j.Repeat = 3
	if err := r.Submit(j); err != nil {
		t.Fatal(err)
	}
	<-j.Done()
	if want := []int64{1, 2, 2, 1, 1, 2}; !slices.Equal(ran, want) {
		t.Fatalf("ran %v, want %v (A B B A A B)", ran, want)
	}
	var got []string
	for _, res := range j.Results() {
		got = append(got, string(res))
	}
	want := []string{`{"kind":"bench","ops":1,"seq":5}`, `{"kind":"bench","ops":2,"seq":6}`}
	if !slices.Equal(got, want) {
		t.Fatalf("results %v, want the last round's in line order %v", got, want)
	}
	// Round 2 ran B before A: its results still come out in line order.
	j = job(t, "d", Cell, Discard{}, "bench -engine null -ops 1", "bench -engine null -ops 2")
	j.Repeat = 2
	ran = nil
	if err := r.Submit(j); err != nil {
		t.Fatal(err)
	}
	<-j.Done()
	got = got[:0]
	for _, res := range j.Results() {
		got = append(got, string(res))
	}
	want = []string{`{"kind":"bench","ops":1,"seq":4}`, `{"kind":"bench","ops":2,"seq":3}`}
	if !slices.Equal(got, want) || len(j.RunIDs()) != 2 {
		t.Fatalf("results %v (ids %v), want %v", got, j.RunIDs(), want)
	}
}
