package peers

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"slices"
	"sync"
	"time"

	"kvlab/harness"
)

// A network the reader controls: -net-delay, -net-jitter, -net.
//
// The replicated engines' servers all run on this machine and talk across
// loopback, where a round trip takes tens of microseconds. To see what a
// real network does to a replicated commit, each server is reached through
// a netProxy: a TCP proxy on a loopback port of its own that forwards
// every connection to the server, holding each chunk of bytes it reads
// for the delay (plus a uniform draw in ±jitter) before writing it on, in
// each direction. A chunk is whatever one read returned; chunks of one
// direction of one connection leave in the order they came (a later chunk
// whose draw is shorter waits for the one before it), because TCP never
// reorders bytes. A round trip through one proxy therefore costs about
// twice the delay.
//
// The proxy runs inside labserver, so its goroutines share the machine's
// cores with the servers: on a loaded machine its timers fire late, and
// the round trip the result reports (measured through a proxy just before
// the run, probeRTT) says by how much.

// delayClock is the time a delayer reads and waits on: the real clock in
// a run, a fake one in tests.
type delayClock interface {
	Now() time.Time
	// SleepUntil returns at t, or early with ctx's error.
	SleepUntil(ctx context.Context, t time.Time) error
}

// wallClock is the real delayClock.
type wallClock struct{}

func (wallClock) Now() time.Time { return time.Now() }

// SleepUntil waits on a timer for all but the last timerSlack before t,
// where it can be cancelled, and sleeps the rest in the kernel
// (preciseSleep). A Go timer alone fires up to a millisecond late when
// the process has nothing else to do: the runtime then waits for the
// timer in epoll, whose timeout counts whole milliseconds (a wait of
// 1.3 ms took 2.2 ms here, one of 0.5 ms 1.1 ms), which is the whole of a
// one-region delay; nanosleep wakes within about 0.1 ms.
// BenchmarkSleepUntil measures both.
func (wallClock) SleepUntil(ctx context.Context, t time.Time) error {
	if d := time.Until(t) - timerSlack; d > 0 {
		tm := time.NewTimer(d)
		defer tm.Stop()
		select {
		case <-tm.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if d := time.Until(t); d > 0 {
		preciseSleep(d)
	}
	return nil
}

// timerSlack is the part of a wait SleepUntil leaves to preciseSleep:
// more than a timer's lateness, so the timer never fires after t.
const timerSlack = 2 * time.Millisecond

// delayer decides when each chunk may leave and copies one direction of
// a connection. It is safe for concurrent use when rnd is.
type delayer struct {
	delay, jitter time.Duration
	rnd           func() float64 // uniform in [0, 1)
	clock         delayClock
}

// newDelayer returns a delayer on the real clock.
func newDelayer(delay, jitter time.Duration) *delayer {
	return &delayer{delay: delay, jitter: jitter, rnd: rand.Float64, clock: wallClock{}}
}

// due is when a chunk that arrived at now may leave, given that the
// chunk before it in the same direction leaves at last.
func (d *delayer) due(now, last time.Time) time.Time {
	wait := d.delay
	if d.jitter > 0 {
		wait += time.Duration((2*d.rnd() - 1) * float64(d.jitter))
	}
	t := now.Add(max(wait, 0))
	if t.Before(last) {
		t = last // bytes of one stream never overtake each other
	}
	return t
}

// chunkSize is the most one read of the proxy takes.
const chunkSize = 32 << 10

// pipe copies src to dst, each chunk leaving when due says. It returns
// when src ends (having half-closed dst when it can) or when writing
// fails or ctx is done (then it calls abort, which must make src's reads
// fail, so that its reader goroutine ends before pipe returns).
func (d *delayer) pipe(ctx context.Context, dst io.Writer, src io.Reader, abort func()) error {
	type chunk struct {
		b   []byte
		due time.Time
	}
	ch := make(chan chunk, 256)
	var readErr error
	go func() {
		defer close(ch)
		var last time.Time
		for {
			buf := make([]byte, chunkSize)
			n, err := src.Read(buf)
			if n > 0 {
				last = d.due(d.clock.Now(), last)
				select {
				case ch <- chunk{buf[:n], last}:
				case <-ctx.Done():
					return
				}
			}
			if err != nil {
				if !errors.Is(err, io.EOF) {
					readErr = err
				}
				return
			}
		}
	}()
	fail := func(err error) error {
		abort()
		for range ch { // wait for the reader
		}
		return err
	}
	for c := range ch {
		if err := d.clock.SleepUntil(ctx, c.due); err != nil {
			return fail(err)
		}
		if _, err := dst.Write(c.b); err != nil {
			return fail(err)
		}
	}
	if cw, ok := dst.(interface{ CloseWrite() error }); ok && readErr == nil {
		cw.CloseWrite()
	}
	return readErr // written by the reader before it closed ch
}

// netProxy forwards the connections it accepts on a loopback port to
// target through a delayer each way. It is safe for concurrent use; Close
// stops it and waits for its goroutines.
type netProxy struct {
	ln     net.Listener
	target string
	d      *delayer
	// ctx is the proxy's lifetime, cancelled by Close (an object whose
	// lifetime is a context, as STYLE.md allows).
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup // the accept loop and every connection's goroutines

	mu    sync.Mutex // guards conns
	conns map[net.Conn]struct{}
}

// proxyDialTimeout bounds the proxy's dial of its target.
const proxyDialTimeout = 5 * time.Second

// startProxy listens on a free loopback port (or addr, when not "") and
// forwards to target.
func startProxy(addr, target string, d *delayer) (*netProxy, error) {
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("net proxy for %s: %w", target, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &netProxy{ln: ln, target: target, d: d, ctx: ctx, cancel: cancel, conns: map[net.Conn]struct{}{}}
	p.wg.Go(p.accept)
	return p, nil
}

// Addr is the proxy's host:port.
func (p *netProxy) Addr() string { return p.ln.Addr().String() }

func (p *netProxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return // Close closed the listener
		}
		if !p.track(c) {
			c.Close()
			return
		}
		p.wg.Go(func() { p.serve(c) })
	}
}

// track remembers c for Close; false once the proxy is closing.
func (p *netProxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ctx.Err() != nil {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *netProxy) untrack(cs ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range cs {
		delete(p.conns, c)
		c.Close()
	}
}

// serve forwards one accepted connection.
func (p *netProxy) serve(in net.Conn) {
	var dialer net.Dialer
	ctx, cancel := context.WithTimeout(p.ctx, proxyDialTimeout)
	out, err := dialer.DialContext(ctx, "tcp", p.target)
	cancel()
	if err != nil {
		p.untrack(in)
		return
	}
	if !p.track(out) {
		out.Close()
		p.untrack(in)
		return
	}
	ctx, cancel = context.WithCancel(p.ctx)
	defer cancel()
	abort := func() { cancel(); in.Close(); out.Close() }
	var wg sync.WaitGroup
	wg.Go(func() { p.d.pipe(ctx, out, in, abort) })
	wg.Go(func() { p.d.pipe(ctx, in, out, abort) })
	wg.Wait()
	p.untrack(in, out)
}

// Close stops accepting, closes every connection and waits for the
// proxy's goroutines.
func (p *netProxy) Close() error {
	p.mu.Lock()
	p.cancel()
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	err := p.ln.Close()
	p.wg.Wait()
	return err
}

// rttProbes is how many round trips probeRTT times.
const rttProbes = 50

// probeRTT measures the round trip of a one-byte message through a proxy
// with the delayer's settings to a loopback echo server and back: what a
// server's request and its reply cost on the emulated network, on this
// machine as loaded as it is.
func probeRTT(ctx context.Context, nopts harness.NetOptions) (*harness.NetReport, error) {
	rep := &harness.NetReport{Preset: nopts.Preset, DelayNs: int64(nopts.Delay), JitterNs: int64(nopts.Jitter), Client: nopts.Client}
	echo, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	var wg sync.WaitGroup
	defer wg.Wait() // after echo.Close, which ends a wait in Accept
	defer echo.Close()
	wg.Go(func() {
		c, err := echo.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		io.Copy(c, c)
	})
	px, err := startProxy("", echo.Addr().String(), newDelayer(nopts.Delay, nopts.Jitter))
	if err != nil {
		return nil, err
	}
	defer px.Close()
	var dialer net.Dialer
	c, err := dialer.DialContext(ctx, "tcp", px.Addr())
	if err != nil {
		return nil, fmt.Errorf("net proxy: measuring the round trip: %w", err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Duration(rttProbes)*(2*(nopts.Delay+nopts.Jitter)+time.Second) + 10*time.Second))
	rtts := make([]int64, 0, rttProbes)
	b := []byte{1}
	for range rttProbes {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		start := time.Now()
		if _, err := c.Write(b); err != nil {
			return nil, fmt.Errorf("net proxy: measuring the round trip: %w", err)
		}
		if _, err := io.ReadFull(c, b); err != nil {
			return nil, fmt.Errorf("net proxy: measuring the round trip: %w", err)
		}
		rtts = append(rtts, time.Since(start).Nanoseconds())
	}
	slices.Sort(rtts)
	rep.RTTSamples = len(rtts)
	rep.RTTP50Ns = harness.Percentile(rtts, 50)
	rep.RTTP99Ns = harness.Percentile(rtts, 99)
	return rep, nil
}
