package engine

import "time"

// clock is where the engine gets its timers: the group-commit flusher's
// commit delay (runFlusher), the fdatasync duration that caps that delay,
// and the periodic:D ticker (runPeriodic). The store uses the real one;
// tests replace it (Options.clock) with a fake they advance by hand, so
// they never wait on real time. Pebble's LogWriter injects its timers the
// same way. (Stats' FsyncTime is a measurement of the disk and always
// uses the real clock.)
type clock interface {
	// Now returns the current time, as time.Now.
	Now() time.Time
	// AfterFunc calls f in its own goroutine after d, unless the returned
	// timer is stopped first, as time.AfterFunc.
	AfterFunc(d time.Duration, f func()) stopper
	// NewTicker sends on its channel every d, dropping ticks a slow
	// receiver misses, as time.NewTicker.
	NewTicker(d time.Duration) ticker
}

// stopper is a timer that can be cancelled.
type stopper interface {
	Stop() bool
}

// ticker is a running ticker.
type ticker interface {
	C() <-chan time.Time
	Stop()
}

// realClock is the operating system's clock.
type realClock struct{}

func (realClock) Now() time.Time                              { return time.Now() }
func (realClock) AfterFunc(d time.Duration, f func()) stopper { return time.AfterFunc(d, f) }
func (realClock) NewTicker(d time.Duration) ticker            { return realTicker{time.NewTicker(d)} }

type realTicker struct{ t *time.Ticker }

func (r realTicker) C() <-chan time.Time { return r.t.C }
func (r realTicker) Stop()               { r.t.Stop() }
