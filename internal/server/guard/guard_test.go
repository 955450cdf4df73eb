package guard

import (
	"bytes"
	"errors"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// HoldAddr counts runs per address up to MaxQueuedPerAddress; release
// gives a place back once however often it is called.
func TestHoldAddr(t *testing.T) {
	g := New(Config{MaxQueuedPerAddress: 2})
	r1, err1 := g.HoldAddr("10.0.0.1")
	r2, err2 := g.HoldAddr("10.0.0.1")
	if err1 != nil || err2 != nil {
		t.Fatalf("the first two runs: %v, %v; want both held", err1, err2)
	}
	_, err := g.HoldAddr("10.0.0.1")
	var full *AddrFullError
	if !errors.As(err, &full) || full.N != 2 || !strings.Contains(err.Error(), "-max-queued-per-address") {
		t.Fatalf("the third run: %v, want an *AddrFullError naming 2 runs and the flag", err)
	}
	if _, err := g.HoldAddr("10.0.0.2"); err != nil {
		t.Errorf("another address: %v, want it held", err)
	}
	r1()
	r1() // a second call gives nothing more back
	if _, err := g.HoldAddr("10.0.0.1"); err != nil {
		t.Errorf("after one release: %v, want a place", err)
	}
	if _, err := g.HoldAddr("10.0.0.1"); err == nil {
		t.Errorf("a second release of the same hold gave back a second place")
	}
	r2()
}

// Wrong tokens count per address; past MaxTokenFailures in a minute the
// address is refused before any comparison, even with the right token. A
// missing token is no guess.
func TestTokenGuessThrottles(t *testing.T) {
	g := New(Config{Token: "tok", MaxTokenFailures: 3})
	check := func(addr, tok string) (bool, string) {
		return g.TokenGuess(addr, tok, func() bool { return g.TokenOK(tok) })
	}
	for range 5 {
		if ok, throttled := check("a", ""); ok || throttled != "" {
			t.Fatalf("no token: ok %v, throttled %q; want refused, not throttled", ok, throttled)
		}
	}
	for i := range 3 {
		if ok, throttled := check("a", "wrong"); ok || throttled != "" {
			t.Fatalf("wrong token %d: ok %v, throttled %q; want refused, not yet throttled", i+1, ok, throttled)
		}
	}
	if ok, throttled := check("a", "tok"); ok || !strings.Contains(throttled, "-max-token-failures") {
		t.Errorf("the right token after 3 wrong ones: ok %v, throttled %q; want throttled", ok, throttled)
	}
	if ok, _ := check("b", "tok"); !ok {
		t.Errorf("another address with the right token: refused")
	}
}

// presented is a room whose presenter secret is "secret".
type presented struct{}

func (presented) PresenterOK(s string) bool { return s == "secret" }

// A room's presenter is who has its secret or the presenter token; on a
// server without a token, this machine is the presenter as well.
func TestPresenterError(t *testing.T) {
	open := New(Config{PresenterToken: "pres"})
	withToken := New(Config{Token: "tok", PresenterToken: "pres"})
	tests := []struct {
		g            *Guard
		addr, secret string
		want         int
	}{
		{open, "127.0.0.1", "", 0},
		{open, "10.0.0.1", "", http.StatusForbidden},
		{open, "10.0.0.1", "secret", 0},
		{open, "10.0.0.1", "pres", 0},
		{withToken, "127.0.0.1", "", http.StatusForbidden},
		{withToken, "127.0.0.1", "tok", http.StatusForbidden}, // the run token does not present
		{withToken, "10.0.0.1", "secret", 0},
	}
	for _, tt := range tests {
		code, why := tt.g.PresenterError(tt.addr, presented{}, "room X", tt.secret)
		if code != tt.want || (code != 0) != (why == ErrPresenterNeeded) {
			t.Errorf("token %v, %s with %q: %d %q, want %d", tt.g.NeedToken(), tt.addr, tt.secret, code, why, tt.want)
		}
	}
}

// The refusal log names an address once a minute, and counts the
// refusals it did not log in the next line.
func TestRefusedOncePerMinute(t *testing.T) {
	var b bytes.Buffer
	g := New(Config{Log: log.New(&b, "", 0)})
	for range 3 {
		g.Refused("10.0.0.1", "why")
	}
	if got := strings.Count(b.String(), "refused 10.0.0.1: why"); got != 1 {
		t.Errorf("3 refusals in a minute logged %d lines, want 1:\n%s", got, b.String())
	}
	g.mu.Lock()
	muted := g.muted["10.0.0.1"]
	g.mu.Unlock()
	if muted != 2 {
		t.Errorf("%d refusals counted as not logged, want 2", muted)
	}
}

// SameOrigin passes a request without Origin or from this server's own
// page, and refuses any other origin.
func TestSameOrigin(t *testing.T) {
	for _, tt := range []struct {
		origin string
		want   bool
	}{{"", true}, {"http://lab.example:8080", true}, {"http://LAB.example:8080", true}, {"http://evil.example", false}, {"null", false}} {
		r := httptest.NewRequest("GET", "http://lab.example:8080/ws", nil)
		if tt.origin != "" {
			r.Header.Set("Origin", tt.origin)
		}
		if got := SameOrigin(r); got != tt.want {
			t.Errorf("Origin %q: got %v, want %v", tt.origin, got, tt.want)
		}
	}
}
