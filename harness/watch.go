package harness

import "time"

// regionWatch reads one of the machine's counters just before and just
// after a run's timed region, and notes when, so that what changed can
// be divided by the time it changed in: the disk's (deviceWatch) and the
// processors' (cpuWatch). The first read that fails ends the watch and
// keeps why, which the result reports instead of a zero. The runner calls
// start, then stop, then the owner's result, from one goroutine.
type regionWatch[T any] struct {
	read            func() (T, error)
	unavailable     string // why there is nothing to read
	before, after   T
	startAt, stopAt time.Time
}

// start reads the counter just before the timed region.
func (w *regionWatch[T]) start() { w.before, w.startAt = w.sample() }

// stop reads it again just after.
func (w *regionWatch[T]) stop() { w.after, w.stopAt = w.sample() }

// sample is the counter now and the time it was read, unless this read
// or an earlier one failed.
func (w *regionWatch[T]) sample() (v T, at time.Time) {
	if w.unavailable != "" {
		return v, at
	}
	v, err := w.read()
	if err != nil {
		w.unavailable = err.Error()
		return v, at
	}
	return v, time.Now()
}
