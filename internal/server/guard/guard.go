package guard

import (
	"io"
	"log"
	"sync"
	"time"
)

// DefaultMaxTokenFailures is Config.MaxTokenFailures' default: wrong
// tokens and presenter secrets one address may send in a minute. A class
// of 60 behind one NAT mistyping the token at the start stays under it; a
// script guessing is stopped after it.
const DefaultMaxTokenFailures = 30

// Config is what a Guard checks against.
type Config struct {
	// Token is the run token students are given; "" = no token needed
	// (a server on loopback only).
	Token string
	// PresenterToken presents every room and opens the past classes from
	// any machine; "" = only from this machine.
	PresenterToken string
	// Hosts are names (no port) a server with a token answers in the
	// Host header besides IP addresses, localhost and this machine's host
	// name: the names students type.
	Hosts []string
	// MaxTokenFailures is how many wrong tokens and presenter secrets one
	// address may send in a minute. 0 = DefaultMaxTokenFailures.
	MaxTokenFailures int
	// MaxQueuedPerAddress caps the runs one remote address may have
	// queued or running (HoldAddr).
	MaxQueuedPerAddress int
	// Log receives one line per refusal (Refused); nil = discarded.
	Log *log.Logger
}

// A Guard holds the checks of one server and the counts they keep. It is
// safe for concurrent use.
type Guard struct {
	cfg       Config
	log       *log.Logger
	hostNames []string // the names HostOK accepts on a server with a token
	authFails *Limiter // wrong tokens and secrets per address (TokenGuess)

	mu        sync.Mutex           // guards the fields below
	runs      map[string]int       // runs queued or running, by remote host
	conns     map[string]int       // open connections, by remote host
	open      int                  // open connections in all
	refusedAt map[string]time.Time // the last refusal logged, by remote host
	muted     map[string]int       // refusals not logged since then, by remote host
}

// New returns the Guard for cfg, its zero fields defaulted.
func New(cfg Config) *Guard {
	if cfg.MaxTokenFailures <= 0 {
		cfg.MaxTokenFailures = DefaultMaxTokenFailures
	}
	lg := cfg.Log
	if lg == nil {
		lg = log.New(io.Discard, "", 0)
	}
	return &Guard{cfg: cfg, log: lg, hostNames: hostNamesOf(cfg.Hosts),
		authFails: NewLimiter(cfg.MaxTokenFailures, time.Minute),
		runs:      map[string]int{}, conns: map[string]int{}, refusedAt: map[string]time.Time{}, muted: map[string]int{}}
}

// NeedToken reports whether runs must present the run token.
func (g *Guard) NeedToken() bool { return g.cfg.Token != "" }
