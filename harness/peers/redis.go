package peers

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"kvlab/engine"
	"kvlab/harness"
	"kvlab/internal/localserver"
	"kvlab/internal/resp"
)

// -engine redis: a throwaway redis-server.
//
// When Debian's redis-server is installed (apt-get install redis-server;
// brew install redis), openRedis starts one for the run: its data (the
// append-only file) in the run's directory, so device_io counts its disk
// writes and flushes; listening on a free loopback port and no unix
// socket; no RDB snapshots (save ""), so the only writes are the AOF's.
// It is stopped (SIGTERM: Redis then flushes and syncs its AOF and exits)
// when the store is closed, and on Linux it is also killed if the harness
// dies first (Pdeathsig), so a killed run leaves no server behind. The
// store itself is the RESP client of resp.go, one connection per
// concurrent caller.
//
// Redis applies a write to memory, appends it to the AOF buffer, and
// before the event loop next waits for the network writes the buffer to
// the file and, under appendfsync always, fsyncs it; only then does it
// send the replies. So all the writes that arrived in one event-loop
// iteration, from every client and every pipeline, share one fsync: Redis's
// always is a group commit. The policies map as follows.
//
//   - always, group: appendfsync always. A SET's reply is sent after an
//     fsync that covers it; concurrent clients share fsyncs (kv's group).
//     With one client and no pipelining it is kv's always: one fsync per
//     write.
//   - periodic:1s: appendfsync everysec. A background thread fsyncs the
//     AOF about once a second (Redis's interval is fixed; any other D is
//     refused). The reply is sent once the write is in the page cache:
//     durable against a process kill, not a power cut, for up to about
//     two seconds (Redis skips an fsync while the previous one is still
//     running).
//   - none: appendfsync no. The AOF is written to the page cache and the
//     kernel flushes it when it likes.
//   - batch:N: an error; Redis has no count-based fsync.
//
// Redis's fsync is fdatasync on Linux (redis_fsync), as kv's is.
// openRedis does not implement harness.StatsReporter: the fsyncs happen in
// the server, which does not count them; device_io's flush_requests count
// them at the disk.

// redisSyncMapping says which appendfsync each -sync maps to, for errors.
const redisSyncMapping = "always and group: appendfsync always; periodic:1s: everysec; none: no"

// redisStartTimeout bounds waiting for a started redis-server to answer.
const redisStartTimeout = 10 * time.Second

// redisAppendfsync maps a -sync policy to redis-server's appendfsync, or
// says why it cannot.
func redisAppendfsync(syncText string) (string, error) {
	p, err := engine.ParseSync(syncText)
	if err != nil {
		return "", fmt.Errorf("redis: %w", err)
	}
	switch p.Mode {
	case engine.SyncAlways, engine.SyncGroup:
		return "always", nil
	case engine.SyncNone:
		return "no", nil
	case engine.SyncPeriodic:
		if p.Interval == time.Second {
			return "everysec", nil
		}
		return "", unsupportedSync("redis", syncText, "redis-server's only timer is appendfsync everysec, once a second", "always, group, periodic:1s and none")
	}
	return "", unsupportedSync("redis", syncText, "redis-server has no fsync after every N writes", "always, group, periodic:1s and none")
}

// redisPolicyMatches reports whether a server running appendfsync fsync is
// -sync want, and names the -sync policies it is.
func redisPolicyMatches(fsync string, want engine.SyncPolicy) (bool, string) {
	switch fsync {
	case "always":
		return want.Mode == engine.SyncAlways || want.Mode == engine.SyncGroup, "always (or group)"
	case "everysec":
		return want.Mode == engine.SyncPeriodic && want.Interval == time.Second, "periodic:1s"
	case "no":
		return want.Mode == engine.SyncNone, "none"
	}
	return false, "(none: appendfsync " + fsync + " is not one kvlab knows)"
}

// RedisServerPath returns the redis-server binary's path, or "" when it is
// not installed.
func RedisServerPath() string {
	p, err := exec.LookPath("redis-server")
	if err != nil {
		return ""
	}
	return p
}

// ErrRedisMissing is returned by openRedis when redis-server is not installed.
var ErrRedisMissing = errors.New("redis: redis-server is not installed (apt-get install redis-server, or brew install redis)")

// openRedis starts a redis-server with its data in dir and the appendfsync
// that syncText maps to, and returns a RESP client store for it whose
// Close also stops the server; the client leaves the server when ctx is
// done. It is the harness.ContextOpenFunc registered as "redis".
func openRedis(ctx context.Context, dir, syncText string) (harness.Store, error) {
	fsync, err := redisAppendfsync(syncText)
	if err != nil {
		return nil, err
	}
	bin := RedisServerPath()
	if bin == "" {
		return nil, ErrRedisMissing
	}
	srv, err := startRedis(ctx, bin, dir, fsync)
	if err != nil {
		return nil, err
	}
	st, err := dialRESP(ctx, "redis", srv.addr, 0, syncText)
	if err != nil {
		srv.stop()
		return nil, err
	}
	return &redisStore{respStore: st.(*respStore), srv: srv}, nil
}

var (
	_ harness.Store       = (*redisStore)(nil)
	_ harness.ServerTimer = (*redisStore)(nil)
)

// redisStore is the client of a redis-server it started and stops.
type redisStore struct {
	*respStore
	srv *redisProcess
}

// Close closes the connections and stops the server, which syncs its AOF.
func (s *redisStore) Close() error {
	s.respStore.Close()
	return s.srv.stop()
}

// redisProcess is one started redis-server.
type redisProcess struct {
	cmd    *exec.Cmd
	addr   string
	exited chan error // receives Wait's result once
	logf   string     // its log file, quoted in errors
}

// startRedis starts bin with its data in dir and waits until it answers,
// or until ctx is done (the server is then stopped).
func startRedis(ctx context.Context, bin, dir, fsync string) (*redisProcess, error) {
	port, err := localserver.FreePort()
	if err != nil {
		return nil, fmt.Errorf("redis: %w", err)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("redis: %w", err)
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, fmt.Errorf("redis: %w", err)
	}
	p := &redisProcess{addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), exited: make(chan error, 1), logf: filepath.Join(abs, "redis.log")}
	p.cmd = exec.Command(bin,
		"--bind", "127.0.0.1", "--port", strconv.Itoa(port), "--unixsocket", "",
		"--dir", abs, "--logfile", p.logf, "--daemonize", "no",
		"--save", "", "--appendonly", "yes", "--appendfsync", fsync,
		"--protected-mode", "yes", "--latency-tracking", "yes")
	p.cmd.SysProcAttr = dieWithParent()
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("redis: starting %s: %w", bin, err)
	}
	go func() { p.exited <- p.cmd.Wait() }()
	deadline := time.Now().Add(redisStartTimeout)
	for {
		if redisReady(p.addr) {
			return p, nil
		}
		select {
		case werr := <-p.exited:
			return nil, fmt.Errorf("redis: redis-server exited at start (%v); its log: %s", werr, p.logf)
		case <-ctx.Done():
			p.stop()
			return nil, fmt.Errorf("redis: stopped waiting for redis-server to start: %w", context.Cause(ctx))
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			p.stop()
			return nil, fmt.Errorf("redis: redis-server did not answer on %s within %s; its log: %s", p.addr, redisStartTimeout, p.logf)
		}
	}
}

// redisReady reports whether the server at addr answers PING with PONG:
// it listens before it has loaded its AOF, and until then answers
// -LOADING (and INFO reports the AOF as off).
func redisReady(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, 100*time.Millisecond)
	if err != nil {
		return false
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Second))
	w := bufio.NewWriter(c)
	resp.WriteCommand(w, []byte("PING"))
	if w.Flush() != nil {
		return false
	}
	rep, err := resp.ReadReply(bufio.NewReader(c))
	return err == nil && rep.Kind == resp.Simple && string(rep.Str) == "PONG"
}

// stop asks the server to shut down (it syncs its AOF first) and waits;
// after 10 s it kills it.
func (p *redisProcess) stop() error {
	p.cmd.Process.Signal(terminate)
	select {
	case <-p.exited:
		return nil
	case <-time.After(10 * time.Second):
		p.cmd.Process.Kill()
		<-p.exited
		return fmt.Errorf("redis: redis-server on %s did not stop within 10 s of SIGTERM and was killed; its log: %s", p.addr, p.logf)
	}
}
