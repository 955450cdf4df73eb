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
	// idle0 and idle1 are the idle baseline's readings, idleFor apart
	// (baseline); idleFor is 0 when none was taken.
	idle0, idle1 T
	idleFor      time.Duration
}

// baseline reads the counter over d of idle time (sleep waits it out;
// time.Sleep outside tests) before the run's store opens (idleMachine),
// so that the owner's result can tell what the machine did without the
// run. It reads nothing, and does not sleep, on a watch with nothing to
// read, and reports whether it slept.
func (w *regionWatch[T]) baseline(d time.Duration, sleep func(time.Duration)) bool {
	if w.unavailable != "" || w.read == nil || d <= 0 {
		return false
	}
	var at0, at1 time.Time
	w.idle0, at0 = w.sample()
	sleep(d)
	w.idle1, at1 = w.sample()
	if w.unavailable == "" {
		w.idleFor = at1.Sub(at0)
	}
	return true
}

// machineWatch watches the disk under a run's directory and the
// processors over one measurement, with an idle baseline before it.
type machineWatch struct {
	device *deviceWatch
	cpu    *cpuWatch
}

// idleMachine takes the idle baseline for a measurement to come, over
// idle: what the device counts without the run is subtracted from what
// it counts with it, and what the processors did in the same idle time
// is other programs' share of the machine. It is taken before the store
// is opened, so nothing of the run is in it: not a server starting, nor
// the background work (flushes, compactions) a store keeps doing after
// its preload and warm-up, which is the store's own cost, counted in its
// timed region. The page cache's backlog is written back first
// (deviceWatch.settle), so the baseline sees what others write now.
func idleMachine(dir string, idle time.Duration) machineWatch {
	m := machineWatch{watchDevice(dir), watchCPU()}
	m.device.settle()
	m.device.baseline(idle, func(d time.Duration) {
		if !m.cpu.baseline(d, time.Sleep) {
			time.Sleep(d)
		}
	})
	return m
}

// start reads both counters just before the measurement.
func (m machineWatch) start() {
	m.device.start()
	m.cpu.start()
}

// stop reads both again just after it.
func (m machineWatch) stop() {
	m.cpu.stop()
	m.device.stop()
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
