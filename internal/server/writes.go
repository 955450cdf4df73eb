package server

import (
	"fmt"
	"net/http"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"kvlab/internal/server/guard"
	"kvlab/internal/server/web"
)

// Bounded writes. Every route a student can use to write to the archive
// (POST /api/predict, a room's ballots, shares to a class board) is
// bounded three ways, each a serve flag (WriteLimits):
//
//   - a rate per remote address over all three (-write-rate a minute),
//     and one for every address together (-write-rate-total a minute: a
//     hundred hostile machines each under -write-rate would otherwise
//     make a hundred times the writes the archive commits, and the
//     commits compete with a measurement for the disk);
//   - a cap per browser per quiz or poll (-max-predictions-per-browser:
//     how many times one browser may store a prediction for one quiz, or
//     change its ballot in one poll), and per address per poll
//     (-max-ballots-per-address: distinct browsers' ballots) and per room
//     (-max-shares-per-address);
//   - a body cap (-max-write-bytes for predictions and ballots,
//     -max-share-bytes for a share).
//
// The defaults hold a class of 60 behind one NAT (one address) with room
// to spare: 60 students predicting, voting and sharing make a few hundred
// writes in a busy minute; -write-rate allows 600. What gets through is
// group-committed (internal/archive, group.go).

// WriteLimits are the bounds above. Zero fields take DefaultWriteLimits'.
type WriteLimits struct {
	Rate                 int   // writes one address may make a minute, all routes together
	TotalRate            int   // writes every address together may make a minute
	PerBrowser           int   // predictions one browser may store for one quiz, or ballot changes in one poll
	BallotsPerAddress    int   // browsers from one address that may vote in one poll
	SharesPerAddressRoom int   // results one address may share with one room
	MaxBytes             int64 // body cap of a prediction or a ballot
	MaxShareBytes        int64 // body cap of a share
}

// DefaultWriteLimits are the flags' defaults.
func DefaultWriteLimits() WriteLimits {
	return WriteLimits{Rate: 600, TotalRate: 6000, PerBrowser: 20, BallotsPerAddress: 150, SharesPerAddressRoom: 100, MaxBytes: 4 << 10, MaxShareBytes: 64 << 10}
}

// withDefaults fills zero fields from DefaultWriteLimits.
func (w WriteLimits) withDefaults() WriteLimits {
	d := DefaultWriteLimits()
	for _, f := range []struct {
		v   *int
		def int
	}{{&w.Rate, d.Rate}, {&w.TotalRate, d.TotalRate}, {&w.PerBrowser, d.PerBrowser}, {&w.BallotsPerAddress, d.BallotsPerAddress}, {&w.SharesPerAddressRoom, d.SharesPerAddressRoom}} {
		if *f.v <= 0 {
			*f.v = f.def
		}
	}
	if w.MaxBytes <= 0 {
		w.MaxBytes = d.MaxBytes
	}
	if w.MaxShareBytes <= 0 {
		w.MaxShareBytes = d.MaxShareBytes
	}
	return w
}

// writeGate holds the counts the bounds need. It is safe for concurrent
// use.
type writeGate struct {
	rate *guard.Limiter // writes, per address
	// total is every address's writes together: a token bucket that
	// refills at -write-rate-total a minute and holds two seconds of it,
	// so a class that predicts at once (a burst) gets through and a
	// sustained flood from many addresses does not.
	total *rate.Limiter

	mu sync.Mutex // guards perBrowser
	// perBrowser counts stored predictions by browser and quiz (POST
	// /api/predict); forgotten in full when it holds maxTracked keys,
	// which bounds its memory (the rate still bounds every address).
	perBrowser map[string]int
}

// refusalDelay is how long a write over -write-rate waits for its 429.
const refusalDelay = time.Second

// maxTracked bounds writeGate.perBrowser.
const maxTracked = 100_000

func newWriteGate(l WriteLimits) *writeGate {
	perSec := float64(l.TotalRate) / 60
	return &writeGate{rate: guard.NewLimiter(l.Rate, time.Minute), total: rate.NewLimiter(rate.Limit(perSec), max(int(2*perSec), 1)),
		perBrowser: map[string]int{}}
}

// writeAllowed counts one write from r's address against -write-rate,
// or replies 429 and reports false. what names the write in the log.
func (s *Server) writeAllowed(w http.ResponseWriter, r *http.Request, what string) bool {
	addr := guard.RemoteHost(r)
	msg := fmt.Sprintf("%s made more than %d predictions, ballots and shares in a minute, the most one address may (-write-rate): wait a moment", addr, s.cfg.Writes.Rate)
	if s.writes.rate.Allow(addr, time.Now()) {
		if s.writes.total.Allow() {
			return true
		}
		msg = fmt.Sprintf("this server is taking %d predictions, ballots and shares a minute from everyone together, the most it takes (-write-rate-total): wait a moment", s.cfg.Writes.TotalRate)
		what += ": over -write-rate-total"
	} else {
		what += ": over -write-rate"
	}
	s.guard.Refused(addr, what)
	// The refusal waits before it answers: a script that floods gets one
	// answer a second per connection (and -max-conns-per-address bounds
	// its connections), instead of a 429 as fast as it can send, whose
	// HTTP work alone would take the CPUs from a measurement.
	t := time.NewTimer(refusalDelay)
	select {
	case <-t.C:
	case <-r.Context().Done():
	case <-s.ctx.Done():
	}
	t.Stop()
	w.Header().Set("Retry-After", "1")
	web.JSONError(w, http.StatusTooManyRequests, msg)
	return false
}

// predictionAllowed counts one stored prediction of browser for quiz
// (lesson/quiz) against -max-predictions-per-browser, or replies 429 and
// reports false.
func (s *Server) predictionAllowed(w http.ResponseWriter, browser, lesson, quiz string) bool {
	g := s.writes
	key := browser + "\x00" + lesson + "\x00" + quiz
	g.mu.Lock()
	if len(g.perBrowser) >= maxTracked {
		clear(g.perBrowser)
	}
	n := g.perBrowser[key]
	if n < s.cfg.Writes.PerBrowser {
		g.perBrowser[key] = n + 1
	}
	g.mu.Unlock()
	if n >= s.cfg.Writes.PerBrowser {
		web.JSONError(w, http.StatusTooManyRequests, fmt.Sprintf("this browser stored %d predictions for quiz %s, the most one browser may (-max-predictions-per-browser)", n, quiz))
		return false
	}
	return true
}
