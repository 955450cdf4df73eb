package peers

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// Connections to servers: bounded waits, and an end with the run.
//
// A store that reaches a server over the network waits on another
// process, which may be slow, stuck, or a port that accepts and never
// answers. None of that may hold a run past its budget, nor the one run
// queue of a server that every reader shares. So every connection a
// network store makes (resp.go's RESP client, postgres.go's pgx
// connections) is made by a netGuard:
//
//   - connecting gives up after dialTimeout (5 s), or when the run's
//     context is done;
//   - every read and every write has a deadline, ioTimeout (10 s) from
//     when it starts: a server that stops answering fails the call, and the
//     error names its address;
//   - when the run's context is done (cancelled, or out of its
//     -max-cell-time budget), every connection is closed at once, so that
//     a call waiting on the server returns within milliseconds.
//
// So a line on a silent port fails within dialTimeout + ioTimeout (15 s)
// on the command line, and within the budget in a server.

// dialTimeout bounds connecting to a server (TCP, and for PostgreSQL the
// whole startup exchange). A variable so that tests can shorten it.
var dialTimeout = 5 * time.Second

// ioTimeout bounds each read and each write on a server's connection. A
// variable so that tests can shorten it.
var ioTimeout = 10 * time.Second

// netGuard makes one store's connections to one address and closes them
// all when the run's context is done. Its lifetime is that context's (see
// STYLE: an object whose lifetime is a context): newNetGuard ties it to
// the run's, and release unties it when the store closes. It is safe for
// concurrent use.
type netGuard struct {
	name string // the -engine value, for errors
	addr string // HOST:PORT, for errors
	ctx  context.Context
	stop func() bool // unregisters abort from ctx

	mu      sync.Mutex            // guards conns and aborted
	conns   map[net.Conn]struct{} // open connections
	aborted bool                  // ctx is done: every connection was closed
}

// newNetGuard returns a guard for the store named name, connecting to
// addr, whose connections are closed when ctx is done.
func newNetGuard(ctx context.Context, name, addr string) *netGuard {
	g := &netGuard{name: name, addr: addr, ctx: ctx, conns: map[net.Conn]struct{}{}}
	g.stop = context.AfterFunc(ctx, g.abort)
	return g
}

// dial connects to g's address.
func (g *netGuard) dial() (net.Conn, error) { return g.dialContext(g.ctx, "tcp", g.addr) }

// dialContext connects to addr on network ("tcp" only) within dialTimeout,
// and returns the connection with its reads and writes bounded by
// ioTimeout. It has pgx's DialFunc signature.
func (g *netGuard) dialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	if network != "tcp" && network != "tcp4" && network != "tcp6" {
		return nil, fmt.Errorf("-engine %s: %s: only TCP connections are made", g.name, network)
	}
	d := net.Dialer{Timeout: dialTimeout}
	c, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, g.wrap(err, addr)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.aborted {
		c.Close()
		return nil, g.wrap(net.ErrClosed, addr)
	}
	dc := &deadlineConn{Conn: c}
	g.conns[dc] = struct{}{}
	return dc, nil
}

// forget drops c from the connections abort closes (c is being closed).
func (g *netGuard) forget(c net.Conn) {
	g.mu.Lock()
	delete(g.conns, c)
	g.mu.Unlock()
}

// abort closes every connection: the run's context is done.
func (g *netGuard) abort() {
	g.mu.Lock()
	g.aborted = true
	conns := g.conns
	g.conns = map[net.Conn]struct{}{}
	g.mu.Unlock()
	for c := range conns {
		c.Close()
	}
}

// release unties g from the run's context and closes whatever is still
// open: the store is closing.
func (g *netGuard) release() {
	g.stop()
	g.mu.Lock()
	conns := g.conns
	g.conns = map[net.Conn]struct{}{}
	g.mu.Unlock()
	for c := range conns {
		c.Close()
	}
}

// wrap words err, from a connection to addr, for the reader: it names the
// address, and says why when the run was stopped or the server went
// silent.
func (g *netGuard) wrap(err error, addr string) error {
	if addr == "" {
		addr = g.addr
	}
	switch {
	case g.ctx.Err() != nil:
		return fmt.Errorf("-engine %s: stopped waiting for %s: the run was cancelled or ran out of time (%w)", g.name, addr, context.Cause(g.ctx))
	case errors.Is(err, os.ErrDeadlineExceeded):
		return fmt.Errorf("-engine %s: %s did not answer within %v (%w)", g.name, addr, ioTimeout, err)
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("-engine %s: could not connect to %s within %v (%w)", g.name, addr, dialTimeout, err)
	}
	return fmt.Errorf("-engine %s: %s: %w", g.name, addr, err)
}

// deadlineConn is a connection whose every Read and Write must make
// progress within ioTimeout. Moving a deadline costs more than a
// loopback round trip can spare (about 1.5 µs a command against kvserver,
// measured at load 20 on this course's VM), so a deadline is moved only
// when less than nine tenths of ioTimeout is left of it: each Read and
// Write is bounded by 0.9 to 1 times ioTimeout from its start. It is safe
// for one reader and one writer at a time, as a net.Conn is, and for a
// caller that sets deadlines of its own meanwhile (pgx does, on a
// cancelled context): those are applied, and the next call sets ours.
type deadlineConn struct {
	net.Conn
	readBy, writeBy atomic.Int64 // the deadlines set, in Unix ns; 0 when another was set since
}

// renewBy is how much of ioTimeout must be left of a deadline for a call
// to keep it.
func renewBy() time.Duration { return ioTimeout - ioTimeout/10 }

func (c *deadlineConn) Read(p []byte) (int, error) {
	now := time.Now()
	if c.readBy.Load()-now.UnixNano() < int64(renewBy()) {
		by := now.Add(ioTimeout)
		c.Conn.SetReadDeadline(by)
		c.readBy.Store(by.UnixNano())
	}
	return c.Conn.Read(p)
}

func (c *deadlineConn) Write(p []byte) (int, error) {
	now := time.Now()
	if c.writeBy.Load()-now.UnixNano() < int64(renewBy()) {
		by := now.Add(ioTimeout)
		c.Conn.SetWriteDeadline(by)
		c.writeBy.Store(by.UnixNano())
	}
	return c.Conn.Write(p)
}

func (c *deadlineConn) SetDeadline(t time.Time) error {
	c.readBy.Store(0)
	c.writeBy.Store(0)
	return c.Conn.SetDeadline(t)
}

func (c *deadlineConn) SetReadDeadline(t time.Time) error {
	c.readBy.Store(0)
	return c.Conn.SetReadDeadline(t)
}

func (c *deadlineConn) SetWriteDeadline(t time.Time) error {
	c.writeBy.Store(0)
	return c.Conn.SetWriteDeadline(t)
}
