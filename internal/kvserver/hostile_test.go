package kvserver

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"kvlab/engine"
	"kvlab/internal/resp"
)

// pipeListener is a net.Listener whose connections are net.Pipe ends. A
// write to a pipe returns only once the other side has read every byte,
// so a test knows how far the server has read.
type pipeListener struct {
	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once
}

func newPipeListener() *pipeListener {
	return &pipeListener{conns: make(chan net.Conn), closed: make(chan struct{})}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return nil
}

func (l *pipeListener) Addr() net.Addr { return pipeAddr{} }

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "pipe" }

// dial returns the client end of a new connection to the server.
func (l *pipeListener) dial(t *testing.T) net.Conn {
	t.Helper()
	client, server := net.Pipe()
	select {
	case l.conns <- server:
	case <-time.After(10 * time.Second):
		t.Fatal("the server accepted no connection in 10 s")
	}
	t.Cleanup(func() { client.Close() })
	return client
}

// startPipe serves a fresh engine over a pipeListener; setup may change
// the server's limits before it serves.
func startPipe(t *testing.T, policy string, setup func(*Server)) (*pipeListener, *engine.DB) {
	t.Helper()
	p, err := engine.ParseSync(policy)
	if err != nil {
		t.Fatal(err)
	}
	db, err := engine.Open(t.TempDir(), engine.Options{Sync: p})
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
	ln := newPipeListener()
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	t.Cleanup(func() {
		srv.Close()
		<-done
		db.Close()
	})
	return ln, db
}

// allocated returns the bytes allocated by the process since the last call
// to it returned before (a runtime.MemStats counter).
func totalAlloc() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.TotalAlloc
}

// TestLyingClientsCostLittle: 64 connections each declare a 16 MiB bulk
// string and send one byte of it. The server must not reserve what they
// declare: it allocates as bytes arrive.
func TestLyingClientsCostLittle(t *testing.T) {
	ln, _ := startPipe(t, "none", nil)
	const conns = 64
	runtime.GC()
	before := totalAlloc()
	for range conns {
		c := ln.dial(t)
		if _, err := c.Write([]byte("*1\r\n$16777216\r\n")); err != nil {
			t.Fatal(err)
		}
		// The pipe returns once the server read the header and, having
		// made room for the bulk string, reads again.
		if _, err := c.Write([]byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	got := totalAlloc() - before
	if got > 32<<20 {
		t.Errorf("%d connections declaring 16 MiB bulk strings: the process allocated %d MiB, want at most 32 MiB (they sent 1 byte each)", conns, got>>20)
	}
}

// TestReplyMemoryBounded: a client pipelines 200 GETs of a 1 MiB value
// and reads slowly. The server must send replies as it goes rather than
// run every GET first and hold 200 MiB of replies.
func TestReplyMemoryBounded(t *testing.T) {
	ln, _ := startPipe(t, "none", nil)
	c := ln.dial(t)
	w, r := bufio.NewWriter(c), bufio.NewReader(c)
	value := strings.Repeat("v", 1<<20)
	resp.WriteCommand(w, []byte("SET"), []byte("big"), []byte(value))
	flushed := make(chan error, 1)
	go func() { flushed <- w.Flush() }() // the pipe blocks until the server reads it all
	if rep, err := resp.ReadReply(r); err != nil || string(rep.Str) != "OK" {
		t.Fatalf("SET: %+v, %v", rep, err)
	}
	if err := <-flushed; err != nil {
		t.Fatal(err)
	}
	const gets = 200
	for range gets {
		resp.WriteCommand(w, []byte("GET"), []byte("big"))
	}
	runtime.GC()
	before := totalAlloc()
	go func() { flushed <- w.Flush() }()
	rep, err := resp.ReadReply(r)
	if err != nil || len(rep.Str) != len(value) {
		t.Fatalf("first GET: %d bytes, %v", len(rep.Str), err)
	}
	got := totalAlloc() - before
	if got > 48<<20 {
		t.Errorf("by the first reply of %d pipelined GETs of 1 MiB the process allocated %d MiB, want at most 48 MiB (replies held back)", gets, got>>20)
	}
	for i := 1; i < gets; i++ {
		if rep, err := resp.ReadReply(r); err != nil || len(rep.Str) != len(value) {
			t.Fatalf("GET %d: %d bytes, %v", i, len(rep.Str), err)
		}
	}
	if err := <-flushed; err != nil {
		t.Fatal(err)
	}
}

// TestReplyBeforeNextCommandArrives: a reply to a whole command goes out
// while the next command is still arriving (PING, then half a SET).
func TestReplyBeforeNextCommandArrives(t *testing.T) {
	addr, _ := start(t, "none", nil)
	c := dial(t, addr)
	for _, in := range []string{
		"*1\r\n$4\r\nPING\r\n*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nab",
		"PING\r\nSET k v", // inline, no end of line yet
		"*1\r\n$4\r\nPING\r\n*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$16777216\r\n",
	} {
		c.c.SetReadDeadline(time.Now().Add(10 * time.Second)) // a guard against a hang, not a budget
		c.w.WriteString(in)
		if got := c.reply(); got != "+PONG" {
			t.Fatalf("after %q: got %q, want +PONG", in, got)
		}
		c.c.Close()
		c = dial(t, addr)
	}
}

// TestIdleTimeout: a connection that sends nothing, or stops in the
// middle of a command, is closed after the idle timeout; one that talks
// is not.
func TestIdleTimeout(t *testing.T) {
	ln, _ := startPipe(t, "none", func(s *Server) { s.IdleTimeout = 50 * time.Millisecond })
	for _, in := range []string{"", "*2\r\n$3\r\nGET\r\n$1\r\n"} {
		c := ln.dial(t)
		if in != "" {
			if _, err := c.Write([]byte(in)); err != nil {
				t.Fatal(err)
			}
		}
		c.SetReadDeadline(time.Now().Add(10 * time.Second)) // a guard, not a budget
		_, err := c.Read(make([]byte, 1))
		if !errors.Is(err, io.EOF) {
			t.Errorf("idle connection after %q: read error %v, want EOF (closed by the server)", in, err)
		}
	}
}

// TestMaxConns: one connection past MaxConns is refused as Redis refuses
// it; once one leaves, a new one is served.
func TestMaxConns(t *testing.T) {
	addr, _ := startWith(t, "none", func(s *Server) { s.MaxConns = 2 })
	a, b := dial(t, addr), dial(t, addr)
	for _, c := range []*client{a, b} {
		c.send("PING")
		if got := c.reply(); got != "+PONG" {
			t.Fatalf("PING: got %q", got)
		}
	}
	c := dial(t, addr)
	c.c.SetReadDeadline(time.Now().Add(10 * time.Second)) // a guard, not a budget
	if got := c.reply(); got != "-ERR max number of clients reached" {
		t.Errorf("a third connection with MaxConns 2: got %q, want -ERR max number of clients reached", got)
	}
	a.send("QUIT")
	a.reply()
	// The server forgets a connection once its goroutine ends, a moment
	// after the QUIT's reply.
	for i := 0; ; i++ {
		d, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		d.SetDeadline(time.Now().Add(10 * time.Second))
		d.Write([]byte("PING\r\n"))
		line, _ := bufio.NewReader(d).ReadString('\n')
		d.Close()
		if line == "+PONG\r\n" {
			break
		}
		if i == 100 {
			t.Fatalf("after a QUIT, a new connection still gets %q", line)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestPipelineRepeatedKeyShares: under group, a pipeline of SETs to one
// key (redis-benchmark's default SET test) shares fdatasyncs as one of
// distinct keys does, and the key ends with the last value, in the log
// too (the store reopened).
func TestPipelineRepeatedKeyShares(t *testing.T) {
	const writes = 64
	p, _ := engine.ParseSync("group")
	dir := t.TempDir()
	db, err := engine.Open(dir, engine.Options{Sync: p, FS: slowSyncFS})
	if err != nil {
		t.Fatal(err)
	}
	srv, _ := New(db, "group")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(l)
	c := dial(t, l.Addr().String())
	before := db.Stats().Fsyncs
	for i := range writes {
		c.send("SET", "key", fmt.Sprint(i))
		if i%8 == 7 {
			c.send("GET", "key")
		}
	}
	for i := range writes {
		if got := c.reply(); got != "+OK" {
			t.Fatalf("SET %d: got %q", i, got)
		}
		if i%8 == 7 {
			if got, want := c.reply(), fmt.Sprintf("$%d", i); got != want {
				t.Fatalf("GET after SET %d: got %q, want %q", i, got, want)
			}
		}
	}
	if got := db.Stats().Fsyncs - before; got < 1 || got > writes/4 {
		t.Errorf("a pipeline of %d SETs to one key: %d fdatasyncs, want 1..%d (shared)", writes, got, writes/4)
	}
	srv.Close()
	db.Close()
	db, err = engine.Open(dir, engine.Options{Sync: p})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if v, err := db.Get([]byte("key")); err != nil || string(v) != fmt.Sprint(writes-1) {
		t.Errorf("reopened: key = %q, %v; want %d (the pipeline's last SET)", v, err, writes-1)
	}
}
