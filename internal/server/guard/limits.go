package guard

import (
	"fmt"
	"net"
	"sync"
	"time"
)

// A room's server faces many clients, some of them scripts. What bounds
// one client against the others: runs counted per remote address (one
// student opening many sockets cannot fill the queue), a cap on open
// connections, and a log of refusals that names the client and the
// reason once a minute.

// AddrFullError refuses a run when its address already has its most.
type AddrFullError struct {
	Addr string // the remote host
	N    int    // its runs queued or running
}

func (e *AddrFullError) Error() string {
	return fmt.Sprintf("%s already has %d runs queued or running, the most one address may have (-max-queued-per-address): wait for them to finish", e.Addr, e.N)
}

// HoldAddr counts one more run for addr, or refuses it with an
// *AddrFullError when addr has MaxQueuedPerAddress already. release gives
// the place back; it is safe to call more than once.
func (g *Guard) HoldAddr(addr string) (release func(), err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if n := g.runs[addr]; n >= g.cfg.MaxQueuedPerAddress {
		return nil, &AddrFullError{Addr: addr, N: n}
	}
	g.runs[addr]++
	var once sync.Once
	return func() {
		once.Do(func() {
			g.mu.Lock()
			defer g.mu.Unlock()
			if g.runs[addr]--; g.runs[addr] <= 0 {
				delete(g.runs, addr)
			}
		})
	}, nil
}

// Refused logs that addr was refused and why: the first refusal of an
// address in a minute is logged, later ones are counted and their number
// is told with the next line.
func (g *Guard) Refused(addr, why string) {
	g.mu.Lock()
	now := time.Now()
	if last, ok := g.refusedAt[addr]; ok && now.Sub(last) < time.Minute {
		g.muted[addr]++
		g.mu.Unlock()
		return
	}
	muted := g.muted[addr]
	g.refusedAt[addr], g.muted[addr] = now, 0
	for a, t := range g.refusedAt { // forget addresses quiet for a while
		if now.Sub(t) > 10*time.Minute {
			delete(g.refusedAt, a)
			delete(g.muted, a)
		}
	}
	g.mu.Unlock()
	more := ""
	if muted > 0 {
		more = fmt.Sprintf(" (and %d more refusals of this address in the minute before)", muted)
	}
	g.log.Printf("refused %s: %s%s", addr, why, more)
}

// LimitListener caps ln's open connections: at most max in all and
// perAddr from one remote host. A connection over either cap gets a 503
// reply saying so and is closed; the refusal is logged.
func (g *Guard) LimitListener(ln net.Listener, max, perAddr int) net.Listener {
	return &limitListener{Listener: ln, g: g, max: max, perAddr: perAddr}
}

type limitListener struct {
	net.Listener
	g            *Guard
	max, perAddr int
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		addr := HostOf(c.RemoteAddr().String())
		g := l.g
		g.mu.Lock()
		why := ""
		switch {
		case g.open >= l.max:
			why = fmt.Sprintf("%d connections are open, the most the server keeps (-max-conns)", g.open)
		case g.conns[addr] >= l.perAddr:
			why = fmt.Sprintf("%d connections from this address are open, the most one address may have (-max-conns-per-address)", g.conns[addr])
		default:
			g.open++
			g.conns[addr]++
		}
		g.mu.Unlock()
		if why != "" {
			g.Refused(addr, why)
			go refuseConn(c, why)
			continue
		}
		return &countedConn{Conn: c, g: g, addr: addr}, nil
	}
}

// refuseConn answers 503 with the reason and closes c, without waiting
// long for a client that does not read.
func refuseConn(c net.Conn, why string) {
	c.SetDeadline(time.Now().Add(2 * time.Second))
	body := "labserver: " + why + "; try again later\n"
	fmt.Fprintf(c, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\nRetry-After: 5\r\n\r\n%s", len(body), body)
	c.Close()
}

// countedConn gives its place back when closed.
type countedConn struct {
	net.Conn
	g    *Guard
	addr string
	once sync.Once
}

func (c *countedConn) Close() error {
	c.once.Do(func() {
		c.g.mu.Lock()
		c.g.open--
		if c.g.conns[c.addr]--; c.g.conns[c.addr] <= 0 {
			delete(c.g.conns, c.addr)
		}
		c.g.mu.Unlock()
	})
	return c.Conn.Close()
}
