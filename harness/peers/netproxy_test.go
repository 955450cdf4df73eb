package peers

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"kvlab/harness"
)

// fakeClock is a delayClock whose time moves only when told: Now
// advances by step at every call (a chunk arriving that much after the
// one before), and SleepUntil records its target and jumps there.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	step   time.Duration
	sleeps []time.Time
	fail   error // SleepUntil returns it instead of sleeping, when set
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(c.step)
	return c.now
}

func (c *fakeClock) SleepUntil(ctx context.Context, t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fail != nil {
		return c.fail
	}
	c.sleeps = append(c.sleeps, t)
	return nil
}

// seq returns the values in turn, as a delayer's rnd.
func seq(vs ...float64) func() float64 {
	i := 0
	return func() float64 { v := vs[i%len(vs)]; i++; return v }
}

func TestDelayerDue(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ms := time.Millisecond
	for _, tt := range []struct {
		name          string
		delay, jitter time.Duration
		rnd           float64
		last          time.Time
		want          time.Time
	}{
		{"fixed delay", 2 * ms, 0, 0.9, time.Time{}, t0.Add(2 * ms)},
		{"jitter at its low end", 2 * ms, ms / 2, 0, time.Time{}, t0.Add(1500 * time.Microsecond)},
		{"jitter in the middle", 2 * ms, ms / 2, 0.5, time.Time{}, t0.Add(2 * ms)},
		{"jitter never makes a wait negative", 0, ms, 0, time.Time{}, t0},
		{"a chunk never overtakes the one before", 2 * ms, ms / 2, 0, t0.Add(3 * ms), t0.Add(3 * ms)},
	} {
		d := &delayer{delay: tt.delay, jitter: tt.jitter, rnd: seq(tt.rnd)}
		if got := d.due(t0, tt.last); !got.Equal(tt.want) {
			t.Errorf("%s: due = +%v, want +%v", tt.name, got.Sub(t0), tt.want.Sub(t0))
		}
	}
}

// chunkReader returns one chunk per Read, then io.EOF.
type chunkReader struct{ chunks []string }

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.chunks) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.chunks[0])
	r.chunks = r.chunks[1:]
	return n, nil
}

// TestDelayerPipe copies three chunks arriving 1 ms apart through a
// 10 ms ± 5 ms delayer on a fake clock: each leaves at its arrival plus
// its draw, except the third, whose short draw would overtake the second.
func TestDelayerPipe(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ms := time.Millisecond
	clk := &fakeClock{now: t0, step: ms}
	d := &delayer{delay: 10 * ms, jitter: 5 * ms, rnd: seq(0.5, 1, 0), clock: clk}
	var dst bytes.Buffer
	err := d.pipe(context.Background(), &dst, &chunkReader{chunks: []string{"ab", "cd", "ef"}}, func() { t.Error("abort called on a clean copy") })
	if err != nil {
		t.Fatalf("pipe: %v", err)
	}
	if dst.String() != "abcdef" {
		t.Errorf("copied %q, want %q", dst.String(), "abcdef")
	}
	want := []time.Duration{11 * ms, 17 * ms, 17 * ms} // 1+10, 2+10+5, max(3+10-5, 17)
	if len(clk.sleeps) != len(want) {
		t.Fatalf("%d sleeps, want %d", len(clk.sleeps), len(want))
	}
	for i, w := range want {
		if got := clk.sleeps[i].Sub(t0); got != w {
			t.Errorf("chunk %d left at +%v, want +%v", i, got, w)
		}
	}
}

// TestDelayerPipeStops checks that a pipe whose wait is cut short (the
// proxy closing) calls abort and returns the error.
func TestDelayerPipeStops(t *testing.T) {
	clk := &fakeClock{now: time.Unix(1000, 0), fail: context.Canceled}
	d := &delayer{delay: time.Millisecond, rnd: seq(0), clock: clk}
	aborted := false
	err := d.pipe(context.Background(), io.Discard, &chunkReader{chunks: []string{"ab", "cd"}}, func() { aborted = true })
	if !errors.Is(err, context.Canceled) || !aborted {
		t.Errorf("pipe = %v, aborted %v; want context.Canceled and abort called", err, aborted)
	}
}

// TestProxyForwards runs bytes both ways through a real proxy to an echo
// server, checks the half-close reaches the far side, and that Close
// ends the connections it still holds.
func TestProxyForwards(t *testing.T) {
	echo, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer echo.Close()
	go func() {
		for {
			c, err := echo.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(c, c); c.Close() }()
		}
	}()
	px, err := startProxy("", echo.Addr().String(), newDelayer(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", px.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(30 * time.Second)) // a hung proxy fails, not hangs
	msg := bytes.Repeat([]byte("kvlab "), 20000)    // larger than one chunk
	go func() { c.Write(msg); c.(*net.TCPConn).CloseWrite() }()
	got, err := io.ReadAll(c) // ends only if the half-close went through and came back
	if err != nil || !bytes.Equal(got, msg) {
		t.Fatalf("echoed %d bytes (%v), want the %d sent", len(got), err, len(msg))
	}
	c2, err := net.Dial("tcp", px.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	c2.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := c2.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 1)
	if _, err := io.ReadFull(c2, b); err != nil {
		t.Fatal(err)
	}
	px.Close() // returns only once every goroutine of the proxy ended
	if n, err := c2.Read(b); err == nil {
		t.Errorf("read %d bytes from a connection of a closed proxy, want EOF", n)
	}
}

// TestProbeRTT measures the round trip through a 5 ms proxy: at least
// 10 ms (a timer never fires early), by 50 samples.
func TestProbeRTT(t *testing.T) {
	rep, err := probeRTT(context.Background(), harness.NetOptions{Delay: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if rep.RTTSamples != rttProbes || rep.RTTP50Ns < int64(10*time.Millisecond) || rep.RTTP99Ns < rep.RTTP50Ns {
		t.Errorf("probeRTT = %+v, want %d samples, p50 >= 10ms <= p99", rep, rttProbes)
	}
}

// The real clock never lets a chunk leave early, and a wait far longer
// than timerSlack ends when the proxy closes.
func TestWallClockSleepUntil(t *testing.T) {
	for _, d := range []time.Duration{0, 300 * time.Microsecond, 2500 * time.Microsecond} {
		at := time.Now().Add(d)
		if err := (wallClock{}).SleepUntil(context.Background(), at); err != nil || time.Now().Before(at) {
			t.Errorf("SleepUntil(now+%v): %v, returned %v early", d, err, at.Sub(time.Now()))
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(10*time.Millisecond, cancel)
	at := time.Now().Add(10 * time.Minute)
	if err := (wallClock{}).SleepUntil(ctx, at); !errors.Is(err, context.Canceled) || !time.Now().Before(at) {
		t.Errorf("a 10-minute wait cancelled: %v, want context.Canceled before it ends", err)
	}
}

// BenchmarkSleepUntil is how late a wait of 1.3 ms (a one-region delay
// less the time a chunk spent reaching the proxy) ends on a Go timer
// alone and on wallClock (a timer, then nanosleep for the last stretch):
// late_us_p50 and late_us_p90, compared in the same run.
func BenchmarkSleepUntil(b *testing.B) {
	const d = 1300 * time.Microsecond
	timerOnly := func(ctx context.Context, t time.Time) error {
		tm := time.NewTimer(time.Until(t))
		defer tm.Stop()
		<-tm.C
		return nil
	}
	for _, c := range []struct {
		name  string
		sleep func(context.Context, time.Time) error
	}{{"timer", timerOnly}, {"wallClock", wallClock{}.SleepUntil}} {
		b.Run(c.name, func(b *testing.B) {
			late := make([]int64, 0, b.N)
			for b.Loop() {
				at := time.Now().Add(d)
				c.sleep(context.Background(), at)
				late = append(late, int64(time.Since(at)))
			}
			slices.Sort(late)
			b.ReportMetric(float64(late[len(late)/2])/1e3, "late_us_p50")
			b.ReportMetric(float64(late[len(late)*9/10])/1e3, "late_us_p90")
		})
	}
}
