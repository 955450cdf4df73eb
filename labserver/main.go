// Command labserver serves the kvlab course and runs its measurements.
//
//	labserver [serve] [-addr 127.0.0.1:8080] [-data DIR] [-lessons DIR] [-open] [-token T]
//	labserver bench | sweep | probe | model | crash [flags] [-archive V] [-data DIR]
//	labserver runs [show ID | export] [flags]
//	labserver compare A B | -last N [flags]
//	labserver kvserver [-addr 127.0.0.1:6380] [-sync POLICY] [-dir DIR]
//	labserver help [COMMAND]
//
// With no subcommand (or "serve") it starts the lesson server; the other
// subcommands are the benchmark harness's command line, the same grammar a
// lesson's runnable cells use, each run recorded in the run archive, and
// the archive's runs and compare, and kvserver, the kv engine served over
// the Redis protocol. This file only dispatches: the server
// lives in kvlab/internal/server, the command line in kvlab/internal/cli
// (which runs kvlab/harness).
package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"kvlab/engine/crashtest"
	_ "kvlab/harness/mine"  // registers mine and mine-null, a reader's own store
	_ "kvlab/harness/peers" // registers bbolt, pebble, sqlite, redis and resp://
	"kvlab/internal/cli"
	"kvlab/internal/server"
)

func main() {
	// A crash-test child is this same binary re-executed by `labserver
	// crash`; it runs its workload until it is killed and never returns.
	crashtest.MaybeRunChild()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run picks the server or the command line from the first argument.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return server.Main(ctx, args, stdout, stderr)
	}
	if args[0] == "serve" {
		return server.Main(ctx, args[1:], stdout, stderr)
	}
	if len(args) == 2 && args[0] == "help" && args[1] == "serve" {
		return server.Main(ctx, []string{"-h"}, stdout, stderr)
	}
	return cli.Main(ctx, args, stdout, stderr)
}
