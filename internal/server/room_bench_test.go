package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"kvlab/harness"
	"kvlab/internal/classroom"
)

// fanoutRig is a room on a real loopback server with followers that
// read everything, one follower that never reads, and a presenter whose
// runs use a stand-in for harness.Exec (progress events and a result of
// a real run's size), so what is measured is the fan-out, not the disk.
type fanoutRig struct {
	tb        testing.TB
	s         *Server
	ts        *httptest.Server
	room      *classroom.Room
	code      string
	presenter *wsClient
	followers int
	stalled   *websocket.Conn

	mu   sync.Mutex // guards sent
	sent map[string]time.Time
	fs   []*rigFollower
}

// rigFollower is what one reading follower received. Each has its own
// lock, so the followers do not queue on one another to note a message.
type rigFollower struct {
	mu    sync.Mutex // guards at
	at    map[string]time.Time
	dones atomic.Int64 // done messages received
}

// smallSendBuffers gives every accepted connection a small kernel send
// buffer, so a follower that stops reading stalls its writer quickly.
type smallSendBuffers struct{ net.Listener }

func (l smallSendBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetWriteBuffer(16 << 10)
	}
	return c, err
}

// newFanoutRig starts the rig; each run sends progress events every
// pace, as a run reporting once a second would, only faster.
func newFanoutRig(tb testing.TB, followers, progress int, pace time.Duration) *fanoutRig {
	tb.Helper()
	var timeline strings.Builder
	for i := range 60 {
		fmt.Fprintf(&timeline, `{"elapsed_seconds":%d,"ops":%d,"ops_per_sec":1000,"p50_ns":50,"p99_ns":90},`, i, i*1000)
	}
	result := json.RawMessage(`{"kind":"bench","engine":"null","ops":100,"latency":{"put":{"count":100,"p99_ns":90}},"timeline":[` + strings.TrimSuffix(timeline.String(), ",") + `]}`)
	exec := func(ctx context.Context, _ *harness.Spec, env harness.Env) (harness.Output, error) {
		for i := 1; i <= progress; i++ {
			time.Sleep(pace)
			env.Progress(harness.Progress{ElapsedSeconds: float64(i), Ops: int64(i * 20), OpsPerSec: 20, P50: 50, P99: 90})
		}
		return harness.Output{JSON: result, Head: harness.Head{Kind: "bench", Engines: []string{"null"}}}, nil
	}
	s := newServer(tb, func(c *Config) { c.MaxQueuedPerClient = 2; c.exec = exec })
	r := &fanoutRig{tb: tb, s: s, followers: followers, sent: map[string]time.Time{}}
	s.rooms.SentHook = func(b []byte) {
		now := time.Now()
		r.mu.Lock()
		r.sent[string(b)] = now
		r.mu.Unlock()
	}
	ts := httptest.NewUnstartedServer(s)
	ts.Listener = smallSendBuffers{ts.Listener}
	ts.Start()
	tb.Cleanup(ts.Close)
	tb.Cleanup(func() { s.Close() })
	r.ts = ts
	r.code = openRoom(tb, ts)
	r.room = s.rooms.Open(r.code)
	u := "ws" + strings.TrimPrefix(ts.URL, "http") + "/room/" + r.code + "/ws"
	for range followers {
		c, _, err := websocket.DefaultDialer.Dial(u, nil)
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { c.Close() })
		f := &rigFollower{at: map[string]time.Time{}}
		r.fs = append(r.fs, f)
		go f.follow(c)
	}
	small := &websocket.Dialer{NetDialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if tc, ok := c.(*net.TCPConn); ok {
			tc.SetReadBuffer(4 << 10)
		}
		return c, err
	}}
	st, _, err := small.Dial(u, nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { st.Close() })
	r.stalled = st
	r.presenter = dial(tb, ts, "", nil)
	r.wait("every follower joined", func() bool { return r.room.Hub.Count() == followers+1 })
	r.fillStalled()
	return r
}

// fillStalled broadcasts 2 KB fillers, in bursts the reading followers
// absorb, until the stalled follower's queue (its kernel buffers full) is
// a few messages short of the cap, so that the first runs measured drop
// it.
func (r *fanoutRig) fillStalled() {
	hub := r.room.Hub
	pad := strings.Repeat("f", 2000)
	for i := 0; hub.Backlog() < 240; {
		var last []byte
		for range 16 {
			last = []byte(fmt.Sprintf(`{"type":"filler","n":%d,"pad":"%s"}`, i, pad))
			hub.Broadcast(last)
			i++
		}
		r.wait("every follower read the fillers", func() bool { return r.everyoneHas(string(last)) })
	}
	r.mu.Lock()
	clear(r.sent)
	r.mu.Unlock()
	for _, f := range r.fs {
		f.mu.Lock()
		clear(f.at)
		f.mu.Unlock()
	}
}

// everyoneHas reports whether every reading follower received k.
func (r *fanoutRig) everyoneHas(k string) bool {
	for _, f := range r.fs {
		f.mu.Lock()
		_, ok := f.at[k]
		f.mu.Unlock()
		if !ok {
			return false
		}
	}
	return true
}

// follow reads one follower's socket until it closes, noting when each
// message arrived.
func (f *rigFollower) follow(c *websocket.Conn) {
	for {
		_, b, err := c.ReadMessage()
		if err != nil {
			return
		}
		now := time.Now()
		f.mu.Lock()
		f.at[string(b)] = now
		f.mu.Unlock()
		if bytes.Contains(b, []byte(`"type":"done"`)) {
			f.dones.Add(1)
		}
	}
}

func (r *fanoutRig) wait(what string, cond func() bool) {
	r.tb.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			r.tb.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// round runs one cell in the room (the n-th), waits until every reading
// follower has its done, checks that each has every message of the run,
// and returns each message's delay from the presenter's side sending it
// to the last follower receiving it.
func (r *fanoutRig) round(n int) []time.Duration {
	r.tb.Helper()
	id := fmt.Sprintf("c%d", n)
	r.presenter.send(map[string]string{"type": "run", "id": id, "room": r.code, "cell": "bench -engine null -ops 100"})
	r.presenter.until(id, "done")
	r.wait("every follower has the run's done", func() bool {
		for _, f := range r.fs {
			if f.dones.Load() < int64(n+1) {
				return false
			}
		}
		return true
	})
	tag := `"id":"` + id + `"`
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []time.Duration
	for k, at := range r.sent {
		if !strings.Contains(k, tag) {
			continue
		}
		var last time.Time
		for i, f := range r.fs {
			f.mu.Lock()
			got, ok := f.at[k]
			delete(f.at, k)
			f.mu.Unlock()
			if !ok {
				r.tb.Fatalf("follower %d did not get %.80s", i, k)
			}
			if got.After(last) {
				last = got
			}
		}
		out = append(out, last.Sub(at))
		delete(r.sent, k)
	}
	return out
}

// TestRoomFanout: every message of a room's runs reaches every reading
// follower; the follower that never reads is closed and forgotten; the
// bytes queued for followers stay within the per-follower cap.
func TestRoomFanout(t *testing.T) {
	r := newFanoutRig(t, 20, 10, time.Millisecond)
	hub := r.room.Hub
	var maxQueued int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
				maxQueued = max(maxQueued, hub.QueuedBytes())
				time.Sleep(100 * time.Microsecond)
			}
		}
	}()
	msgs, rounds := 0, 0
	for i := 0; hub.Dropped() == 0; i++ {
		if i == 100 {
			t.Fatal("the stalled follower was not dropped after 100 runs")
		}
		msgs += len(r.round(i))
		rounds++
	}
	msgs += len(r.round(rounds))
	close(stop)
	wg.Wait()
	r.wait("the stalled follower is forgotten", func() bool { return hub.Count() == r.followers })
	if limit := int64(r.followers+1) << 20; maxQueued > limit {
		t.Errorf("queued bytes reached %d, above %d followers' caps", maxQueued, r.followers+1)
	}
	if msgs == 0 {
		t.Error("no message was delivered")
	}
}

// BenchmarkRoomFanout streams a presenter's runs to 500 follower
// websockets on loopback, one more follower never reading, and reports
// the delay from the presenter's side sending each message to the last
// follower receiving it (p50, p99, max), how many followers were dropped
// (want 1: the stalled one, whose queue the rig fills to a few messages
// short of the cap before the timer starts) and the heap's growth over
// the runs. A run is queued, started, 10 progress events 20 ms apart (a
// real run sends one a second), a result of 5 KB and done.
func BenchmarkRoomFanout(b *testing.B) {
	r := newFanoutRig(b, 500, 10, 20*time.Millisecond)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var delays []time.Duration
	i := 0
	for b.Loop() {
		delays = append(delays, r.round(i)...)
		i++
	}
	b.StopTimer()
	runtime.GC()
	runtime.ReadMemStats(&after)
	slices.Sort(delays)
	if len(delays) > 0 {
		d := durations(delays)
		b.ReportMetric(float64(harness.Percentile(d, 50))/1e6, "p50-ms")
		b.ReportMetric(float64(harness.Percentile(d, 99))/1e6, "p99-ms")
		b.ReportMetric(float64(delays[len(delays)-1])/1e6, "max-ms")
	}
	b.ReportMetric(float64(r.room.Hub.Dropped()), "dropped")
	b.ReportMetric((float64(after.HeapInuse)-float64(before.HeapInuse))/(1<<20), "heap-growth-MB")
	b.ReportMetric(float64(r.room.Hub.QueuedBytes())/(1<<10), "queued-KiB")
}
