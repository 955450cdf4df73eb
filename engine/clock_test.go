package engine

import (
	"sync"
	"time"
)

// fakeClock is a clock that moves only when the test calls Advance. It
// records every timer and ticker the store asks for, so a test can wait
// until the store is waiting on one, then fire it.
type fakeClock struct {
	mu      sync.Mutex
	changed *sync.Cond // broadcast when a timer or ticker is created or stopped
	now     time.Duration
	timers  []*fakeTimer
	tickers []*fakeTicker
}

func newFakeClock() *fakeClock {
	c := &fakeClock{}
	c.changed = sync.NewCond(&c.mu)
	return c
}

type fakeTimer struct {
	c       *fakeClock
	d, at   time.Duration
	f       func()
	stopped bool // stopped or fired
}

func (t *fakeTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := !t.stopped
	t.stopped = true
	t.c.changed.Broadcast()
	return was
}

type fakeTicker struct {
	c       *fakeClock
	d, next time.Duration
	ch      chan time.Time
	stopped bool
}

func (t *fakeTicker) C() <-chan time.Time { return t.ch }

func (t *fakeTicker) Stop() {
	t.c.mu.Lock()
	t.stopped = true
	t.c.mu.Unlock()
}

// Now is the fake time: the sum of every Advance so far.
func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Unix(0, int64(c.now))
}

func (c *fakeClock) AfterFunc(d time.Duration, f func()) stopper {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{c: c, d: d, at: c.now + d, f: f}
	c.timers = append(c.timers, t)
	c.changed.Broadcast()
	return t
}

func (c *fakeClock) NewTicker(d time.Duration) ticker {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTicker{c: c, d: d, next: c.now + d, ch: make(chan time.Time, 1)}
	c.tickers = append(c.tickers, t)
	c.changed.Broadcast()
	return t
}

// Advance moves the clock by d, runs the timers that came due (each in
// its own goroutine, as time.AfterFunc does) and ticks the tickers,
// dropping ticks whose channel is full, as time.Ticker does.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now += d
	var due []func()
	for _, t := range c.timers {
		if !t.stopped && t.at <= c.now {
			t.stopped = true
			due = append(due, t.f)
		}
	}
	for _, t := range c.tickers {
		for !t.stopped && t.next <= c.now {
			select {
			case t.ch <- time.Unix(0, int64(t.next)):
			default:
			}
			t.next += t.d
		}
	}
	c.changed.Broadcast()
	c.mu.Unlock()
	for _, f := range due {
		go f()
	}
}

// waitTimer blocks until a timer is pending and returns how long it was
// set for.
func (c *fakeClock) waitTimer() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	for {
		for _, t := range c.timers {
			if !t.stopped {
				return t.d
			}
		}
		c.changed.Wait()
	}
}

// waitTicker blocks until a ticker is running.
func (c *fakeClock) waitTicker() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for len(c.tickers) == 0 {
		c.changed.Wait()
	}
}
