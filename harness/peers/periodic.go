package peers

import (
	"fmt"
	"sync/atomic"
	"time"
)

// periodicSyncer is the timer of a periodic:D policy for an engine that
// has no timer of its own: a goroutine that calls sync every D until
// stop, and remembers the first failure, which every later write returns
// (err), as kv's first failed fdatasync is sticky. Pebble and SQLite use
// it. Its methods are safe for concurrent use; stop is called once.
type periodicSyncer struct {
	stopCh  chan struct{}               // closed by stop to end the goroutine
	done    chan struct{}               // closed by the goroutine when it returns
	syncErr atomic.Pointer[syncFailure] // first failure of sync; sticky
}

// syncFailure boxes the error for atomic.Pointer.
type syncFailure struct{ err error }

// startPeriodic starts calling sync every d; what names the sync in its
// error ("pebble: periodic WAL sync").
func startPeriodic(d time.Duration, what string, sync func() error) *periodicSyncer {
	p := &periodicSyncer{stopCh: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		t := time.NewTicker(d)
		defer t.Stop()
		for {
			select {
			case <-p.stopCh:
				return
			case <-t.C:
				if err := sync(); err != nil {
					p.syncErr.CompareAndSwap(nil, &syncFailure{fmt.Errorf("%s: %w", what, err)})
					return
				}
			}
		}
	}()
	return p
}

// err returns the first failure of a periodic sync, or nil. A nil
// *periodicSyncer (a store under another policy) never failed.
func (p *periodicSyncer) err() error {
	if p == nil {
		return nil
	}
	if f := p.syncErr.Load(); f != nil {
		return f.err
	}
	return nil
}

// stop ends the goroutine and waits for it. Nil-safe, like err.
func (p *periodicSyncer) stop() {
	if p == nil {
		return
	}
	close(p.stopCh)
	<-p.done
}
