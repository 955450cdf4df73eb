package guard

import (
	"fmt"
	"net/http"
	"time"

	"golang.org/x/time/rate"
)

// RefusalDelay is how long a write over a WriteRate should wait before
// its refusal is told: a script that floods gets one answer a second per
// connection (and the connections per address are bounded), instead of a
// refusal as fast as it can send, whose HTTP work alone would take the
// CPUs from a measurement.
const RefusalDelay = time.Second

// WriteRate bounds students' writes (a prediction, a ballot, a share):
// per remote address in a minute (-write-rate), and every address's
// together (-write-rate-total). It is safe for concurrent use.
type WriteRate struct {
	g              *Guard
	perAddr, total int
	rate           *Limiter // writes, per address
	// all is every address's writes together: a token bucket that
	// refills at total a minute and holds two seconds of it, so a class
	// that writes at once (a burst) gets through and a sustained flood
	// from many addresses does not.
	all *rate.Limiter
}

// NewWriteRate bounds writes to perAddr a minute per address and total a
// minute from every address together; its refusals are logged through
// g's Refused.
func (g *Guard) NewWriteRate(perAddr, total int) *WriteRate {
	perSec := float64(total) / 60
	return &WriteRate{g: g, perAddr: perAddr, total: total, rate: NewLimiter(perAddr, time.Minute),
		all: rate.NewLimiter(rate.Limit(perSec), max(int(2*perSec), 1))}
}

// WriteRefusedError is a WriteRate's verdict on a write over a rate: the
// caller waits Wait (RefusalDelay) and replies 429 with the error's text.
type WriteRefusedError struct {
	Msg  string
	Wait time.Duration
}

func (e *WriteRefusedError) Error() string { return e.Msg }

// Allow counts one write (what: "prediction", "share", ...) from r's
// address. It returns nil when the write may go on, else a
// *WriteRefusedError, and logs the refusal (Refused).
func (w *WriteRate) Allow(r *http.Request, what string) error {
	addr := RemoteHost(r)
	msg := fmt.Sprintf("%s made more than %d predictions, ballots and shares in a minute, the most one address may (-write-rate): wait a moment", addr, w.perAddr)
	if w.rate.Allow(addr, time.Now()) {
		if w.all.Allow() {
			return nil
		}
		msg = fmt.Sprintf("this server is taking %d predictions, ballots and shares a minute from everyone together, the most it takes (-write-rate-total): wait a moment", w.total)
		what += ": over -write-rate-total"
	} else {
		what += ": over -write-rate"
	}
	w.g.Refused(addr, what)
	return &WriteRefusedError{Msg: msg, Wait: RefusalDelay}
}
