package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"

	"kvlab/engine"
	"kvlab/internal/kvserver"
)

const kvserverUsage = `usage: labserver kvserver [-addr 127.0.0.1:6380] [-sync POLICY] [-dir DIR] [-max-conns N] [-idle-timeout D]

serve the kv engine over RESP, the Redis protocol (SET, GET, DEL, MSET, MGET,
EXISTS, MULTI/EXEC, INFO, CONFIG, CLIENT, HELLO 2, ...; pipelining; many
connections share -sync group's commits), until interrupted; measure it with
labserver bench -engine resp://ADDR, redis-benchmark or any Redis client

flags:
  -addr HOST:PORT   where to listen (default 127.0.0.1:6380; port 0 picks a free one, printed)
  -sync POLICY      always | group | batch:N | periodic:D | none (default always)
  -dir DIR          the engine's data directory (default: a new temporary one, removed on exit)
  -max-conns N      connections served at once, 1..100000 (default 1024); one more is refused
  -idle-timeout D   close a connection that sends nothing, or reads none of its replies,
                    for D (default 5m; 0 never)
`

// kvserverMain runs `labserver kvserver` until ctx is done (Ctrl-C).
func kvserverMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("kvserver", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	addr := fs.String("addr", "127.0.0.1:6380", "")
	syncText := fs.String("sync", "always", "")
	dir := fs.String("dir", "", "")
	maxConns := fs.Int("max-conns", kvserver.DefaultMaxConns, "")
	idle := fs.Duration("idle-timeout", kvserver.DefaultIdleTimeout, "")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, kvserverUsage)
			return 0
		}
		fmt.Fprintf(stderr, "labserver kvserver: %v\nrun `labserver help kvserver` for its flags\n", err)
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "labserver kvserver: unexpected argument %q\nrun `labserver help kvserver` for its flags\n", fs.Arg(0))
		return 2
	}
	if *maxConns < 1 || *maxConns > 100000 {
		fmt.Fprintf(stderr, "labserver kvserver: -max-conns %d: must be between 1 and 100000\n", *maxConns)
		return 2
	}
	if *idle < 0 {
		fmt.Fprintf(stderr, "labserver kvserver: -idle-timeout %v: must be 0 (never) or more\n", *idle)
		return 2
	}
	policy, err := engine.ParseSync(*syncText)
	if err != nil {
		fmt.Fprintf(stderr, "labserver kvserver: -sync %s: %v\n", *syncText, err)
		return 2
	}
	if *dir == "" {
		tmp, err := os.MkdirTemp("", "kvserver-")
		if err != nil {
			fmt.Fprintf(stderr, "labserver kvserver: %v\n", err)
			return 1
		}
		defer os.RemoveAll(tmp)
		*dir = tmp
	}
	db, err := engine.Open(*dir, engine.Options{Sync: policy})
	if err != nil {
		fmt.Fprintf(stderr, "labserver kvserver: %v\n", err)
		return 1
	}
	defer db.Close()
	srv, err := kvserver.New(db, *syncText)
	if err != nil {
		fmt.Fprintf(stderr, "labserver kvserver: %v\n", err)
		return 2
	}
	srv.MaxConns, srv.IdleTimeout = *maxConns, *idle
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintf(stderr, "labserver kvserver: -addr %s: %v\n", *addr, err)
		return 1
	}
	if host, _, _ := net.SplitHostPort(*addr); !isLoopback(host) {
		fmt.Fprintf(stderr, "labserver kvserver: warning: %s is not a loopback address, and kvserver has no authentication: anyone who can reach it can read and write the store\n", *addr)
	}
	kill, power := kvserver.Loss(policy)
	fmt.Fprintf(stdout, "kvserver: kv -sync %s on %s, data in %s (Ctrl-C stops); under -sync %s a process kill can lose %s, a power cut %s\n",
		*syncText, ln.Addr(), *dir, policy, kill, power)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case <-ctx.Done():
		srv.Close()
		<-done
	case err = <-done:
		srv.Close()
		if err != nil {
			fmt.Fprintf(stderr, "labserver kvserver: %v\n", err)
			return 1
		}
	}
	if err := db.Close(); err != nil {
		fmt.Fprintf(stderr, "labserver kvserver: closing the store: %v\n", err)
		return 1
	}
	return 0
}

// isLoopback reports whether host (an -addr's host part) is a loopback
// address or localhost.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
