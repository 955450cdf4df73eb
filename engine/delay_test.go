package engine

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestGroupCommitDelay drives the group-commit flusher's commit delay with
// a fake clock. After a group of 4, the flusher waits for 4 writes
// pending since its last fdatasync, or for the delay: a lone Put is not
// synced until the delay expires, in the flusher's first round as in any
// later one, however many writes the store made before. The delay is
// GroupDelay or the last fdatasync's duration, whichever is shorter.
func TestGroupCommitDelay(t *testing.T) {
	cases := []struct {
		name       string
		groupDelay time.Duration
		lastSync   time.Duration
		before     int // durable Puts before the lone one
		want       time.Duration
	}{
		{"GroupDelay", 300 * time.Microsecond, time.Second, 0, 300 * time.Microsecond},
		{"fdatasync shorter", time.Second, 40 * time.Microsecond, 0, 40 * time.Microsecond},
		{"default", 0, time.Second, 0, DefaultGroupDelay},
		{"after 6 writes", 300 * time.Microsecond, time.Second, 6, 300 * time.Microsecond},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			clk := newFakeClock()
			db, mem := openMem(t, Options{Sync: SyncPolicy{Mode: SyncGroup}, GroupDelay: c.groupDelay, clock: clk})
			defer db.Close()
			for i := range c.before {
				mustPut(t, db, fmt.Sprint("before", i), "v") // one writer: no delay
			}
			// As if the last round had synced 4 writes in lastSync. The
			// flusher records a round after the Put it synced returned:
			// wait for it to record the last one, or it would overwrite
			// what the test sets here.
			waitMeasured(db, uint64(c.before))
			db.commit.mu.Lock()
			db.commit.lastGroup, db.commit.lastSync = 4, c.lastSync
			fsyncs := db.stats.fsyncs.Load()
			db.commit.mu.Unlock()

			done := make(chan error, 1)
			go func() { done <- db.Put([]byte("lone"), []byte("writer")) }()
			timer := make(chan time.Duration, 1)
			go func() { timer <- clk.waitTimer() }()
			select {
			case got := <-timer:
				if got != c.want {
					t.Errorf("commit delay: got %v, want %v", got, c.want)
				}
			case err := <-done:
				t.Fatalf("the lone Put returned (%v) without waiting for the commit delay", err)
			}
			// The flusher is waiting on the timer, holding the Put. (A
			// flusher that does not wait returns it within a moment; the
			// real-time wait can only miss that, never fail a flusher that
			// waits.)
			select {
			case err := <-done:
				t.Fatalf("the lone Put returned (%v) before the commit delay expired", err)
			case <-time.After(50 * time.Millisecond):
			}
			if s := db.Stats(); s.DurableSeq != uint64(c.before) || s.Fsyncs != fsyncs {
				t.Errorf("during the delay: DurableSeq %d after %d fdatasyncs, want %d and %d", s.DurableSeq, s.Fsyncs, c.before, fsyncs)
			}
			clk.Advance(c.want)
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if !mem.Contains([]byte("lonewriter"), true) {
				t.Error("the Put returned, but its record is not on the disk")
			}
		})
	}
}

// TestGroupCommitNoDelayWhenAlone: a flusher whose last group was one
// write (one writer) syncs at once, without a timer.
func TestGroupCommitNoDelayWhenAlone(t *testing.T) {
	clk := newFakeClock()
	db, _ := openMem(t, Options{Sync: SyncPolicy{Mode: SyncGroup}, clock: clk})
	defer db.Close()
	for i := range 5 {
		mustPut(t, db, "k", string(rune('a'+i))) // returns without the clock moving
	}
	clk.mu.Lock()
	n := len(clk.timers)
	clk.mu.Unlock()
	if n != 0 {
		t.Errorf("one writer: %d commit-delay timers, want 0", n)
	}
}

// TestGroupCommitDelayFollowsMeasuredSync: the fdatasync duration that caps
// the commit delay is measured on the store's clock, so a fake clock
// decides it. A group of 4 is synced by an fdatasync that "takes" 40µs
// of fake time; the next lone Put then waits 40µs for company, not the
// 1s GroupDelay, nor whatever the real fdatasync took.
func TestGroupCommitDelayFollowsMeasuredSync(t *testing.T) {
	const took = 40 * time.Microsecond
	clk := newFakeClock()
	db, mem := openMem(t, Options{Sync: SyncPolicy{Mode: SyncGroup}, GroupDelay: time.Second, clock: clk})
	defer db.Close()
	mem.Fault = func(op, name string) error {
		if op == "sync" && strings.HasSuffix(name, segmentExt) {
			clk.Advance(took)
		}
		return nil
	}
	// As if the last round had synced 4 writes in 1s: the flusher waits
	// for 4 writes (the timer, 1s of fake time, never fires).
	db.commit.mu.Lock()
	db.commit.lastGroup, db.commit.lastSync = 4, time.Second
	db.commit.mu.Unlock()
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() { mustPut(t, db, fmt.Sprint("group", i), "v") })
	}
	wg.Wait()
	if s := db.Stats(); s.Fsyncs != 1 {
		t.Fatalf("4 writers: %d fdatasyncs, want 1 (one group)", s.Fsyncs)
	}

	done := make(chan error, 1)
	go func() { done <- db.Put([]byte("lone"), []byte("writer")) }()
	got := clk.waitTimer()
	if got != took {
		t.Errorf("commit delay after a 40µs fdatasync: got %v, want %v", got, took)
	}
	clk.Advance(got)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// waitMeasured blocks until the group-commit flusher has recorded the
// round that synced seq (lastGroup, lastSync), so that a test that sets
// them is not overwritten by a round still finishing.
func waitMeasured(db *DB, seq uint64) {
	c := db.commit
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.measured < seq {
		c.done.Wait()
	}
}

// TestGroupCommitLateTimerDoesNotStall: a commit-delay timer that fired
// just as its round ended (the group filled first, so Stop came too
// late) runs its callback whenever the scheduler gets to it, possibly
// after the next round's timer has fired. The late callback must not
// take the next round's expiry back, or the flusher waits for writers
// that are themselves waiting for it, forever. (On a busy 2-core
// machine that is what hung the crash tests for 40 minutes.)
func TestGroupCommitLateTimerDoesNotStall(t *testing.T) {
	clk := newFakeClock()
	db, _ := openMem(t, Options{Sync: SyncPolicy{Mode: SyncGroup}, GroupDelay: 300 * time.Microsecond, clock: clk})
	defer db.Close()
	asIfGroupOf4 := func(seq uint64) {
		waitMeasured(db, seq)
		db.commit.mu.Lock()
		db.commit.lastGroup, db.commit.lastSync = 4, time.Second
		db.commit.mu.Unlock()
	}
	// takeTimer waits for the flusher's pending timer and takes it off
	// the fake clock, so that only the test runs its callback.
	takeTimer := func() func() {
		clk.waitTimer()
		clk.mu.Lock()
		defer clk.mu.Unlock()
		for _, tm := range clk.timers {
			if !tm.stopped {
				tm.stopped = true
				return tm.f
			}
		}
		panic("no pending timer")
	}

	// Round 1: a lone Put starts the delay; three more fill the group
	// before the timer runs.
	asIfGroupOf4(0)
	var wg sync.WaitGroup
	wg.Go(func() { mustPut(t, db, "a", "v") })
	late := takeTimer()
	for i := range 3 {
		wg.Go(func() { mustPut(t, db, fmt.Sprint("b", i), "v") })
	}
	wg.Wait()

	// Round 2: a lone Put; its timer fires, then round 1's late callback.
	asIfGroupOf4(4)
	done := make(chan error, 1)
	go func() { done <- db.Put([]byte("lone"), []byte("writer")) }()
	takeTimer()()
	late()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the lone Put of round 2 never returned: round 1's late timer undid round 2's expiry, and the flusher waits for a group that cannot come")
	}
}

// A Put that group commit acknowledged finds its record counted in
// seg.synced: the flusher records how far it synced before it wakes the
// waiting Puts. The next Put reads seg.synced to decide whether its
// record carries a sync mark, so a record made after the wake-up made
// that choice a race between two goroutines, and crash -points under
// group wrote different bytes from one run to the next with one seed.
func TestGroupSyncedRecordedBeforeTheWake(t *testing.T) {
	db, _ := openMem(t, Options{Sync: SyncPolicy{Mode: SyncGroup}, GroupDelay: -1})
	defer db.Close()
	for i := range 3000 {
		mustPut(t, db, fmt.Sprint("k", i), "v")
		db.writeMu.Lock()
		size, synced := db.active.size, db.active.synced.Load()
		db.writeMu.Unlock()
		if synced < size {
			t.Fatalf("put %d returned with its segment synced to %d of %d bytes", i, synced, size)
		}
	}
}
