package server

import (
	"errors"
	"fmt"
	"net/http"
	"sync"

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
	rate *guard.WriteRate // writes, per address and in all

	mu sync.Mutex // guards perBrowser
	// perBrowser counts stored predictions by browser and quiz (POST
	// /api/predict); forgotten in full when it holds maxTracked keys,
	// which bounds its memory (the rate still bounds every address).
	perBrowser map[string]int
}

// maxTracked bounds writeGate.perBrowser.
const maxTracked = 100_000

func newWriteGate(g *guard.Guard, l WriteLimits) *writeGate {
	return &writeGate{rate: g.NewWriteRate(l.Rate, l.TotalRate), perBrowser: map[string]int{}}
}

// writeAllowed counts one write from r's address against -write-rate
// and -write-rate-total (guard.WriteRate), or replies 429 after the
// refusal's delay and reports false.
func (s *Server) writeAllowed(w http.ResponseWriter, r *http.Request, what string) bool {
	var refused *guard.WriteRefusedError
	if err := s.writes.rate.Allow(r, what); errors.As(err, &refused) {
		web.TooManyRequests(w, r, s.ctx.Done(), refused.Wait, refused.Msg)
		return false
	}
	return true
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
