package guard

import (
	"testing"
	"time"
)

func TestLimiter(t *testing.T) {
	l := NewLimiter(3, time.Minute)
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for i := range 3 {
		if !l.Allow("a", t0) {
			t.Fatalf("event %d: refused, want allowed", i+1)
		}
	}
	if l.Allow("a", t0) || !l.Over("a", t0) {
		t.Fatal("the 4th event in the window: allowed, want refused")
	}
	if !l.Allow("b", t0) {
		t.Fatal("another key: refused")
	}
	if !l.Allow("a", t0.Add(time.Minute)) || l.Over("a", t0.Add(time.Minute)) {
		t.Fatal("the next window: refused, want allowed")
	}
}
