package engine

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
)

// SyncMode says when a write is made durable. See SyncPolicy.
type SyncMode int

// The sync modes. Their text names are part of the CLI and lesson grammar.
const (
	// SyncAlways: one write and one fdatasync per Put, serialized. Put
	// returns after its own fdatasync returned.
	SyncAlways SyncMode = iota
	// SyncGroup: group commit. Concurrent Puts queue their records, then
	// wait; one flusher goroutine writes the whole group with one
	// write(2) and fdatasyncs once for all of them. Put returns after an
	// fdatasync that covers its bytes returned.
	SyncGroup
	// SyncBatch: fdatasync after every N Puts (and Deletes). Put returns
	// when its record is in the store's write buffer (wbuf.go), which
	// goes to the OS before each fdatasync; up to N-1 acknowledged writes
	// can be lost in a power cut, or in a process kill.
	SyncBatch
	// SyncPeriodic: a timer goroutine fdatasyncs every Interval. Put
	// returns when its record is in the store's write buffer, which goes
	// to the OS before each fdatasync and whenever it is full; up to
	// Interval of acknowledged writes can be lost in a power cut, and up
	// to Options.WriteBuffer bytes of them in a process kill.
	SyncPeriodic
	// SyncNone: never fdatasync, except when a full segment is sealed
	// (every SegmentSize bytes, so that its hint file never describes
	// records a power cut could take) and in Close. Put returns when its
	// record is in the store's write buffer. THIS IS UNSAFE: a power cut
	// can lose every write in the active segment, and a process kill
	// every write still in the buffer (up to Options.WriteBuffer bytes).
	SyncNone
)

// SyncPolicy is a SyncMode with its parameter. The zero value is "always".
type SyncPolicy struct {
	Mode     SyncMode
	N        int           // SyncBatch: Puts per fdatasync, >= 1
	Interval time.Duration // SyncPeriodic: time between fdatasyncs, > 0
}

// Limits on policy parameters accepted by ParseSync. Its error messages
// quote them; change both together.
const (
	maxBatch    = 1 << 20
	minInterval = 100 * time.Microsecond
	maxInterval = time.Minute
)

// syncAllowed lists the policy names of the text form, for error messages.
const syncAllowed = "always, group, batch:N, periodic:D, none"

// ParseSync parses a policy's text form: "always", "group", "batch:N"
// (1 <= N <= 1048576, written without sign or leading zeros), "periodic:D"
// (a Go duration, 100µs <= D <= 1m) or "none". It is the inverse of
// SyncPolicy.String, and the one parser of the policy text: a program that
// takes a policy from its user (the lab's -sync flag) calls it rather than
// checking the text itself.
//
// Text that is not a policy gets a *SyncError wrapping ErrBadSync, whose
// Reason says what was wrong and what is allowed.
func ParseSync(s string) (SyncPolicy, error) {
	name, arg, hasArg := strings.Cut(s, ":")
	bad := func(reason string) (SyncPolicy, error) {
		return SyncPolicy{}, &SyncError{Text: s, Reason: reason}
	}
	switch name {
	case "always", "group", "none":
		if hasArg {
			return bad(name + " takes no parameter; allowed: " + syncAllowed)
		}
		return SyncPolicy{Mode: map[string]SyncMode{"always": SyncAlways, "group": SyncGroup, "none": SyncNone}[name]}, nil
	case "batch":
		n, err := strconv.Atoi(arg)
		if !hasArg || err != nil || strconv.Itoa(n) != arg || n < 1 || n > maxBatch {
			return bad(fmt.Sprintf("batch:N needs N between 1 and %d", maxBatch))
		}
		return SyncPolicy{Mode: SyncBatch, N: n}, nil
	case "periodic":
		d, err := time.ParseDuration(arg)
		if !hasArg || err != nil || d < minInterval || d > maxInterval {
			return bad("periodic:D needs a duration between 100µs and 1m, e.g. periodic:10ms") // quotes minInterval, maxInterval
		}
		return SyncPolicy{Mode: SyncPeriodic, Interval: d}, nil
	}
	return bad("unknown policy; allowed: " + syncAllowed)
}

// String returns the policy's text form, which ParseSync accepts.
func (p SyncPolicy) String() string {
	switch p.Mode {
	case SyncAlways:
		return "always"
	case SyncGroup:
		return "group"
	case SyncBatch:
		return "batch:" + strconv.Itoa(p.N)
	case SyncPeriodic:
		return "periodic:" + p.Interval.String()
	case SyncNone:
		return "none"
	}
	return fmt.Sprintf("SyncMode(%d)", int(p.Mode))
}

func (p SyncPolicy) validate() error {
	switch p.Mode {
	case SyncAlways, SyncGroup, SyncNone:
		return nil
	case SyncBatch:
		if p.N < 1 || p.N > maxBatch {
			return fmt.Errorf("%w: batch N = %d, want 1..%d", ErrBadSync, p.N, maxBatch)
		}
		return nil
	case SyncPeriodic:
		if p.Interval < minInterval || p.Interval > maxInterval {
			return fmt.Errorf("%w: periodic interval %v, want %v..%v", ErrBadSync, p.Interval, minInterval, maxInterval)
		}
		return nil
	}
	return fmt.Errorf("%w: unknown mode %d", ErrBadSync, int(p.Mode))
}

// committer tracks which sequence numbers are durable and runs the
// background syncer of the group and periodic policies.
//
// Who calls fdatasync, per policy:
//   - always, batch:N: the writing goroutine, holding db.writeMu.
//   - group: the flusher goroutine (runFlusher), one fdatasync per group.
//   - periodic:D: the timer goroutine (runPeriodic).
//   - every policy: rotation (the sealed segment), Compact and Close.
//
// It is safe for concurrent use.
type committer struct {
	mu sync.Mutex // guards the fields below
	// written is the highest seq appended: written to the OS, or
	// waiting in the write buffer or, under group commit, queued for the
	// flusher's next write.
	written uint64
	// toOS is the highest seq handed to the OS: its write(2) returned,
	// so it is in the page cache and survives a process kill. It lags
	// written while a record waits in the write buffer (wbuf.go) or the
	// group-commit queue.
	// Invariant: durable <= toOS <= written.
	toOS uint64
	// durable is the highest seq covered by a returned fdatasync.
	durable uint64
	// err is the first sync or write error; once set, never cleared.
	err error
	// closing asks the background goroutine to finish and exit.
	closing bool
	// lastGroup is how many writes the previous group fdatasync covered,
	// and lastSync how long that fdatasync took.
	lastGroup uint64
	lastSync  time.Duration
	// measured is the highest seq of a round whose lastGroup and
	// lastSync the flusher has recorded. It lags durable for a moment:
	// a Put returns once durable covers it, before the flusher records
	// the round that synced it. done is broadcast when it advances.
	measured uint64
	// round numbers the flusher's commit delays; timedOut is the highest
	// round whose delay expired.
	round, timedOut uint64

	work *sync.Cond     // signalled when written advances or closing is set
	done *sync.Cond     // broadcast when durable advances or err is set
	quit chan struct{}  // closed by stop
	wg   sync.WaitGroup // the background goroutine, if any
}

func newCommitter(seq uint64) *committer {
	c := &committer{written: seq, toOS: seq, durable: seq, quit: make(chan struct{})}
	c.work = sync.NewCond(&c.mu)
	c.done = sync.NewCond(&c.mu)
	return c
}

// wrote records that seq was appended, and that every seq up to handed
// (0: none) is now in the OS's hands.
func (c *committer) wrote(seq, handed uint64, wakeFlusher bool) {
	c.mu.Lock()
	c.written = max(c.written, seq)
	c.toOS = max(c.toOS, handed)
	c.mu.Unlock()
	if wakeFlusher {
		c.work.Signal()
	}
}

// handed records that every seq up to seq is in the OS's hands: a write
// buffer or a commit group was written.
func (c *committer) handed(seq uint64) {
	c.mu.Lock()
	c.toOS = max(c.toOS, seq)
	c.mu.Unlock()
}

// synced records the outcome of an fdatasync that covered every seq up to
// target.
func (c *committer) synced(target uint64, err error) {
	c.mu.Lock()
	if err != nil {
		if c.err == nil {
			c.err = fmt.Errorf("%w: %w", ErrFailed, err)
		}
	} else if c.err == nil && target > c.durable {
		c.durable = target
	}
	c.mu.Unlock()
	c.done.Broadcast()
}

// fail records a write error as the sticky error.
func (c *committer) fail(err error) {
	c.synced(0, err)
}

// failure returns the sticky error, or nil.
func (c *committer) failure() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// waitDurable blocks until seq is durable or the store has failed.
func (c *committer) waitDurable(seq uint64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.durable < seq && c.err == nil {
		c.done.Wait()
	}
	if c.durable >= seq {
		return nil
	}
	return c.err
}

func (c *committer) durableSeq() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.durable
}

// stop asks the background goroutine to exit and waits for it.
func (c *committer) stop() {
	c.mu.Lock()
	c.closing = true
	close(c.quit)
	c.mu.Unlock()
	c.work.Broadcast()
	c.wg.Wait()
}

// runFlusher is the group-commit flusher: one goroutine, started by Open
// and stopped by Close. Each round it waits for written > durable, gives
// the writers that the previous round woke up a moment to append their
// next records so they share this fdatasync, then syncs everything
// written so far and wakes every Put it covered.
//
// The moment lasts until as many writes are pending as the last group
// had, and at most db.groupDelay or the last fdatasync's duration,
// whichever is shorter: a straggler that waited longer than an fdatasync
// takes would have been better served by one of its own.
//
// How long is worth waiting depends on the machine: with 16 closed-loop
// writers on 2 busy cores the writers a group releases can need a few
// hundred µs to come back, and some miss a 50µs delay
// (BenchmarkGroup16VsAlways1, ext4 on a shared virtual disk with
// fdatasync at 0.2-2 ms, load average 7-11, 6 runs each: a 50µs delay
// gave 13.4-14.5 Puts per fdatasync and 7.2-9.8x "always" with one
// writer; 200µs, capped as above, 14.4-15.8 Puts per fdatasync and
// 8.2-17.9x, the ratio swinging with the one-writer rate of the shared
// disk; again at load 6-7, 4 runs each: 50µs a median 8.8x, 200µs 10.3x).
// So DefaultGroupDelay is 200µs.
//
// With Options.Ticks it syncs on each tick instead (syncOnTicks).
func (db *DB) runFlusher() {
	c := db.commit
	defer c.wg.Done()
	if db.ticks != nil {
		db.syncOnTicks()
		return
	}
	for {
		c.mu.Lock()
		for c.written <= c.durable && !c.closing && c.err == nil {
			c.work.Wait()
		}
		if c.err != nil || (c.closing && c.written <= c.durable) {
			c.mu.Unlock()
			return
		}
		// Commit delay: with 16 closed-loop writers, the 16 Puts the last
		// fdatasync released need a few microseconds each to come back
		// with their next record. Syncing at once would catch only the
		// first few and leave the rest for the next round. So wait, on
		// the cond (every write signals it) rather than spinning, until
		// as many writes are pending as the last group had, or until
		// groupDelay has passed.
		if want, delay := c.lastGroup, min(db.groupDelay, c.lastSync); want > 1 && delay > 0 {
			c.round++
			round := c.round
			t := db.clock.AfterFunc(delay, func() {
				// A timer that fired as its round ended can run after
				// the next round's: never move timedOut back.
				c.mu.Lock()
				c.timedOut = max(c.timedOut, round)
				c.mu.Unlock()
				c.work.Broadcast()
			})
			for c.written-c.durable < want && c.timedOut < round && !c.closing && c.err == nil {
				c.work.Wait()
			}
			t.Stop()
		}
		c.mu.Unlock()

		before := c.durableSeq()
		start := db.clock.Now()
		target, err := db.syncActive()
		took := db.clock.Now().Sub(start)
		c.mu.Lock()
		if err == nil && target > before {
			c.lastGroup = target - before
			c.lastSync = took
			c.measured = target
		}
		c.mu.Unlock()
		c.done.Broadcast()
	}
}

// runPeriodic is the periodic:D syncer: a real timer, so writes become
// durable within D even if no Put comes to trigger a check. Started by
// Open, stopped by Close.
//
// With Options.Ticks it syncs on each tick instead (syncOnTicks).
func (db *DB) runPeriodic(d time.Duration) {
	c := db.commit
	defer c.wg.Done()
	if db.ticks != nil {
		db.syncOnTicks()
		return
	}
	t := db.clock.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-c.quit:
			return
		case <-t.C():
			c.mu.Lock()
			pending := c.written > c.durable && c.err == nil
			c.mu.Unlock()
			if pending {
				db.syncActive()
			}
		}
	}
}

// syncOnTicks is the background syncer of "group" and "periodic:D" under
// Options.Ticks: on each tick it writes and fdatasyncs what is pending,
// as the timer or the flusher would, then closes the tick's channel. It
// returns when Close stops it.
func (db *DB) syncOnTicks() {
	c := db.commit
	for {
		select {
		case <-c.quit:
			return
		case handled := <-db.ticks:
			c.mu.Lock()
			pending := c.written > c.durable && c.err == nil
			c.mu.Unlock()
			if pending {
				db.syncActive()
			}
			close(handled)
		}
	}
}

// syncActive writes the queued group-commit records, fdatasyncs the active
// segment and marks everything written to it durable. It returns the seq
// it covered. It holds db.flushMu so that Compact and Close, which also
// hold it, never close a file under it.
func (db *DB) syncActive() (uint64, error) {
	db.flushMu.Lock()
	defer db.flushMu.Unlock()
	db.writeMu.Lock()
	err := db.flushLocked()
	seg, target, end := db.active, db.lastSeq, db.active.size
	db.writeMu.Unlock()
	if err != nil {
		return target, err
	}
	return target, db.syncSegment(causeCommit, seg, target, end)
}

// syncSegment fdatasyncs seg, records the time it took (and counts it
// under cause), and marks target durable (or makes the error sticky). end is how far seg's file was
// written when the fdatasync was called: on success it becomes seg.synced,
// and the next write into seg carries a sync mark for it (syncmark.go).
//
// It holds db.syncMu from before the fdatasync until its outcome is
// recorded, so two fdatasyncs of a file never overlap: when writeback
// fails, Linux reports the error to only one of the fdatasyncs running on
// the file, and the other returns success for pages that never reached
// the disk. Serialized, a failure is sticky before the next fdatasync
// starts, and that one's success no longer moves DurableSeq or
// seg.synced: it returns the sticky error. A failure also truncates seg
// back to seg.synced (dropUnsynced, writeback.go).
func (db *DB) syncSegment(cause fsyncCause, seg *segment, target uint64, end int64) error {
	db.syncMu.Lock()
	defer db.syncMu.Unlock()
	start := time.Now()
	err := seg.f.Sync()
	db.stats.fsyncs.Add(1)
	db.stats.fsyncsBy[cause].Add(1)
	db.stats.fsyncNanos.Add(int64(time.Since(start)))
	if err != nil {
		err = fmt.Errorf("fdatasync %s: %w", seg.name, err)
	}
	// Record how far the segment is synced before waking the Puts that
	// waited for this fdatasync: the next Put reads seg.synced to decide
	// whether its record carries a sync mark, and it must see the same
	// figure however the goroutines are scheduled (a crash test replayed
	// with one seed then writes the same bytes). A sync that failed, or
	// that follows one that did, proves nothing about the pages the
	// failure marked clean, and records nothing.
	if err == nil && db.commit.failure() == nil && end > seg.synced.Load() {
		seg.synced.Store(end)
	}
	db.commit.synced(target, err)
	if err != nil {
		db.dropUnsynced(seg) // writeback.go: the failed pages may read back
	}
	return db.commit.failure()
}
