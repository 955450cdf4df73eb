package peers

import "sync"

// idleList holds the connections of a client store that no caller is
// using: a caller takes one (or makes a new one when there is none) and
// gives it back, so each concurrent client keeps a connection of its own
// for the run. After close, a connection given back is not kept. It is
// safe for concurrent use.
type idleList[C any] struct {
	mu     sync.Mutex // guards idle and closed
	idle   []C
	closed bool
}

// take returns an idle connection, or ok=false when there is none.
func (l *idleList[C]) take() (c C, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n := len(l.idle); n > 0 {
		c = l.idle[n-1]
		l.idle = l.idle[:n-1]
		return c, true
	}
	return c, false
}

// give keeps c for the next caller; it reports false, keeping nothing,
// once the list is closed (the caller then closes c).
func (l *idleList[C]) give(c C) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false
	}
	l.idle = append(l.idle, c)
	return true
}

// close returns the idle connections for the caller to close; later
// gives keep nothing.
func (l *idleList[C]) close() []C {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	idle := l.idle
	l.idle = nil
	return idle
}
