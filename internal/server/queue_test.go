package server

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"

	"kvlab/harness"
)

// holdDisk makes every run block until it is cancelled, so whatever is
// submitted after the first run has to wait.
func holdDisk(s *Server) {
	s.exec = func(ctx context.Context, line string, env harness.Env) ([]byte, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}
}

// gateCtx holds the first Done call (context.WithCancel in client.run
// makes it) until every submitter has made it, so all of them reach the
// queue together, whatever they checked before.
type gateCtx struct {
	context.Context
	once    sync.Once
	arrived *sync.WaitGroup
}

func (g *gateCtx) Done() <-chan struct{} {
	g.once.Do(func() {
		g.arrived.Done()
		g.arrived.Wait()
	})
	return g.Context.Done()
}

// Many clients submitting at the same moment never push the waiting line
// past the server's cap: the check and the append are one step. A run:
// quiz that finds the line full gets 429.
func TestQueueCapUnderConcurrentSubmit(t *testing.T) {
	s := newServer(t, nil)
	holdDisk(s)
	s.maxWaiting = 5
	ts := startServer(t, s)
	first := dial(t, ts, "", nil)
	first.run("hold", "bench -engine null -ops 100")
	first.until("hold", "started")
	const submitters = 300
	start := make(chan struct{})
	var wg, arrived sync.WaitGroup
	arrived.Add(submitters)
	clients := make([]*client, submitters)
	for i := range clients {
		ctx, cancel := context.WithCancel(s.ctx)
		t.Cleanup(cancel)
		c := &client{s: s, out: make(chan []byte, outBuffer), jobs: map[string]*job{}, ctx: &gateCtx{Context: ctx, arrived: &arrived}, cancel: cancel}
		clients[i] = c
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			c.run(inMsg{Type: "run", ID: "r", Cell: "bench -engine null -ops 100"})
		}()
	}
	close(start)
	wg.Wait()
	if got := queueLen(s.q); got > s.maxWaiting {
		t.Errorf("got %d runs waiting, want at most %d", got, s.maxWaiting)
	}
	accepted, refused := 0, 0
	for _, c := range clients {
	drain:
		for {
			select {
			case b := <-c.out:
				switch {
				case strings.Contains(string(b), `"type":"queued"`):
					accepted++
				case strings.Contains(string(b), "the run queue is full"):
					refused++
				}
			default:
				break drain
			}
		}
	}
	if accepted != s.maxWaiting || accepted+refused != submitters {
		t.Errorf("got %d queued and %d refused of %d, want %d queued and the rest refused", accepted, refused, submitters, s.maxWaiting)
	}
	code, out := postRaw(t, ts, `{"lesson":"01-fixture","quiz":"path","answer":"yes"}`)
	if msg, _ := out["error"].(string); code != http.StatusTooManyRequests || !strings.Contains(msg, "the run queue is full") {
		t.Errorf("quiz with the line full: got %d %q, want 429 saying the queue is full", code, msg)
	}
}
