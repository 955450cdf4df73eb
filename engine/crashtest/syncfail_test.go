package crashtest

import (
	"context"
	"sync"
	"testing"

	"kvlab/engine"
)

// TestRunSyncFailure: under every policy that fdatasyncs Puts, the store
// acknowledges nothing after the failed fdatasync, keeps its DurableSeq,
// and a reopen in the same boot returns every durable write and none of
// the acknowledged writes no fdatasync covered.
func TestRunSyncFailure(t *testing.T) {
	for _, tt := range []struct {
		sync      string
		lostAcked int64 // the acknowledged writes the failure takes; -1: any
	}{
		{"always", 0},    // the failing Put is not acknowledged
		{"group", 0},     // one writer: as always
		{"batch:16", 15}, // the 1008th Put's fdatasync fails: 1001..1007 acked, 993..1000 were synced at 1008? see below
		{"periodic:5ms", -1},
	} {
		t.Run(tt.sync, func(t *testing.T) {
			pol, err := engine.ParseSync(tt.sync)
			if err != nil {
				t.Fatal(err)
			}
			rep, err := RunSyncFailure(context.Background(), SyncFailConfig{Sync: pol})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%+v", rep)
			if !rep.OK() {
				t.Errorf("the store broke its promise after a failed fdatasync: %+v", rep)
			}
			if rep.Tried != 10 || rep.AckedAfter != 0 {
				t.Errorf("after the failure: %d of %d Puts acknowledged, want 0", rep.AckedAfter, rep.Tried)
			}
			if rep.ReturnedUndurable != 0 {
				t.Errorf("the reopen returned %d acknowledged writes no fdatasync covered", rep.ReturnedUndurable)
			}
			if rep.Recovered != rep.DurableAcked || rep.LostAcked != rep.Acked-rep.DurableAcked {
				t.Errorf("reopen: recovered %d, lost_acked %d; want the %d durable writes back and the other %d of %d acknowledged lost",
					rep.Recovered, rep.LostAcked, rep.DurableAcked, rep.Acked-rep.DurableAcked, rep.Acked)
			}
			if tt.lostAcked >= 0 && rep.LostAcked != tt.lostAcked {
				t.Errorf("lost_acked %d, want %d", rep.LostAcked, tt.lostAcked)
			}
			if rep.Acked < 1000 || rep.FailedSync == "" {
				t.Errorf("acked %d before the failure of %q; want at least FailAfter (1000) and a named fdatasync", rep.Acked, rep.FailedSync)
			}
		})
	}
}

// doneAfter is a context that turns done at its n-th Err call: a test
// that knows how often a loop checks can end the context at a chosen
// step, whatever the machine's speed.
type doneAfter struct {
	context.Context
	mu    sync.Mutex // guards calls
	calls int
	n     int
	done  chan struct{}
}

func newDoneAfter(n int) *doneAfter {
	return &doneAfter{Context: context.Background(), n: n, done: make(chan struct{})}
}

func (c *doneAfter) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls++
	if c.calls == c.n {
		close(c.done)
	}
	if c.calls >= c.n {
		return context.Canceled
	}
	return nil
}

func (c *doneAfter) Done() <-chan struct{} { return c.done }

// RunSyncFailure stops when its context ends after the failure too:
// during the Puts that follow it, the reopen and the check of every
// acknowledged write, which together take as long as the Puts before it
// on a large -fail-sync. Before, only the Puts before the failure checked
// the context, and a run went on past its budget.
func TestRunSyncFailureStopsAfterTheFailure(t *testing.T) {
	pol, err := engine.ParseSync("always")
	if err != nil {
		t.Fatal(err)
	}
	// FailAfter 2048 under always: the Puts check at 0, 1024 and 2048,
	// and the 2049th Put's fdatasync fails; the 4th check comes after it.
	ctx := newDoneAfter(4)
	rep, err := RunSyncFailure(ctx, SyncFailConfig{Sync: pol, FailAfter: 2048})
	if err != context.Canceled {
		t.Fatalf("RunSyncFailure = %v, want context.Canceled once the context ended after the failure", err)
	}
	if rep.Acked != 2048 || rep.FirstError == "" {
		t.Errorf("acked %d, first error %q; want the failure reached (2048 acked) before the context ended", rep.Acked, rep.FirstError)
	}
	if rep.Recovered != 0 {
		t.Errorf("recovered %d: the check after the reopen ran after the context ended", rep.Recovered)
	}
}
