package server

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"kvlab/harness"
	"kvlab/internal/server/run"
)

// holdDisk makes every run block until it is cancelled, so whatever is
// submitted after the first run has to wait.
func holdDisk(c *Config) {
	c.exec = func(ctx context.Context, _ *harness.Spec, env harness.Env) (harness.Output, error) {
		<-ctx.Done()
		return harness.Output{}, ctx.Err()
	}
}

// gateCtx holds the first Done call (context.WithCancel in run's Owner
// makes it) until every submitter has made it, so all of them check and
// reach the queue together.
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
	// Every submitter comes from one address: not the cap tested here.
	const maxWaiting = 5
	s := newServer(t, func(c *Config) { c.MaxQueuedPerAddress = 2 * 300; c.maxWaiting = maxWaiting; holdDisk(c) })
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
		// Each from its own address: the per-address cap is not what is tested.
		c := &client{s: s, out: make(chan []byte, outBuffer)}
		svc := run.NewService(&gateCtx{Context: ctx, arrived: &arrived}, s.runConfig())
		clients[i] = c
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			c.runs = svc.Owner(c, fmt.Sprint("client-", i), "", false)
			c.runs.Run(run.Msg{Type: "run", ID: "r", Cell: "bench -engine null -ops 100"})
		}()
	}
	close(start)
	wg.Wait()
	if got := queueLen(s); got > maxWaiting {
		t.Errorf("got %d runs waiting, want at most %d", got, maxWaiting)
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
	if accepted != maxWaiting || accepted+refused != submitters {
		t.Errorf("got %d queued and %d refused of %d, want %d queued and the rest refused", accepted, refused, submitters, maxWaiting)
	}
	code, out := postRaw(t, ts, `{"lesson":"01-fixture","quiz":"path","answer":"yes"}`)
	if msg, _ := out["error"].(string); code != http.StatusTooManyRequests || !strings.Contains(msg, "the run queue is full") {
		t.Errorf("quiz with the line full: got %d %q, want 429 saying the queue is full", code, msg)
	}
}

// A run: quiz's page can ask for its place in the queue by the ticket it
// sent with the request; the place counts like the websocket's queued.
func TestQuizQueuePlace(t *testing.T) {
	s := newServer(t, holdDisk)
	ts := startServer(t, s)
	cell := dial(t, ts, "", nil)
	cell.run("hold", "bench -engine null -ops 100")
	cell.until("hold", "started")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{}, 2)
	for _, ticket := range []string{"t1", "t2"} {
		body := `{"lesson":"01-fixture","quiz":"path","answer":"yes","ticket":"` + ticket + `"}`
		req, _ := http.NewRequestWithContext(ctx, "POST", ts.URL+"/api/quiz", strings.NewReader(body))
		go func() {
			if r, err := http.DefaultClient.Do(req); err == nil {
				r.Body.Close()
			}
			done <- struct{}{}
		}()
		waitFor(t, ticket+" to queue", func() bool { _, _, ok := s.runs.PlaceOf(ticket); return ok })
	}
	place := func(ticket string) (int, string) {
		t.Helper()
		r, err := http.Get(ts.URL + "/api/quiz/queue?ticket=" + ticket)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Body.Close()
		b, _ := io.ReadAll(r.Body)
		return r.StatusCode, strings.TrimSpace(string(b))
	}
	tests := []struct {
		ticket string
		code   int
		body   string
	}{
		{"t1", 200, `{"position":1}`},
		{"t2", 200, `{"position":2}`},
		{"nope", 404, `{"error":"no quiz measurement with this ticket is queued or running"}`},
		{"", 400, `{"error":"ticket: must be 1 to 128 characters"}`},
	}
	for _, tt := range tests {
		if code, body := place(tt.ticket); code != tt.code || body != tt.body {
			t.Errorf("ticket %q: got %d %s, want %d %s", tt.ticket, code, body, tt.code, tt.body)
		}
	}
	cell.send(map[string]string{"type": "cancel", "id": "hold"})
	waitFor(t, "t1 to hold the disk", func() bool { _, running, _ := s.runs.PlaceOf("t1"); return running })
	if code, body := place("t1"); code != 200 || body != `{"position":0,"running":true}` {
		t.Errorf("t1 running: got %d %s, want 200 {\"position\":0,\"running\":true}", code, body)
	}
	if code, body := place("t2"); code != 200 || body != `{"position":1}` {
		t.Errorf("t2 after the line moved: got %d %s, want 200 {\"position\":1}", code, body)
	}
	cancel()
	<-done
	<-done
}
