package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"kvlab/harness"
)

// BenchmarkLessonPageCached measures serving a lesson page after its first
// render (the cache hit every visitor but the first gets).
func BenchmarkLessonPageCached(b *testing.B) {
	s := newServer(b, nil)
	req := httptest.NewRequest("GET", "/lessons/01-fixture", nil)
	s.ServeHTTP(httptest.NewRecorder(), req)
	for b.Loop() {
		w := httptest.NewRecorder()
		s.ServeHTTP(w, req)
		if w.Code != 200 {
			b.Fatalf("got %d", w.Code)
		}
	}
}

// BenchmarkLessonPageUncached renders the page from Markdown every time,
// for comparison with the cached path.
func BenchmarkLessonPageUncached(b *testing.B) {
	s := newServer(b, nil)
	ls, _ := s.course.now()
	for b.Loop() {
		if _, err := s.course.renderLesson(ls[0], 0, ls); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWebsocket50Clients has 50 websocket clients each run a cell
// through the queue at once, and measures the delay from the moment the
// server hands a message (queued, started, progress, result, done) to a
// client's writer until that client has read it, on loopback. The runs
// use a stand-in for harness.Exec that sends five progress messages
// 200 µs apart, so the figure is the server's delivery, not the disk.
func BenchmarkWebsocket50Clients(b *testing.B) {
	const clients = 50
	result := json.RawMessage(`{"kind":"bench","engine":"null","ops":100,"latency":{"put":{"count":100,"p99_ns":90}}}`)
	exec := func(ctx context.Context, _ *harness.Spec, env harness.Env) (harness.Output, error) {
		for i := 1; i <= 5; i++ {
			time.Sleep(200 * time.Microsecond)
			env.Progress(harness.Progress{ElapsedSeconds: float64(i), Ops: int64(i * 20), OpsPerSec: 20, P50: 50, P99: 90})
		}
		return harness.Output{JSON: result, Head: harness.Head{Kind: "bench", Engines: []string{"null"}}}, nil
	}
	s := newServer(b, func(c *Config) { c.MaxQueuedPerClient = 2; c.exec = exec })
	var mu sync.Mutex
	sentAt := map[string][]time.Time{} // by run id, in send order
	s.sentHook = func(m []byte) {
		now := time.Now()
		var v struct {
			ID string `json:"id"`
		}
		json.Unmarshal(m, &v)
		mu.Lock()
		sentAt[v.ID] = append(sentAt[v.ID], now)
		mu.Unlock()
	}
	ts := startServer(b, s)
	conns := make([]*wsClient, clients)
	for i := range conns {
		conns[i] = dial(b, ts, "", nil)
	}
	var delays []time.Duration
	var msgs int
	round := 0
	for b.Loop() {
		round++
		var wg sync.WaitGroup
		got := make([][]time.Duration, clients)
		for i, c := range conns {
			id := fmt.Sprintf("r%d-c%d", round, i)
			wg.Add(1)
			go func() {
				defer wg.Done()
				c.run(id, "bench -engine null -ops 100")
				n := 0
				for {
					_, data, err := c.conn.ReadMessage()
					if err != nil {
						b.Error(err)
						return
					}
					now := time.Now()
					mu.Lock()
					at := sentAt[id][n]
					mu.Unlock()
					n++
					got[i] = append(got[i], now.Sub(at))
					if bytes.Contains(data, []byte(`"type":"done"`)) {
						return
					}
				}
			}()
		}
		wg.Wait()
		for _, g := range got {
			delays = append(delays, g...)
			msgs += len(g)
		}
	}
	slices.Sort(delays)
	if len(delays) > 0 {
		b.ReportMetric(float64(harness.Percentile(durations(delays), 50))/1e3, "p50-µs")
		b.ReportMetric(float64(harness.Percentile(durations(delays), 99))/1e3, "p99-µs")
		b.ReportMetric(float64(delays[len(delays)-1])/1e3, "max-µs")
		b.ReportMetric(float64(msgs)/float64(round), "msgs/round")
	}
}

func durations(d []time.Duration) []int64 {
	out := make([]int64, len(d))
	for i, x := range d {
		out[i] = int64(x)
	}
	return out
}
