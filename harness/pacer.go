package harness

import (
	"runtime"
	"time"
)

// The open-loop pacer: how a -rate worker waits for a unit's intended
// start, the clock it reads, and the account it keeps of its own lateness.
//
// A worker that wakes late starts its unit late, and the corrected latency
// (counted from the intended start, as it must be) bills that lateness to
// the store. So the pacer has to keep time, and it has to say how well it
// kept it: each unit's pacer lag is the time from the moment the generator
// was free to start it (its intended start, or the end of the worker's
// previous unit if that ended later) to the moment the unit did start.
// Waiting for the previous unit is the store's doing; the pacer lag is the
// generator's alone. A result carries its distribution (pacer_lag) beside
// the corrected latency.
//
// Lateness also accumulates: a generator that wakes 2 ms late at -rate 1000
// starts its next units late too, and their pacer lag is zero (each starts
// as soon as the one before it ends), though the store had nothing to do
// with the wait. So the account keeps a second figure per unit, the
// generator's delay: how much later the unit ended than it would have with
// a generator that is never late, the same service times queued behind one
// another from the intended starts (idealEnd = max(intended, previous
// idealEnd) + service, the Lindley recursion of a one-server queue). It is
// at least the pacer lag, equal to it while lateness does not carry over.
// A run whose generator-delay p99 exceeds GeneratorLateFraction of its
// corrected p99 (so in particular one whose pacer-lag p99 does) says that
// the load generator, not the store, was late; and when units were left
// undone at the deadline it says the generator fell behind, not the store.
//
// How to wake on time. The pacer waits in three stages:
//
//  1. a Go timer until timerMargin before the intended start: free, and it
//     can be interrupted by the run's stop, but coarse. On Linux the
//     runtime's netpoller sleeps in whole milliseconds (epoll_pwait), so a
//     timer wakes up to a millisecond late.
//  2. a high-resolution sleep (fineSleep: nanosleep(2) on Linux, an hrtimer)
//     until spinWindow before it. It blocks its thread (the runtime hands
//     the thread's P to another one), and wakes late by the thread's timer
//     slack (50 µs by default) plus the scheduler's wake-up latency.
//  3. a spin on the monotonic clock, yielding the processor on each turn
//     (runtime.Gosched) so other goroutines still run, for the last
//     spinWindow.
//
// Measured on the 2-core ext4 VM this course is developed on, waking 2000
// times (or 2 s) at gaps of 10 ms, 1 ms and 100 µs, lateness p50 and the
// process's CPU use (load average 7-10 on 2 cores, so the p99s, 1-270 ms
// for every method, are the scheduler's and say nothing about the method):
//
//	method                        p50 late (10ms / 1ms / 100µs gaps)   CPU at 10 ms / 1 ms
//	Go timer alone (the old pacer)  793 µs / 711 µs / 618 µs            1% / 3%
//	nanosleep alone                 146 µs /  82 µs /  68 µs            1% / 7%
//	spin alone                      0.5 µs / 2.4 ms / 0.2 µs            49% / 30%
//	timer to -1.5 ms, then spin     0.4 µs /  18 µs / 0.1 µs            7% / 51%
//	the three stages (this pacer)   0.3 µs / 0.1 µs / 0.2 µs            2% / 4%
//
// Why not spin the whole way: spinning costs a core, and this machine has
// two, shared with the store under test and everything else; and a spinner
// is a worse sleeper under load (pure spinning fell behind by 2.4 ms at p50
// with 1 ms gaps: the kernel preempts a thread that uses its whole slice).
// The spin is bounded to spinWindow per unit, so it costs at most rate x
// spinWindow of one core: 2.5% at -rate 100, 25% at -rate 1000; at -rate
// 4000 and above units are 250 µs apart or less and the worker spins
// between them all the time, a core for the generator (58% of the process
// in the table's 100 µs column; the old pacer also spun below 100 µs).
//
// Why 250 µs and not 100: a quiet machine wakes a sleeping thread later
// than a busy one, because an idle virtual CPU halts and its wake-up is
// the hypervisor's (the table above was taken at load 7-10, where no CPU
// idles). At load 0.4-1.2, BenchmarkPacerNull (2 s at each rate, three
// runs, interleaved) gave pacer-lag p50 3.0-7.0 µs at -rate 1000 and
// 4.7-12.7 µs at -rate 100 with a 100 µs window, against 0.3-0.5 µs and
// 1.9 µs with 250 µs; the p99 (of 2,000 and 200 units: one preemption
// sets it) 64-432 µs and 40-557 µs against 18-639 µs and 27-2,065 µs,
// medians 144 and 181 µs against 69 and 78 µs.
// Why the window grows after a late wake. Those p99s missed the 100 µs
// target on one quiet sitting in two (1.5 ms at -rate 100, 1.1 ms at
// -rate 1000, against 33 µs at -rate 10,000, where units are 100 µs apart
// and the worker never sleeps): about one fine sleep in a hundred woke
// more than a millisecond late, past any fixed window worth its CPU. So
// the window is 250 µs while the fine sleep keeps time, and after a sleep
// that woke late it becomes twice that lateness (at most maxSpinWindow),
// then shrinks back by a thirty-second of its excess per sleep that woke
// on time (nextSpinWindow). A machine whose sleeps keep time pays 250 µs
// per unit; one whose virtual CPU wakes late pays with a core for time
// kept, and pacer_lag still shows what it could not keep.
//
// Why stage 1 ends timerMargin = 3 ms early: the fine sleep costs no CPU
// either, and every millisecond more it covers is a millisecond of the
// Go timer's lateness that cannot reach the unit (at -rate 1000 and
// above the timer is not used at all).
//
// Why not a timer and a longer spin: the spin must cover the timer's
// lateness, up to a millisecond, so at -rate 1000 it spins most of the
// time (51%). Raising the thread's timer precision (prctl
// PR_SET_TIMERSLACK) would need each paced goroutine locked to its own
// thread; the spin window absorbs the default slack instead.
//
// macOS (not measured here): the runtime's netpoller sleeps in kevent with
// a nanosecond timeout, so stage 1 wakes far closer than on Linux, subject
// to the kernel's timer coalescing leeway (tens of µs for a foreground
// process, much more under App Nap or low-power mode); x/sys/unix has no
// Nanosleep there, so stage 2 is the same timer (time.Sleep). The spin
// window absorbs ordinary leeway; where coalescing is heavier, pacer_lag
// shows it, which is what it is for.

const (
	// timerMargin is how long before the intended start the Go timer is
	// asked to wake: well over its Linux lateness (up to 1 ms); the fine
	// sleep covers the rest.
	timerMargin = 3 * time.Millisecond
	// spinWindow is how long before the intended start the fine sleep
	// ends and the spin begins, while the fine sleep keeps time: more
	// than nanosleep's default 50 µs timer slack plus a quiet virtual
	// machine's wake-up latency (see above). It bounds the spin, and so
	// the core the pacer burns, to rate x spinWindow.
	spinWindow = 250 * time.Microsecond
	// maxSpinWindow bounds the window after late wakes (nextSpinWindow):
	// at -rate 500 and above it is a core.
	maxSpinWindow = 2 * time.Millisecond
)

// nextSpinWindow is the spin window after a fine sleep that woke late by
// late, when the window was cur: twice the lateness if that is more than
// cur (at most maxSpinWindow), else cur shrunk by a thirty-second of its
// excess over spinWindow, so that about a hundred sleeps on time bring it
// most of the way back.
func nextSpinWindow(cur, late time.Duration) time.Duration {
	if need := min(2*late, maxSpinWindow); need > cur {
		return need
	}
	return max(cur-(cur-spinWindow+31)/32, spinWindow) // rounded up: it reaches spinWindow
}

// GeneratorLateFraction is where the blame for a -rate run's corrected
// tail moves from the store to the load generator: when the generator's
// delay p99 (at least the pacer-lag p99) is more than this fraction of the
// corrected p99 (of the slowest op kind), most of the tail is the
// generator's own lateness, and the result says so (generator_late)
// instead of billing the store for it.
const GeneratorLateFraction = 0.5

// worstP99 is the highest corrected p99 among a result's op kinds: the
// tail generatorLate weighs the generator's delay against.
func worstP99(lat map[string]*LatencySummary) int64 {
	var worst int64
	for _, l := range lat {
		worst = max(worst, l.P99Ns)
	}
	return worst
}

// generatorLate reports whether a generator-delay p99 of delayP99 ns makes
// the load generator, not the store, the one that was late, against a
// corrected p99 of correctedP99 ns.
func generatorLate(delayP99, correctedP99 int64) bool {
	return delayP99 > 0 && float64(delayP99) > GeneratorLateFraction*float64(correctedP99)
}

// account records a paced unit that was due at intended, started at start
// and ended at end: its pacer lag, from when the worker was free to start
// it (the later of intended and the previous unit's end) to its start, and
// the generator's delay, its end minus its end under a generator that is
// never late.
func (w *worker) account(intended, start, end time.Duration) {
	w.lag.record(int64(start - max(intended, w.prevEnd)))
	w.idealEnd = max(intended, w.idealEnd) + (end - start)
	w.delay.record(int64(end - w.idealEnd))
	w.prevEnd = end
}

// clock is what a worker reads the time from and waits on: durations on
// the run's clock. The run's real clock is monotonic (monoClock); tests
// inject a fake one to play a late generator or a slow store exactly.
// A clock belongs to one worker: not safe for concurrent use.
type clock interface {
	// now is the time on the run's clock.
	now() time.Duration
	// sleepUntil waits until at; false if stop was closed first.
	sleepUntil(at time.Duration, stop <-chan struct{}) bool
}

// monoClock is the real clock: the monotonic clock since base, read as
// time.Since(base), one monotonic reading (time.Now reads the wall clock
// too, which the timed loop has no use for).
type monoClock struct {
	base  time.Time
	timer *time.Timer   // stage 1's timer, made on the first long wait
	spin  time.Duration // the spin window (nextSpinWindow); 0 until the first fine sleep: spinWindow
}

func (c *monoClock) now() time.Duration { return time.Since(c.base) }

// sleepUntil waits in the three stages of the file comment.
func (c *monoClock) sleepUntil(at time.Duration, stop <-chan struct{}) bool {
	if d := at - timerMargin - c.now(); d > 0 {
		if c.timer == nil {
			c.timer = time.NewTimer(d)
		} else {
			c.timer.Reset(d)
		}
		select {
		case <-c.timer.C:
		case <-stop:
			return false
		}
	}
	if c.spin == 0 {
		c.spin = spinWindow
	}
	wake := at - c.spin
	if d := wake - c.now(); d > 0 {
		fineSleep(d)
		c.spin = nextSpinWindow(c.spin, c.now()-wake)
	}
	for c.now() < at {
		runtime.Gosched()
	}
	return true
}
