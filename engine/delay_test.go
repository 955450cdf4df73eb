package engine

import (
	"testing"
	"time"
)

// TestGroupCommitDelay drives the group-commit flusher's commit delay with
// a fake clock. After a group of 4, the flusher waits for 4 writes, or
// for the delay: a lone Put is not synced until the delay expires. The
// delay is GroupDelay or the last fdatasync's duration, whichever is
// shorter.
func TestGroupCommitDelay(t *testing.T) {
	cases := []struct {
		name       string
		groupDelay time.Duration
		lastSync   time.Duration
		want       time.Duration
	}{
		{"GroupDelay", 300 * time.Microsecond, time.Second, 300 * time.Microsecond},
		{"fdatasync shorter", time.Second, 40 * time.Microsecond, 40 * time.Microsecond},
		{"default", 0, time.Second, DefaultGroupDelay},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			clk := newFakeClock()
			db, mem := openMem(t, Options{Sync: SyncPolicy{Mode: SyncGroup}, GroupDelay: c.groupDelay, clock: clk})
			defer db.Close()
			// As if the last round had synced 4 writes in lastSync.
			db.commit.mu.Lock()
			db.commit.lastGroup, db.commit.lastSync = 4, c.lastSync
			db.commit.mu.Unlock()

			done := make(chan error, 1)
			go func() { done <- db.Put([]byte("lone"), []byte("writer")) }()
			if got := clk.waitTimer(); got != c.want {
				t.Errorf("commit delay: got %v, want %v", got, c.want)
			}
			// The flusher is waiting on the timer, holding the Put.
			if s := db.Stats(); s.DurableSeq != 0 || s.Fsyncs != 0 {
				t.Errorf("during the delay: DurableSeq %d after %d fdatasyncs, want 0 and 0", s.DurableSeq, s.Fsyncs)
			}
			clk.Advance(c.want)
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if !mem.syncedContains([]byte("lonewriter")) {
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
