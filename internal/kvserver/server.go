// Package kvserver serves a kv engine (kvlab/engine) over RESP, the Redis
// protocol, so the same store can be measured in-process and across a
// socket, and beside a real redis-server with the same client
// (labserver bench -engine resp://HOST:PORT).
//
// Commands (commands.go): SET key value, GET key, DEL key [key ...],
// EXISTS key [key ...], MGET key [key ...], MSET key value [key value ...],
// MULTI, EXEC, DISCARD, PING [msg], ECHO msg, SELECT 0, INFO [section],
// CONFIG RESETSTAT, CONFIG GET save|appendonly|appendfsync, COMMAND
// [COUNT|LIST|INFO|DOCS], CLIENT ID|GETNAME|SETNAME|SETINFO, HELLO 2 (HELLO 3
// gets Redis's -NOPROTO: kvserver speaks RESP2), QUIT. Anything else is an
// error reply that names the command, as Redis words it. Enough for
// redis-cli, redis-benchmark, go-redis and redis-py.
//
// # Connections, pipelining and group commit
//
// Each connection has one goroutine and a session (session.go). It reads
// a command, then every further command already whole in its read buffer
// (a pipelining client sends many before reading a reply): a batch. The
// batch's reads run at once and see its earlier writes; its writes are
// collected and applied together, in order, by applyWrites (apply.go),
// and its replies held until then. Whenever no whole command is
// buffered, the batch is committed and every reply flushed before the
// goroutine waits for more bytes, so a reply never waits on the next
// command's arrival.
//
// Under -sync group the engine's one flusher shares an fdatasync among
// every Put waiting on it, whichever connection it came from: group
// commit across connections. applyWrites puts a batch's writes in flight
// together, so they wait on the same fdatasync too (a pipeline whose keys
// repeat goes as one engine.Batch, which keeps their order): a pipeline
// is a batch. Under the other policies they are applied one after the
// other: under always each SET still pays its own fdatasync.
//
// MULTI queues commands (+QUEUED) and EXEC runs them while no other
// connection reads or writes (Server.txMu), their writes applied as one
// engine.Batch: after a crash, all of them or none.
//
// # Hostile and slow clients
//
// A declared bulk length reserves nothing: buffers grow as bytes arrive
// (package resp). Server.MaxConns caps the connections (one more is told
// "-ERR max number of clients reached"), Server.IdleTimeout closes a
// connection that sends nothing or reads no reply for that long, and a
// batch holds at most maxHeld bytes of replies before it commits and
// sends them (plus one value, at most engine.MaxValueSize).
//
// # Server-side time
//
// The server times each SET, GET and DEL from the moment it starts
// executing to the moment its reply is ready (for a SET under always or
// group, that includes its fdatasync), and reports the figures in Redis 7's
// own formats, so one client reads them from kvserver and redis-server
// alike:
//
//	INFO commandstats   cmdstat_set:calls=N,usec=U,usec_per_call=M,...
//	INFO latencystats   latency_percentiles_usec_set:p50=...,p99=...,p99.9=...
//	CONFIG RESETSTAT    starts them again
//
// and in INFO persistence the engine's own counters: kv_sync (the policy),
// kv_fsyncs and kv_fsync_usec. The difference between what a client
// measures and what the server reports is the network, the protocol and
// the client's own scheduling. (A redis-server's figures do not include
// its appendfsync always fsync, which runs after the commands of an event
// loop iteration, before any reply is sent; kvserver's include it.)
package kvserver

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"kvlab/engine"
	"kvlab/internal/resp"
)

// Defaults of Server.MaxConns and Server.IdleTimeout, which labserver
// kvserver's -max-conns and -idle-timeout flags set.
const (
	DefaultMaxConns    = 1024
	DefaultIdleTimeout = 5 * time.Minute
)

// bufSize is the size of each connection's read and write buffers, as
// Redis's 16 KiB read chunk.
const bufSize = 16 << 10

// Server serves one engine.DB over RESP. It is safe for concurrent use.
type Server struct {
	db     *engine.DB
	policy engine.SyncPolicy
	stats  *cmdStats

	// MaxConns is the most connections served at once; one more is
	// answered "-ERR max number of clients reached" and closed, as Redis
	// does. IdleTimeout closes a connection that sends nothing, or reads
	// none of its replies, for that long. Set them before Serve.
	MaxConns    int
	IdleTimeout time.Duration

	nextID atomic.Int64 // CLIENT ID of the last connection

	// txMu keeps a transaction whole for other clients: EXEC holds it for
	// writing while it runs; every other read and apply holds it for
	// reading (session.get, session.commit).
	txMu sync.RWMutex

	mu     sync.Mutex // guards ln, conns and closed
	ln     net.Listener
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup // the connection goroutines
}

// New returns a server for db, which was opened with the sync policy
// syncText. The caller keeps ownership of db: Close does not close it,
// and nothing else may write to db while the server runs.
func New(db *engine.DB, syncText string) (*Server, error) {
	p, err := engine.ParseSync(syncText)
	if err != nil {
		return nil, err
	}
	return &Server{db: db, policy: p, stats: newCmdStats(), conns: map[net.Conn]struct{}{},
		MaxConns: DefaultMaxConns, IdleTimeout: DefaultIdleTimeout}, nil
}

// Serve accepts connections on ln until Close, serving each on its own
// goroutine. It returns nil after Close, else the accept error.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		ln.Close()
		return nil
	}
	s.ln = ln
	s.mu.Unlock()
	for {
		c, err := ln.Accept()
		if err != nil {
			s.mu.Lock()
			closed := s.closed
			s.mu.Unlock()
			if closed {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return fmt.Errorf("kvserver: accept: %w", err)
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			c.Close()
			return nil
		}
		if len(s.conns) >= s.MaxConns {
			s.mu.Unlock()
			c.SetWriteDeadline(time.Now().Add(time.Second))
			c.Write([]byte("-ERR max number of clients reached\r\n"))
			c.Close()
			continue
		}
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go s.serveConn(c)
	}
}

// Close stops accepting, closes every connection and waits for their
// goroutines. Commands in flight finish first (a Put is never abandoned
// half-way); their replies are lost with the connection.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	if s.ln != nil {
		s.ln.Close()
	}
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	return nil
}

// idleConn is a connection whose every read and write must make progress
// within timeout (0: no limit).
type idleConn struct {
	net.Conn
	timeout time.Duration
}

func (c idleConn) Read(p []byte) (int, error) {
	if c.timeout > 0 {
		c.SetReadDeadline(time.Now().Add(c.timeout))
	}
	return c.Conn.Read(p)
}

func (c idleConn) Write(p []byte) (int, error) {
	if c.timeout > 0 {
		c.SetWriteDeadline(time.Now().Add(c.timeout))
	}
	return c.Conn.Write(p)
}

// serveConn reads, executes and answers commands on c until the client
// leaves, idles past IdleTimeout or the server closes.
//
// It answers as soon as it can: whenever its read buffer holds no whole
// command, it commits the batch and flushes every reply before it waits
// for more bytes, so a reply never waits on the next command's arrival.
func (s *Server) serveConn(c net.Conn) {
	defer func() {
		c.Close()
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		s.wg.Done()
	}()
	ic := idleConn{c, s.IdleTimeout}
	r := bufio.NewReaderSize(ic, bufSize)
	w := bufio.NewWriterSize(ic, bufSize)
	ss := newSession(s, w)
	for {
		if !resp.HasCommand(r) {
			ss.commit()
			if w.Flush() != nil {
				return
			}
		} else if ss.full() {
			ss.commit()
		}
		cmd, err := resp.ReadCommand(r)
		if err != nil {
			if errors.Is(err, resp.ErrProtocol) {
				ss.errorf("ERR %v", err)
			}
			ss.commit()
			w.Flush()
			return
		}
		if ss.do(cmd) {
			ss.commit()
			w.Flush()
			return
		}
	}
}

// info returns the INFO text for section ("" or "all": every section).
func (s *Server) info(section string) string {
	var b bytes.Buffer
	all := section == "" || section == "all" || section == "everything" || section == "default"
	if all || section == "server" {
		b.WriteString("# Server\r\nkvserver:1\r\n\r\n")
	}
	if all || section == "clients" {
		s.mu.Lock()
		n := len(s.conns)
		s.mu.Unlock()
		fmt.Fprintf(&b, "# Clients\r\nconnected_clients:%d\r\nmaxclients:%d\r\n\r\n", n, s.MaxConns)
	}
	if all || section == "persistence" {
		st := s.db.Stats()
		kill, power := Loss(s.policy)
		fmt.Fprintf(&b, "# Persistence\r\naof_enabled:1\r\nkv_sync:%s\r\nkv_appendfsync:%s\r\nkv_kill_loses:%s\r\nkv_power_cut_loses:%s\r\nkv_fsyncs:%d\r\nkv_fsync_usec:%d\r\n\r\n",
			s.policy, appendfsync(s.policy), kill, power, st.Fsyncs, st.FsyncTime.Microseconds())
	}
	if all || section == "commandstats" {
		b.WriteString("# Commandstats\r\n")
		s.stats.commandstats(&b)
		b.WriteString("\r\n")
	}
	if all || section == "latencystats" {
		b.WriteString("# Latencystats\r\n")
		s.stats.latencystats(&b)
	}
	return b.String()
}

// Loss says what a process kill and a power cut can take of the writes
// kvserver acknowledged under policy p, with the engine's default write
// buffer (engine.DefaultWriteBuffer) and segment size
// (engine.DefaultSegmentSize), as labserver kvserver opens it.
func Loss(p engine.SyncPolicy) (kill, powerCut string) {
	buf := fmt.Sprintf("up to %d KiB of the newest acknowledged writes (the write buffer, not yet handed to the OS)", engine.DefaultWriteBuffer>>10)
	switch p.Mode {
	case engine.SyncAlways, engine.SyncGroup:
		return "nothing acknowledged", "nothing acknowledged (a SET is answered after an fdatasync covers it)"
	case engine.SyncBatch:
		return fmt.Sprintf("up to %d acknowledged writes (those since the last fdatasync, still in the write buffer)", p.N-1),
			fmt.Sprintf("up to %d acknowledged writes (those since the last fdatasync)", p.N-1)
	case engine.SyncPeriodic:
		return buf, fmt.Sprintf("up to %v of acknowledged writes (those since the last fdatasync)", p.Interval)
	}
	return buf, fmt.Sprintf("every acknowledged write since the last fdatasync, which comes only when a %d MiB segment fills", engine.DefaultSegmentSize>>20)
}
