// Package kvserver serves a kv engine (kvlab/engine) over RESP, the Redis
// protocol, so the same store can be measured in-process and across a
// socket, and beside a real redis-server with the same client
// (labserver bench -engine resp://HOST:PORT).
//
// Commands: PING [msg], SET key value, GET key, DEL key [key ...], INFO
// [section], CONFIG RESETSTAT, CONFIG GET param, SELECT 0, COMMAND (an empty
// reply, for redis-cli), QUIT. Anything else is an error reply that names
// the command, as Redis words it.
//
// # Connections, pipelining and group commit
//
// Each connection has one goroutine. It reads a command, then every
// further command already in its read buffer (a pipelining client sends
// many before reading a reply), executes them, writes all the replies and
// flushes once. Under -sync group the engine's one flusher shares an
// fdatasync among every Put waiting on it, whichever connection it came
// from: group commit across connections. Within one connection, a pipeline
// is executed as runs of commands on distinct keys, each run's commands at
// once, so its SETs wait on the same fdatasync too: a pipeline is a batch.
// (A command on a key that an earlier command of the run touched starts a
// new run, so a pipeline's effects are those of its commands in order.)
// Under the other policies a pipeline is executed in order, one command at
// a time: under always each SET still pays its own fdatasync.
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
	"io"
	"net"
	"strings"
	"sync"
	"time"

	"kvlab/engine"
	"kvlab/internal/resp"
)

// maxPipeline bounds the commands executed as one pipeline batch.
const maxPipeline = 1024

// Server serves one engine.DB over RESP. It is safe for concurrent use.
type Server struct {
	db     *engine.DB
	policy engine.SyncPolicy
	sync   string // the -sync text, as INFO reports it
	stats  *cmdStats

	mu     sync.Mutex // guards ln, conns and closed
	ln     net.Listener
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup // the connection goroutines
}

// New returns a server for db, which was opened with the sync policy
// syncText. The caller keeps ownership of db: Close does not close it.
func New(db *engine.DB, syncText string) (*Server, error) {
	p, err := engine.ParseSync(syncText)
	if err != nil {
		return nil, err
	}
	return &Server{db: db, policy: p, sync: syncText, stats: newCmdStats(), conns: map[net.Conn]struct{}{}}, nil
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
			return fmt.Errorf("kvserver: accept: %w", err)
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			c.Close()
			return nil
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

// serveConn reads, executes and answers pipelines on c until the client
// leaves or the server closes.
func (s *Server) serveConn(c net.Conn) {
	defer func() {
		c.Close()
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		s.wg.Done()
	}()
	r := bufio.NewReaderSize(c, 64<<10)
	w := bufio.NewWriterSize(c, 64<<10)
	var batch [][][]byte
	for {
		batch = batch[:0]
		cmd, err := resp.ReadCommand(r)
		for err == nil {
			batch = append(batch, cmd)
			if r.Buffered() == 0 || len(batch) == maxPipeline {
				break
			}
			cmd, err = resp.ReadCommand(r)
		}
		quit := s.execute(batch, w)
		if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
			if errors.Is(err, resp.ErrProtocol) {
				resp.WriteError(w, "ERR "+err.Error())
			}
			quit = true
		} else if err != nil {
			quit = true
		}
		if w.Flush() != nil || quit {
			return
		}
	}
}

// reply is one command's answer, written once the batch is done.
type reply func(w *bufio.Writer)

// execute runs a batch of commands and writes their replies in order. It
// reports whether the client asked to QUIT.
func (s *Server) execute(batch [][][]byte, w *bufio.Writer) (quit bool) {
	replies := make([]reply, len(batch))
	if s.policy.Mode == engine.SyncGroup && len(batch) > 1 {
		s.executeRuns(batch, replies)
	} else {
		for i, cmd := range batch {
			replies[i] = s.command(cmd)
		}
	}
	for i, rep := range replies {
		rep(w)
		if strings.EqualFold(string(batch[i][0]), "quit") {
			return true
		}
	}
	return false
}

// executeRuns executes batch as runs of commands on distinct keys, each
// run's commands concurrently, one run after another.
func (s *Server) executeRuns(batch [][][]byte, replies []reply) {
	touched := map[string]bool{}
	start := 0
	flush := func(end int) {
		var wg sync.WaitGroup
		for i := start; i < end; i++ {
			wg.Go(func() { replies[i] = s.command(batch[i]) })
		}
		wg.Wait()
		start = end
		clear(touched)
	}
	for i, cmd := range batch {
		keys := keysOf(cmd)
		if keys == nil { // not a key command: runs alone, in order
			flush(i)
			replies[i] = s.command(cmd)
			start = i + 1
			continue
		}
		for _, k := range keys {
			if touched[string(k)] {
				flush(i)
				break
			}
		}
		for _, k := range keys {
			touched[string(k)] = true
		}
	}
	flush(len(batch))
}

// keysOf returns the keys a SET, GET or DEL touches, nil for any other
// command (or a malformed one, which is answered on its own).
func keysOf(cmd [][]byte) [][]byte {
	switch {
	case len(cmd) == 3 && strings.EqualFold(string(cmd[0]), "set"),
		len(cmd) == 2 && strings.EqualFold(string(cmd[0]), "get"):
		return cmd[1:2]
	case len(cmd) >= 2 && strings.EqualFold(string(cmd[0]), "del"):
		return cmd[1:]
	}
	return nil
}

// ok and null are constant replies.
func ok(w *bufio.Writer)   { resp.WriteSimple(w, "OK") }
func null(w *bufio.Writer) { resp.WriteNull(w) }

func errorf(format string, args ...any) reply {
	msg := fmt.Sprintf(format, args...)
	return func(w *bufio.Writer) { resp.WriteError(w, msg) }
}

// command executes one command and returns its reply.
func (s *Server) command(cmd [][]byte) reply {
	name := strings.ToLower(string(cmd[0]))
	args := cmd[1:]
	switch name {
	case "ping":
		switch len(args) {
		case 0:
			return func(w *bufio.Writer) { resp.WriteSimple(w, "PONG") }
		case 1:
			return func(w *bufio.Writer) { resp.WriteBulk(w, args[0]) }
		}
	case "set":
		if len(args) == 2 {
			return s.timed("set", func() reply {
				if err := s.db.Put(args[0], args[1]); err != nil {
					return errorf("ERR %v", err)
				}
				return ok
			})
		}
		if len(args) > 2 {
			return errorf("ERR SET options are not supported by kvserver: SET key value only")
		}
	case "get":
		if len(args) == 1 {
			return s.timed("get", func() reply {
				v, err := s.db.Get(args[0])
				if errors.Is(err, engine.ErrNotFound) {
					return null
				}
				if err != nil {
					return errorf("ERR %v", err)
				}
				return func(w *bufio.Writer) { resp.WriteBulk(w, v) }
			})
		}
	case "del":
		if len(args) >= 1 {
			return s.timed("del", func() reply { return s.del(args) })
		}
	case "info":
		if len(args) <= 1 {
			section := ""
			if len(args) == 1 {
				section = strings.ToLower(string(args[0]))
			}
			text := s.info(section)
			return func(w *bufio.Writer) { resp.WriteBulk(w, []byte(text)) }
		}
	case "config":
		return s.config(args)
	case "select":
		if len(args) == 1 && string(args[0]) == "0" {
			return ok
		}
		return errorf("ERR kvserver has one database: SELECT 0 only")
	case "command":
		return func(w *bufio.Writer) { w.WriteString("*0\r\n") }
	case "quit":
		return ok
	default:
		return errorf("ERR unknown command '%s', with args beginning with: %s", cmd[0], quoteArgs(args))
	}
	return errorf("ERR wrong number of arguments for '%s' command", name)
}

// del deletes each key that exists and replies with how many did. (The
// engine's Delete writes a tombstone for a missing key too; DEL's count
// needs the lookup first.)
func (s *Server) del(keys [][]byte) reply {
	var n int64
	for _, k := range keys {
		_, err := s.db.Get(k)
		if errors.Is(err, engine.ErrNotFound) {
			continue
		}
		if err != nil {
			return errorf("ERR %v", err)
		}
		if err := s.db.Delete(k); err != nil {
			return errorf("ERR %v", err)
		}
		n++
	}
	return func(w *bufio.Writer) { resp.WriteInt(w, n) }
}

// timed runs one data command and records how long it took.
func (s *Server) timed(name string, run func() reply) reply {
	start := time.Now()
	rep := run()
	s.stats.record(name, time.Since(start))
	return rep
}

// config answers CONFIG RESETSTAT and CONFIG GET for the few parameters
// clients ask for (redis-benchmark asks for save and appendonly).
func (s *Server) config(args [][]byte) reply {
	if len(args) == 1 && strings.EqualFold(string(args[0]), "resetstat") {
		s.stats.reset()
		return ok
	}
	if len(args) == 2 && strings.EqualFold(string(args[0]), "get") {
		param := strings.ToLower(string(args[1]))
		var value string
		switch param {
		case "save":
			value = ""
		case "appendonly":
			value = "yes"
		case "appendfsync":
			value = s.sync // kv's policy name, not one of Redis's
		default:
			return func(w *bufio.Writer) { w.WriteString("*0\r\n") }
		}
		return func(w *bufio.Writer) {
			w.WriteString("*2\r\n")
			resp.WriteBulk(w, []byte(param))
			resp.WriteBulk(w, []byte(value))
		}
	}
	return errorf("ERR kvserver supports CONFIG RESETSTAT and CONFIG GET save|appendonly|appendfsync only")
}

// info returns the INFO text for section ("" or "all": every section).
func (s *Server) info(section string) string {
	var b bytes.Buffer
	all := section == "" || section == "all" || section == "everything" || section == "default"
	if all || section == "server" {
		b.WriteString("# Server\r\nkvserver:1\r\n\r\n")
	}
	if all || section == "persistence" {
		st := s.db.Stats()
		fmt.Fprintf(&b, "# Persistence\r\naof_enabled:1\r\nkv_sync:%s\r\nkv_fsyncs:%d\r\nkv_fsync_usec:%d\r\n\r\n",
			s.sync, st.Fsyncs, st.FsyncTime.Microseconds())
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

// quoteArgs words the start of a command's arguments as Redis does in
// its unknown-command error.
func quoteArgs(args [][]byte) string {
	var parts []string
	for i, a := range args {
		if i == 3 {
			break
		}
		if len(a) > 20 {
			a = a[:20]
		}
		parts = append(parts, "'"+string(a)+"'")
	}
	return strings.Join(parts, " ") + " "
}
