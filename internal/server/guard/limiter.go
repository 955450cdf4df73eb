package guard

import (
	"sync"
	"time"
)

// Limiter counts events per key in fixed windows: at most n per window.
// It is safe for concurrent use.
type Limiter struct {
	n      int
	window time.Duration

	mu   sync.Mutex // guards seen
	seen map[string]*windowCount
}

type windowCount struct {
	start time.Time
	n     int
}

// NewLimiter allows n events per window per key.
func NewLimiter(n int, window time.Duration) *Limiter {
	return &Limiter{n: n, window: window, seen: map[string]*windowCount{}}
}

// Allow counts one event for key at now and reports whether it is within
// the limit.
func (l *Limiter) Allow(key string, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	w := l.seen[key]
	if w == nil || now.Sub(w.start) >= l.window {
		if len(l.seen) > 4096 {
			l.forget(now)
		}
		w = &windowCount{start: now}
		l.seen[key] = w
	}
	w.n++
	return w.n <= l.n
}

// Over reports, without counting, whether key is over the limit at now.
func (l *Limiter) Over(key string, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	w := l.seen[key]
	return w != nil && now.Sub(w.start) < l.window && w.n >= l.n
}

// forget drops finished windows. REQUIRES: l.mu held.
func (l *Limiter) forget(now time.Time) {
	for k, w := range l.seen {
		if now.Sub(w.start) >= l.window {
			delete(l.seen, k)
		}
	}
}
