package peers

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"kvlab/engine"
	"kvlab/harness"
	"kvlab/internal/resp"
)

// respMaxConns bounds ?conns=N.
const respMaxConns = 1024

// openRESPScheme is the harness.SchemeFunc for -engine resp://HOST:PORT
// and resp://HOST:PORT?conns=N: the address is checked when the line is
// parsed; the server is reached when the run opens the store, and left
// when the run's context is done (netconn.go).
func openRESPScheme(name string) (harness.ContextOpenFunc, error) {
	addr, conns, err := parseRESPURL(name)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, dir, syncText string) (harness.Store, error) {
		return dialRESP(ctx, name, addr, conns, syncText)
	}, nil
}

// parseRESPURL reads resp://HOST:PORT[?conns=N].
func parseRESPURL(name string) (addr string, conns int, err error) {
	bad := func(why string) error {
		return fmt.Errorf("-engine %s: %s; allowed: resp://HOST:PORT, or resp://HOST:PORT?conns=N to pipeline every client over N connections (N 1..%d)", name, why, respMaxConns)
	}
	u, err := url.Parse(name)
	if err != nil {
		return "", 0, bad(err.Error())
	}
	if u.Scheme != "resp" || u.User != nil || (u.Path != "" && u.Path != "/") || u.Fragment != "" {
		return "", 0, bad("not a resp://HOST:PORT address")
	}
	host, port, err := net.SplitHostPort(u.Host)
	if err != nil || host == "" {
		return "", 0, bad("the address needs a host and a port")
	}
	if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
		return "", 0, bad("port " + port + " is not between 1 and 65535")
	}
	q := u.Query()
	for k := range q {
		if k != "conns" {
			return "", 0, bad("unknown parameter " + k)
		}
	}
	if v := q.Get("conns"); v != "" {
		conns, err = strconv.Atoi(v)
		if err != nil || conns < 1 || conns > respMaxConns {
			return "", 0, bad("conns=" + v + " is not between 1 and " + strconv.Itoa(respMaxConns))
		}
	}
	return u.Host, conns, nil
}

// dialRESP connects to the server at addr, checks that it runs the -sync
// policy the line names, and returns the store: one connection per
// concurrent caller (conns 0), or every caller pipelined over conns
// connections.
//
// A client cannot change how a server syncs, so the policy is the
// server's, and the result's sync field must say what it is: dialRESP
// asks the server (INFO persistence; a redis-server also CONFIG GET
// appendfsync) and refuses a line whose -sync does not match, naming the
// one that does. kvserver reports its policy by name (kv_sync); a
// redis-server's appendfsync maps as -engine redis maps it (redis.go):
// always to always or group, everysec to periodic:1s, no to none.
//
// Every connection is bounded and ends with ctx (netGuard).
func dialRESP(ctx context.Context, name, addr string, conns int, syncText string) (harness.Store, error) {
	want, err := engine.ParseSync(syncText)
	if err != nil {
		return nil, fmt.Errorf("resp: %w", err)
	}
	s := &respStore{name: name, addr: addr, guard: newNetGuard(ctx, name, addr)}
	if conns > 0 {
		s.mux = make([]*muxConn, conns)
		for i := range s.mux {
			c, err := s.dial()
			if err != nil {
				s.Close()
				return nil, err
			}
			s.mux[i] = newMuxConn(c)
		}
	}
	info, err := s.info("persistence")
	if err != nil {
		s.Close()
		return nil, err
	}
	if server, ok := info["kv_sync"]; ok {
		have, err := engine.ParseSync(server)
		if err != nil || have != want {
			s.Close()
			return nil, fmt.Errorf("%w: -engine %s runs kvserver -sync %s, and a client cannot change it: run this line with -sync %s, or restart kvserver with -sync %s",
				ErrUnsupportedSync, name, server, server, syncText)
		}
		return &kvserverStore{s}, nil
	}
	if info["aof_enabled"] != "1" {
		s.Close()
		return nil, fmt.Errorf("%w: -engine %s has appendonly no: it logs no write at all (at most a snapshot now and then), which no -sync policy describes; start it with --appendonly yes",
			ErrUnsupportedSync, name)
	}
	fsync, err := s.configGet("appendfsync")
	if err != nil {
		s.Close()
		return nil, err
	}
	if ok, policies := redisPolicyMatches(fsync, want); !ok {
		s.Close()
		return nil, fmt.Errorf("%w: -engine %s runs appendfsync %s, which is -sync %s here, and a client cannot change it: run this line with -sync %s, or restart the server with the appendfsync that -sync %s maps to (%s)",
			ErrUnsupportedSync, name, fsync, policies, policies, syncText, redisSyncMapping)
	}
	return s, nil
}

var (
	_ harness.Store         = (*respStore)(nil)
	_ harness.Pipeliner     = (*respStore)(nil)
	_ harness.ServerTimer   = (*respStore)(nil)
	_ harness.StatsReporter = (*kvserverStore)(nil)
)

// respStore drives a RESP server with SET, GET and DEL. It is safe for
// concurrent use.
type respStore struct {
	name  string // the -engine value, for errors
	addr  string
	guard *netGuard // makes every connection; closes them when the run ends

	// mux, when not nil, are the connections every caller pipelines over
	// (?conns=N), chosen round robin; next counts the choices.
	mux  []*muxConn
	next atomic.Uint64

	idle idleList[*syncConn] // without mux: connections no caller is using
}

// dial opens one connection.
func (s *respStore) dial() (net.Conn, error) {
	c, err := s.guard.dial()
	if err != nil {
		if s.guard.ctx.Err() != nil {
			return nil, fmt.Errorf("resp: %w", err)
		}
		return nil, fmt.Errorf("resp: %w (is the server running? labserver kvserver -addr %s, or a redis-server)", err, s.addr)
	}
	return c, nil
}

// drop closes a connection that failed: its stream may be mid-reply, so it
// is never reused.
func (s *respStore) drop(c net.Conn) {
	s.guard.forget(c)
	c.Close()
}

// do sends one command and returns its reply, through a pipelined
// connection or one the caller has to itself.
func (s *respStore) do(args ...[]byte) (resp.Reply, error) {
	if s.mux != nil {
		rep, err := s.mux[s.next.Add(1)%uint64(len(s.mux))].do(args)
		if err != nil {
			err = s.guard.wrap(err, "")
		}
		return rep, err
	}
	c, err := s.take()
	if err != nil {
		return resp.Reply{}, err
	}
	rep, err := c.do(args)
	if err != nil {
		s.drop(c.conn)
		return rep, s.guard.wrap(err, "")
	}
	s.give(c)
	return rep, nil
}

// take returns an idle connection, dialling one when there is none.
func (s *respStore) take() (*syncConn, error) {
	if c, ok := s.idle.take(); ok {
		return c, nil
	}
	c, err := s.dial()
	if err != nil {
		return nil, err
	}
	return &syncConn{conn: c, r: bufio.NewReader(c), w: bufio.NewWriter(c)}, nil
}

// give puts c back for the next caller.
func (s *respStore) give(c *syncConn) {
	if !s.idle.give(c) {
		c.conn.Close()
	}
}

// Put stores value under key (SET).
func (s *respStore) Put(key, value []byte) error {
	rep, err := s.do([]byte("SET"), key, value)
	if err == nil {
		err = rep.Err()
	}
	return err
}

// Get returns the value stored under key (GET; a null reply is a miss).
func (s *respStore) Get(key []byte) ([]byte, bool, error) {
	rep, err := s.do([]byte("GET"), key)
	if err == nil {
		err = rep.Err()
	}
	if err != nil {
		return nil, false, err
	}
	if rep.Null {
		return nil, false, nil
	}
	return rep.Str, true, nil
}

// Delete removes key (DEL).
func (s *respStore) Delete(key []byte) error {
	rep, err := s.do([]byte("DEL"), key)
	if err == nil {
		err = rep.Err()
	}
	return err
}

// Close closes every connection. The server keeps its data.
func (s *respStore) Close() error {
	for _, c := range s.idle.close() {
		c.conn.Close()
	}
	for _, m := range s.mux {
		if m != nil {
			m.close()
		}
	}
	s.guard.release()
	return nil
}

// The data commands' names, made once so sending one allocates nothing.
var (
	cmdSet = []byte("SET")
	cmdGet = []byte("GET")
	cmdDel = []byte("DEL")
)

// Pipeline sends every op of batch on one connection the caller has to
// itself, with one flush, and then reads the replies in order, calling
// replied as each arrives (harness.Pipeliner). The connection is an idle
// one, or a new one, as for a single command, so T pipelining clients hold
// T connections, each with up to len(batch) commands in flight: what
// redis-benchmark -c T -P N does.
//
// With ?conns=N the connections are already shared and pipelined by the
// store itself; a batch on top of that is refused.
func (s *respStore) Pipeline(batch []harness.PipeOp, replied func(i int, found bool)) error {
	if s.mux != nil {
		return fmt.Errorf("resp: -engine %s: ?conns=N already pipelines every client over shared connections, and -pipeline N gives each client its own connection with N requests at a time on it: use one or the other", s.name)
	}
	c, err := s.take()
	if err != nil {
		return err
	}
	for _, op := range batch {
		switch op.Kind {
		case harness.OpPut:
			resp.WriteCommand(c.w, cmdSet, op.Key, op.Value)
		case harness.OpGet:
			resp.WriteCommand(c.w, cmdGet, op.Key)
		case harness.OpDelete:
			resp.WriteCommand(c.w, cmdDel, op.Key)
		}
	}
	if err := c.w.Flush(); err != nil {
		s.drop(c.conn)
		return fmt.Errorf("resp: %w", s.guard.wrap(err, ""))
	}
	var first error
	for i, op := range batch {
		rep, err := resp.ReadReply(c.r)
		if err != nil {
			s.drop(c.conn) // mid-stream: never reuse it
			return fmt.Errorf("resp: reply %d of %d: %w", i+1, len(batch), s.guard.wrap(err, ""))
		}
		if err := rep.Err(); err != nil {
			if first == nil {
				first = err
			}
			continue
		}
		replied(i, op.Kind == harness.OpGet && !rep.Null)
	}
	s.give(c)
	return first
}

// info runs INFO section and returns its key:value lines.
func (s *respStore) info(section string) (map[string]string, error) {
	rep, err := s.do([]byte("INFO"), []byte(section))
	if err == nil {
		err = rep.Err()
	}
	if err != nil {
		return nil, fmt.Errorf("resp: INFO %s: %w", section, err)
	}
	m := map[string]string{}
	for _, line := range strings.Split(string(rep.Str), "\n") {
		k, v, ok := strings.Cut(strings.TrimRight(line, "\r"), ":")
		if ok && !strings.HasPrefix(k, "#") {
			m[k] = v
		}
	}
	return m, nil
}

// configGet returns one CONFIG GET parameter's value.
func (s *respStore) configGet(param string) (string, error) {
	rep, err := s.do([]byte("CONFIG"), []byte("GET"), []byte(param))
	if err == nil {
		err = rep.Err()
	}
	if err == nil && len(rep.Elems) != 2 {
		err = fmt.Errorf("reply has %d elements, want 2", len(rep.Elems))
	}
	if err != nil {
		return "", fmt.Errorf("resp: CONFIG GET %s: %w", param, err)
	}
	return string(rep.Elems[1].Str), nil
}

// ResetServerTimes starts the server's command statistics afresh
// (CONFIG RESETSTAT).
func (s *respStore) ResetServerTimes() error {
	rep, err := s.do([]byte("CONFIG"), []byte("RESETSTAT"))
	if err == nil {
		err = rep.Err()
	}
	return err
}

// respOps maps the server's command names to the harness's op kinds.
var respOps = map[string]string{"set": "put", "get": "get", "del": "delete"}

// ServerTimes reads the server's own timing of SET, GET and DEL since
// the reset: calls and mean from INFO commandstats, p50, p99 and p99.9
// from INFO latencystats (Redis 7 and kvserver; an older Redis has only
// the mean, and the percentiles are then 0).
func (s *respStore) ServerTimes() (map[string]*harness.ServerLatency, string, error) {
	stats, err := s.info("commandstats")
	if err != nil {
		return nil, "", err
	}
	lat, err := s.info("latencystats")
	if err != nil {
		return nil, "", err
	}
	out := map[string]*harness.ServerLatency{}
	for cmd, kind := range respOps {
		fields := infoFields(stats["cmdstat_"+cmd])
		calls, _ := strconv.ParseInt(fields["calls"], 10, 64)
		if calls == 0 {
			continue
		}
		sl := &harness.ServerLatency{Count: calls}
		usec, _ := strconv.ParseFloat(fields["usec_per_call"], 64)
		sl.MeanNs = usec * 1e3
		pct := infoFields(lat["latency_percentiles_usec_"+cmd])
		for key, dst := range map[string]*int64{"p50": &sl.P50Ns, "p99": &sl.P99Ns, "p99.9": &sl.P999Ns} {
			us, _ := strconv.ParseFloat(pct[key], 64)
			*dst = int64(us * 1e3)
		}
		out[kind] = sl
	}
	return out, "INFO commandstats and latencystats", nil
}

// infoFields splits an INFO value like "calls=3,usec=9" into its fields.
func infoFields(v string) map[string]string {
	m := map[string]string{}
	for _, f := range strings.Split(v, ",") {
		if k, val, ok := strings.Cut(f, "="); ok {
			m[k] = val
		}
	}
	return m
}

// kvserverStore is a respStore whose server is kvserver, which also
// reports the engine's own fdatasync count and time (INFO persistence),
// so the result's fsyncs are the server's.
type kvserverStore struct{ *respStore }

// StoreStats reads kv_fsyncs and kv_fsync_usec. A failed read reports
// zeros; the run's own commands then fail too and say why.
func (s *kvserverStore) StoreStats() harness.StoreStats {
	info, err := s.info("persistence")
	if err != nil {
		return harness.StoreStats{}
	}
	n, _ := strconv.ParseInt(info["kv_fsyncs"], 10, 64)
	us, _ := strconv.ParseInt(info["kv_fsync_usec"], 10, 64)
	return harness.StoreStats{Fsyncs: n, FsyncTime: time.Duration(us) * time.Microsecond}
}

// syncConn is a connection one caller uses at a time: write a command,
// flush, read the reply.
type syncConn struct {
	conn net.Conn
	r    *bufio.Reader
	w    *bufio.Writer
}

// do sends one command and reads its reply. The connection's deadlines
// (netGuard) bound both.
func (c *syncConn) do(args [][]byte) (resp.Reply, error) {
	resp.WriteCommand(c.w, args...)
	if err := c.w.Flush(); err != nil {
		return resp.Reply{}, err
	}
	return resp.ReadReply(c.r)
}

// muxConn is one connection shared by many callers, pipelined: a writer
// goroutine sends every command waiting for it and flushes once, a reader
// goroutine hands each reply to the caller whose command came first
// (RESP answers in order). With T callers over N connections, up to T/N
// commands are in flight on each.
type muxConn struct {
	conn    net.Conn
	reqs    chan muxReq      // callers -> writer
	waiting chan chan muxRep // writer -> reader, in the order sent
	done    chan struct{}    // closed by close
	wg      sync.WaitGroup   // writer and reader

	errMu sync.Mutex // guards err
	err   error      // the connection's first failure; every later call gets it
}

type muxReq struct {
	args  [][]byte
	reply chan muxRep
}

type muxRep struct {
	rep resp.Reply
	err error
}

// muxDepth bounds the commands in flight on one connection.
const muxDepth = 4096

func newMuxConn(c net.Conn) *muxConn {
	m := &muxConn{conn: c, reqs: make(chan muxReq), waiting: make(chan chan muxRep, muxDepth), done: make(chan struct{})}
	m.wg.Add(2)
	go m.writeLoop()
	go m.readLoop()
	return m
}

func (m *muxConn) fail(err error) error {
	m.errMu.Lock()
	defer m.errMu.Unlock()
	if m.err == nil {
		m.err = err
		m.conn.Close()
	}
	return m.err
}

func (m *muxConn) failed() error {
	m.errMu.Lock()
	defer m.errMu.Unlock()
	return m.err
}

func (m *muxConn) do(args [][]byte) (resp.Reply, error) {
	if err := m.failed(); err != nil {
		return resp.Reply{}, err
	}
	reply := make(chan muxRep, 1)
	select {
	case m.reqs <- muxReq{args, reply}:
	case <-m.done:
		return resp.Reply{}, net.ErrClosed
	}
	r := <-reply
	return r.rep, r.err
}

// writeLoop sends commands as they come, flushing when none is waiting.
func (m *muxConn) writeLoop() {
	defer m.wg.Done()
	defer close(m.waiting)
	w := bufio.NewWriterSize(m.conn, 64<<10)
	for {
		var req muxReq
		select {
		case req = <-m.reqs:
		case <-m.done:
			return
		}
		for {
			resp.WriteCommand(w, req.args...)
			m.waiting <- req.reply
			select {
			case req = <-m.reqs:
				continue
			default:
			}
			break
		}
		if err := w.Flush(); err != nil {
			m.fail(err)
		}
	}
}

// readLoop hands each reply to the caller waiting longest.
func (m *muxConn) readLoop() {
	defer m.wg.Done()
	r := bufio.NewReaderSize(m.conn, 64<<10)
	for reply := range m.waiting {
		rep, err := resp.ReadReply(r)
		if err != nil {
			err = m.fail(err)
		}
		reply <- muxRep{rep, err}
	}
}

func (m *muxConn) close() {
	close(m.done)
	m.fail(errors.New("connection closed"))
	m.wg.Wait()
}
