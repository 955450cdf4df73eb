package peers

import (
	"context"
	"strings"
	"testing"
	"time"

	"kvlab/harness"
	"kvlab/harness/harnesstest"
	"kvlab/internal/silentport"
)

// shortTimeouts shortens dialTimeout and ioTimeout for one test.
func shortTimeouts(t *testing.T, d time.Duration) {
	t.Helper()
	oldDial, oldIO := dialTimeout, ioTimeout
	// The silent listeners accept at once: only a loaded machine makes a
	// loopback dial slow, so the dial keeps a bound a busy CI holds (a
	// 300 ms dial failed at load 40) while reads get the short one.
	dialTimeout, ioTimeout = max(d, 5*time.Second), d
	t.Cleanup(func() { dialTimeout, ioTimeout = oldDial, oldIO })
}

// silentURLs are the engines named by an address, pointed at addr.
func silentURLs(addr string) []string {
	return []string{"resp://" + addr, "resp://" + addr + "?conns=2", "postgres://kvlab@" + addr + "/kvlab"}
}

// A line on a port that accepts and never answers fails within the
// stated bound (connecting within dialTimeout, each reply within
// ioTimeout), with an error that names the address. Before connections
// had deadlines, the RESP client waited for its first reply for ever.
func TestSilentServerFailsWithinBound(t *testing.T) {
	shortTimeouts(t, 300*time.Millisecond)
	addr := silentAddr(t)
	for _, e := range silentURLs(addr) {
		t.Run(e, func(t *testing.T) {
			start := time.Now()
			_, err := harnesstest.Exec(context.Background(), "bench -engine "+e+" -ops 10", harness.Env{Dir: t.TempDir()})
			took := time.Since(start)
			if err == nil || !strings.Contains(err.Error(), addr) {
				t.Fatalf("error = %v, want one naming %s", err, addr)
			}
			// The bound is dialTimeout + ioTimeout (0.6 s here); a loaded
			// machine gets generous slack, a wait for ever does not.
			if took > 10*time.Second {
				t.Errorf("the line failed after %v, want within about %v", took, dialTimeout+ioTimeout)
			}
			t.Logf("failed after %v: %v", took, err)
		})
	}
}

// When the run's context ends (a cancel, or the cell's budget), a store
// waiting on a silent server gives up at once, long before its own
// timeouts, and says that the run was stopped.
func TestSilentServerStopsWithTheRun(t *testing.T) {
	addr := silentAddr(t)
	if ioTimeout < 5*time.Second || dialTimeout < 5*time.Second {
		t.Fatalf("the timeouts are %v and %v; this test needs the long defaults", dialTimeout, ioTimeout)
	}
	for _, e := range silentURLs(addr) {
		t.Run(e, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			start := time.Now()
			_, err := harnesstest.Exec(ctx, "bench -engine "+e+" -ops 10", harness.Env{Dir: t.TempDir()})
			took := time.Since(start)
			if err == nil {
				t.Fatal("the line succeeded against a silent server")
			}
			// Its own timeouts would take 5 s or more; the run's end takes
			// milliseconds. 3 s is slack for a loaded machine.
			if took > 3*time.Second {
				t.Errorf("the line ended %v after it started, its context 300 ms; want it to end with the context", took)
			}
			t.Logf("ended after %v: %v", took, err)
		})
	}
}

// A store whose server answers and then goes silent mid-run also ends
// with the run: the context closes the connections its workers wait on.
func TestNetGuardAbortClosesConnections(t *testing.T) {
	addr := silentAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	g := newNetGuard(ctx, "resp://"+addr, addr)
	defer g.release()
	c, err := g.dial()
	if err != nil {
		t.Fatal(err)
	}
	read := make(chan error, 1)
	go func() {
		_, err := c.Read(make([]byte, 1))
		read <- err
	}()
	time.Sleep(50 * time.Millisecond)
	cancel()
	select {
	case err := <-read:
		if err == nil {
			t.Fatal("Read returned no error after the run's context ended")
		}
		if w := g.wrap(err, ""); !strings.Contains(w.Error(), addr) || !strings.Contains(w.Error(), "cancelled or ran out of time") {
			t.Errorf("wrapped error = %v, want it to name %s and say the run stopped", w, addr)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Read still waiting 5 s after the run's context ended")
	}
	if _, err := g.dial(); err == nil {
		t.Error("dial after the run's context ended succeeded")
	}
}

// A deadline set by the connection's user (pgx sets one when its context
// is cancelled, and clears it after) applies at once, and the next Read
// is bounded by ioTimeout again: the cached deadline is forgotten.
func TestDeadlineConnAfterOwnDeadline(t *testing.T) {
	shortTimeouts(t, 300*time.Millisecond)
	addr := silentAddr(t)
	g := newNetGuard(context.Background(), "resp://"+addr, addr)
	defer g.release()
	c, err := g.dial()
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 1)
	c.SetReadDeadline(time.Now())
	start := time.Now()
	if _, err := c.Read(buf); err == nil {
		t.Fatal("Read after SetReadDeadline(now) returned no error")
	}
	c.SetReadDeadline(time.Time{}) // cleared, as pgx does after a cancel
	if _, err := c.Read(buf); err == nil {
		t.Fatal("Read on a silent server returned no error")
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("two Reads on a silent server took %v, want about ioTimeout (%v)", took, ioTimeout)
	}
}

// silentAddr is a loopback address that accepts and never answers.
func silentAddr(t *testing.T) string {
	addr, _ := silentport.Listen(t)
	return addr
}
