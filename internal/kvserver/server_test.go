package kvserver

import (
	"bufio"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"kvlab/engine"
	"kvlab/internal/resp"
	"kvlab/internal/slowfs"
)

// slowSyncFS makes every fdatasync take 5 ms more, so group commit's
// sharing is certain rather than a matter of timing.
var slowSyncFS = slowfs.FS{Delay: 5 * time.Millisecond}

// start serves a fresh engine under policy on a loopback port and
// returns its address and the DB; both are closed when the test ends.
func start(t *testing.T, policy string, fs engine.FS) (string, *engine.DB) {
	t.Helper()
	return serve(t, policy, fs, nil)
}

// startWith is start with setup run on the server before it serves.
func startWith(t *testing.T, policy string, setup func(*Server)) (string, *engine.DB) {
	t.Helper()
	return serve(t, policy, nil, setup)
}

func serve(t *testing.T, policy string, fs engine.FS, setup func(*Server)) (string, *engine.DB) {
	t.Helper()
	p, err := engine.ParseSync(policy)
	if err != nil {
		t.Fatal(err)
	}
	db, err := engine.Open(t.TempDir(), engine.Options{Sync: p, FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(db, policy)
	if err != nil {
		t.Fatal(err)
	}
	if setup != nil {
		setup(srv)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	t.Cleanup(func() {
		srv.Close()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
		db.Close()
	})
	return ln.Addr().String(), db
}

// client is one connection that writes commands and reads replies.
type client struct {
	t *testing.T
	c net.Conn
	r *bufio.Reader
	w *bufio.Writer
}

func dial(t *testing.T, addr string) *client {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &client{t, c, bufio.NewReader(c), bufio.NewWriter(c)}
}

// send writes one command without flushing (a pipeline).
func (c *client) send(words ...string) {
	args := make([][]byte, len(words))
	for i, w := range words {
		args[i] = []byte(w)
	}
	resp.WriteCommand(c.w, args...)
}

// reply flushes and reads one reply, rendered as text: +OK, -ERR ...,
// :3, $value, $nil.
func (c *client) reply() string {
	c.t.Helper()
	if err := c.w.Flush(); err != nil {
		c.t.Fatal(err)
	}
	r, err := resp.ReadReply(c.r)
	if err != nil {
		c.t.Fatal(err)
	}
	switch {
	case r.Kind == resp.Integer:
		return fmt.Sprintf(":%d", r.Int)
	case r.Null:
		return "$nil"
	case r.Kind == resp.Array:
		return fmt.Sprintf("*%d", len(r.Elems))
	}
	return string(r.Kind) + string(r.Str)
}

func TestCommands(t *testing.T) {
	addr, _ := start(t, "always", nil)
	c := dial(t, addr)
	tests := []struct {
		cmd  []string
		want string // the reply, or its prefix when it ends in "..."
	}{
		{[]string{"PING"}, "+PONG"},
		{[]string{"ping", "hello"}, "$hello"},
		{[]string{"GET", "k"}, "$nil"},
		{[]string{"SET", "k", "v1"}, "+OK"},
		{[]string{"GET", "k"}, "$v1"},
		{[]string{"set", "k", ""}, "+OK"},
		{[]string{"GET", "k"}, "$"},
		{[]string{"SET", "j", "x"}, "+OK"},
		{[]string{"DEL", "k", "j", "never"}, ":2"},
		{[]string{"GET", "k"}, "$nil"},
		{[]string{"DEL", "k"}, ":0"},
		{[]string{"SET", "k"}, "-ERR wrong number of arguments for 'set' command"},
		{[]string{"SET", "k", "v", "EX", "10"}, "-ERR SET options are not supported..."},
		{[]string{"GET"}, "-ERR wrong number of arguments for 'get' command"},
		{[]string{"HSET", "h", "f", "v"}, "-ERR unknown command 'HSET', with args beginning with: 'h' 'f' 'v' "},
		{[]string{"SELECT", "0"}, "+OK"},
		{[]string{"SELECT", "1"}, "-ERR kvserver has one database..."},
		{[]string{"CONFIG", "GET", "appendonly"}, "*2"},
		{[]string{"CONFIG", "GET", "maxmemory"}, "*0"},
		{[]string{"CONFIG", "SET", "x", "y"}, "-ERR kvserver supports CONFIG RESETSTAT..."},
		{[]string{"COMMAND", "COUNT"}, ":18"},
		{[]string{"COMMAND", "DOCS", "nosuch"}, "*0"},
	}
	for _, tt := range tests {
		c.send(tt.cmd...)
		got := c.reply()
		if want, prefix := strings.CutSuffix(tt.want, "..."); prefix && !strings.HasPrefix(got, want) || !prefix && got != tt.want {
			t.Errorf("%q: got %q, want %q", tt.cmd, got, tt.want)
		}
	}
	c.send("INFO", "persistence")
	if got := c.reply(); !strings.Contains(got, "kv_sync:always\r\n") || !strings.Contains(got, "aof_enabled:1\r\n") {
		t.Errorf("INFO persistence = %q, want kv_sync:always and aof_enabled:1", got)
	}
	c.send("QUIT")
	if got := c.reply(); got != "+OK" {
		t.Errorf("QUIT: got %q, want +OK", got)
	}
	if _, err := resp.ReadReply(c.r); err == nil {
		t.Errorf("after QUIT the connection is still open")
	}
}

// TestInlineAndProtocolErrors checks a hand-typed command and a malformed
// one, which gets an error reply and a closed connection.
func TestInlineAndProtocolErrors(t *testing.T) {
	addr, _ := start(t, "none", nil)
	c := dial(t, addr)
	c.w.WriteString("SET a b\r\nGET a\r\n")
	if got := c.reply(); got != "+OK" {
		t.Errorf("inline SET: got %q, want +OK", got)
	}
	if got := c.reply(); got != "$b" {
		t.Errorf("inline GET: got %q, want $b", got)
	}
	c.w.WriteString("*1\r\n:5\r\n")
	if got := c.reply(); !strings.HasPrefix(got, "-ERR resp: protocol error") {
		t.Errorf("malformed command: got %q, want a protocol error reply", got)
	}
	if _, err := resp.ReadReply(c.r); err == nil {
		t.Errorf("after a protocol error the connection is still open")
	}
}

// TestPipelineOrder sends a pipeline mixing keys, repeated keys and reads
// under every policy, and checks every reply is the one a one-at-a-time
// execution gives (group runs distinct keys at once).
func TestPipelineOrder(t *testing.T) {
	for _, policy := range []string{"always", "group", "none"} {
		t.Run(policy, func(t *testing.T) {
			addr, _ := start(t, policy, nil)
			c := dial(t, addr)
			var want []string
			for i := range 50 {
				k := fmt.Sprintf("k%d", i%7) // every 7th command repeats a key
				c.send("SET", k, fmt.Sprint(i))
				want = append(want, "+OK")
				c.send("GET", k)
				want = append(want, fmt.Sprintf("$%d", i))
				if i%10 == 9 {
					c.send("DEL", k)
					want = append(want, ":1")
					c.send("GET", k)
					want = append(want, "$nil")
					c.send("PING")
					want = append(want, "+PONG")
				}
			}
			for i, w := range want {
				if got := c.reply(); got != w {
					t.Fatalf("reply %d: got %q, want %q", i, got, w)
				}
			}
		})
	}
}

// TestGroupCommitShares checks that under group, writes from many
// connections, and the SETs of one pipeline, share fdatasyncs: with each
// sync slowed to 5 ms, 64 writes that all arrive while one sync runs cost
// far fewer than 64.
func TestGroupCommitShares(t *testing.T) {
	const writes = 64
	t.Run("connections", func(t *testing.T) {
		addr, db := start(t, "group", slowSyncFS)
		before := db.Stats().Fsyncs
		var wg sync.WaitGroup
		for w := range 16 {
			c := dial(t, addr)
			wg.Go(func() {
				for i := range writes / 16 {
					c.send("SET", fmt.Sprintf("c%d-%d", w, i), "v")
					if got := c.reply(); got != "+OK" {
						t.Errorf("SET: got %q", got)
					}
				}
			})
		}
		wg.Wait()
		if got := db.Stats().Fsyncs - before; got < 1 || got > writes/4 {
			t.Errorf("16 connections x %d SETs: %d fdatasyncs, want 1..%d (shared)", writes/16, got, writes/4)
		}
	})
	t.Run("pipeline", func(t *testing.T) {
		addr, db := start(t, "group", slowSyncFS)
		c := dial(t, addr)
		before := db.Stats().Fsyncs
		for i := range writes {
			c.send("SET", fmt.Sprintf("p%d", i), "v")
		}
		for range writes {
			if got := c.reply(); got != "+OK" {
				t.Fatalf("SET: got %q", got)
			}
		}
		if got := db.Stats().Fsyncs - before; got < 1 || got > writes/4 {
			t.Errorf("a pipeline of %d SETs: %d fdatasyncs, want 1..%d (shared)", writes, got, writes/4)
		}
	})
	t.Run("always does not share", func(t *testing.T) {
		addr, db := start(t, "always", nil)
		c := dial(t, addr)
		before := db.Stats().Fsyncs
		for i := range 16 {
			c.send("SET", fmt.Sprintf("a%d", i), "v")
		}
		for range 16 {
			c.reply()
		}
		if got := db.Stats().Fsyncs - before; got != 16 {
			t.Errorf("a pipeline of 16 SETs under always: %d fdatasyncs, want 16", got)
		}
	})
}

// TestServerStats checks INFO commandstats and latencystats count what
// ran, in Redis's format, and that CONFIG RESETSTAT starts them again.
func TestServerStats(t *testing.T) {
	addr, _ := start(t, "none", nil)
	c := dial(t, addr)
	for i := range 5 {
		c.send("SET", fmt.Sprint(i), "v")
		c.reply()
	}
	c.send("GET", "0")
	c.reply()
	c.send("INFO", "commandstats")
	got := c.reply()
	for _, want := range []string{"cmdstat_set:calls=5,usec=", "cmdstat_get:calls=1,"} {
		if !strings.Contains(got, want) {
			t.Errorf("INFO commandstats = %q, want it to contain %q", got, want)
		}
	}
	c.send("INFO", "latencystats")
	if got := c.reply(); !strings.Contains(got, "latency_percentiles_usec_set:p50=") || !strings.Contains(got, ",p99.9=") {
		t.Errorf("INFO latencystats = %q, want a latency_percentiles_usec_set line", got)
	}
	c.send("CONFIG", "RESETSTAT")
	c.reply()
	c.send("INFO", "commandstats")
	if got := c.reply(); strings.Contains(got, "cmdstat_set") {
		t.Errorf("after RESETSTAT, INFO commandstats = %q, want no cmdstat_set", got)
	}
}
