package server

import (
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"
)

// A room's server faces many clients, some of them scripts. limits holds
// what bounds one client against the others: runs counted per remote
// address (one student opening many sockets cannot fill the queue), a
// cap on open connections, the HTTP timeouts, and a log of refusals that
// names the client and the reason once a minute, so an instructor can
// see an abuser without the log flooding.
//
// The queue itself is shown to everyone as counts only: a queued message
// says how many runs are ahead, never whose.
type limits struct {
	mu        sync.Mutex           // guards the fields below
	runs      map[string]int       // runs queued or running, by remote host
	conns     map[string]int       // open connections, by remote host
	open      int                  // open connections in all
	refusedAt map[string]time.Time // the last refusal logged, by remote host
	muted     map[string]int       // refusals not logged since then, by remote host

	// Timeouts of the plain HTTP routes: reading a whole request, and
	// writing a reply. The websocket sets its own deadlines after the
	// upgrade, and a run: quiz lifts the write deadline while it waits
	// for its measurement.
	readTimeout, writeTimeout time.Duration
}

func newLimits() limits {
	return limits{runs: map[string]int{}, conns: map[string]int{}, refusedAt: map[string]time.Time{}, muted: map[string]int{},
		readTimeout: 30 * time.Second, writeTimeout: 2 * time.Minute}
}

// remoteHost is the host part of the request's remote address.
func remoteHost(r *http.Request) string { return hostOf(r.RemoteAddr) }

func hostOf(addr string) string {
	h, _, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	return h
}

// addrFullError refuses a run when its address already has its most.
type addrFullError struct {
	addr string
	n    int
}

func (e *addrFullError) Error() string {
	return fmt.Sprintf("%s already has %d runs queued or running, the most one address may have (-max-queued-per-address): wait for them to finish", e.addr, e.n)
}

// holdAddr counts one more run for addr, or refuses it when addr has
// MaxQueuedPerAddress already. release gives the place back; it is safe
// to call once.
func (s *Server) holdAddr(addr string) (release func(), err error) {
	s.limits.mu.Lock()
	defer s.limits.mu.Unlock()
	if n := s.limits.runs[addr]; n >= s.cfg.MaxQueuedPerAddress {
		return nil, &addrFullError{addr: addr, n: n}
	}
	s.limits.runs[addr]++
	var once sync.Once
	return func() {
		once.Do(func() {
			s.limits.mu.Lock()
			defer s.limits.mu.Unlock()
			if s.limits.runs[addr]--; s.limits.runs[addr] <= 0 {
				delete(s.limits.runs, addr)
			}
		})
	}, nil
}

// refused logs that addr was refused and why: the first refusal of an
// address in a minute is logged, later ones are counted and their number
// is told with the next line.
func (s *Server) refused(addr, why string) {
	s.limits.mu.Lock()
	now := time.Now()
	if last, ok := s.limits.refusedAt[addr]; ok && now.Sub(last) < time.Minute {
		s.limits.muted[addr]++
		s.limits.mu.Unlock()
		return
	}
	muted := s.limits.muted[addr]
	s.limits.refusedAt[addr], s.limits.muted[addr] = now, 0
	for a, t := range s.limits.refusedAt { // forget addresses quiet for a while
		if now.Sub(t) > 10*time.Minute {
			delete(s.limits.refusedAt, a)
			delete(s.limits.muted, a)
		}
	}
	s.limits.mu.Unlock()
	more := ""
	if muted > 0 {
		more = fmt.Sprintf(" (and %d more refusals of this address in the minute before)", muted)
	}
	s.log.Printf("refused %s: %s%s", addr, why, more)
}

// HTTPServer is the http.Server that serves s: read and write timeouts
// for the plain routes (a body that trickles in is cut off), a header
// timeout, an idle timeout.
func (s *Server) HTTPServer() *http.Server {
	return &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: s.limits.readTimeout,
		WriteTimeout: s.limits.writeTimeout, IdleTimeout: 2 * time.Minute}
}

// LimitListener caps ln's open connections: at most max in all and
// perAddr from one remote host. A connection over either cap gets a 503
// reply saying so and is closed; the refusal is logged.
func (s *Server) LimitListener(ln net.Listener, max, perAddr int) net.Listener {
	return &limitListener{Listener: ln, s: s, max: max, perAddr: perAddr}
}

type limitListener struct {
	net.Listener
	s            *Server
	max, perAddr int
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		addr := hostOf(c.RemoteAddr().String())
		r := &l.s.limits
		r.mu.Lock()
		why := ""
		switch {
		case r.open >= l.max:
			why = fmt.Sprintf("%d connections are open, the most the server keeps (-max-conns)", r.open)
		case r.conns[addr] >= l.perAddr:
			why = fmt.Sprintf("%d connections from this address are open, the most one address may have (-max-conns-per-address)", r.conns[addr])
		default:
			r.open++
			r.conns[addr]++
		}
		r.mu.Unlock()
		if why != "" {
			l.s.refused(addr, why)
			go refuseConn(c, why)
			continue
		}
		return &countedConn{Conn: c, r: r, addr: addr}, nil
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
	r    *limits
	addr string
	once sync.Once
}

func (c *countedConn) Close() error {
	c.once.Do(func() {
		c.r.mu.Lock()
		c.r.open--
		if c.r.conns[c.addr]--; c.r.conns[c.addr] <= 0 {
			delete(c.r.conns, c.addr)
		}
		c.r.mu.Unlock()
	})
	return c.Conn.Close()
}
