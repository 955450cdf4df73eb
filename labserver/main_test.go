package main

import (
	"context"
	"strings"
	"testing"

	"kvlab/engine/crashtest"
)

func TestMain(m *testing.M) {
	crashtest.MaybeRunChild()
	m.Run()
}

// TestDispatch checks that each first argument reaches the right side:
// the harness's command line or the server's flags.
func TestDispatch(t *testing.T) {
	// bench records its run in the default data directory: a temporary one.
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	t.Setenv("HOME", t.TempDir())
	tests := []struct {
		args     []string
		wantCode int
		want     string // substring of stdout+stderr
	}{
		{[]string{"model", "-sync", "batch:64", "-t-write", "1us", "-t-fsync", "200us"}, 0, "predicted throughput  242424 ops/s"},
		{[]string{"help"}, 0, "sweep"},
		{[]string{"help"}, 0, "compare"},
		{[]string{"version"}, 0, "built with go1."},
		{[]string{"version", "-v"}, 2, "takes no arguments"},
		{[]string{"help"}, 0, "version   this labserver's version"},
		{[]string{"compare", "1"}, 2, "give two groups of run ids"},
		{[]string{"bench", "-engine", "null", "-ops", "1000", "-format", "json"}, 0, `"ops_per_sec"`},
		{[]string{"runs", "-limit", "1"}, 0, "bench -engine null -ops 1000 -format json"},
		{[]string{"bench", "-ops", "0"}, 2, "-ops 0: must be between 1 and"},
		{[]string{"frobnicate"}, 2, `unknown command "frobnicate"`},
		{[]string{"-h"}, 0, "-addr"},
		{[]string{"serve", "-h"}, 0, "-lessons"},
		{[]string{"help", "serve"}, 0, "-lessons"},
		{[]string{"help", "version"}, 0, "labserver version"},
		{[]string{"help", "help"}, 0, "sweep"},
		{[]string{"serve", "-addr", "0.0.0.0:0"}, 1, "pass -token"},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var out, errOut strings.Builder
			code := run(context.Background(), tc.args, &out, &errOut)
			all := out.String() + errOut.String()
			if code != tc.wantCode {
				t.Errorf("exit code: got %d, want %d\n%s", code, tc.wantCode, all)
			}
			if !strings.Contains(all, tc.want) {
				t.Errorf("output does not contain %q:\n%s", tc.want, all)
			}
		})
	}
}

// TestMistakesGetOneShortMessage: a mistyped command, help topic or flag
// gets a few lines naming the mistake and what was most likely meant,
// never the whole usage, and exit code 2.
func TestMistakesGetOneShortMessage(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	t.Setenv("HOME", t.TempDir())
	tests := []struct {
		args     []string
		want     string // substring of stdout+stderr
		maxLines int
	}{
		{[]string{"swep"}, "unknown command \"swep\"; did you mean `sweep`?", 3},
		{[]string{"comapre", "1", "2"}, "did you mean `compare`?", 3},
		{[]string{"verison"}, "did you mean `version`?", 3},
		{[]string{"frobnicate"}, "the commands: serve, bench, sweep, probe, model, crash, runs, compare, kvserver, version, help", 3},
		{[]string{"help", "foo"}, `labserver help: unknown command "foo"`, 3},
		{[]string{"help", "swep"}, "did you mean `sweep`?", 3},
		{[]string{"bench", "-opz", "5"}, "unknown flag -opz (did you mean `-ops`?)", 2},
		{[]string{"runs", "-limt", "3"}, "flag provided but not defined: -limt (did you mean `-limit`?)", 2},
		{[]string{"compare", "-lst", "3"}, "did you mean `-last`?", 2},
		{[]string{"serve", "-adr", "127.0.0.1:0"}, "labserver serve: flag provided but not defined: -adr (did you mean `-addr`?); see labserver serve -h", 1},
		{[]string{"-max-opps", "3"}, "did you mean `-max-ops`?", 1},
		{[]string{"serve", "-max-ops", "many"}, `invalid value "many" for flag -max-ops`, 1},
		{[]string{"serve", "-addr", "8081"}, "-addr 8081: want host:port, e.g. 127.0.0.1:8081", 1},
		{[]string{"serve", "-addr", "localhost"}, "-addr localhost: want host:port, e.g. 127.0.0.1:8080", 1},
		{[]string{"serve", "-addr", "127.0.0.1:http"}, "the port must be a number from 0 to 65535", 1},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var out, errOut strings.Builder
			// Cancelled: a line taken for a good one serves and stops
			// at once (exit 0) instead of serving forever.
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			code := run(ctx, tc.args, &out, &errOut)
			all := out.String() + errOut.String()
			if code != 2 {
				t.Errorf("exit code: got %d, want 2\n%s", code, all)
			}
			if !strings.Contains(all, tc.want) {
				t.Errorf("output does not contain %q:\n%s", tc.want, all)
			}
			if n := strings.Count(all, "\n"); n > tc.maxLines {
				t.Errorf("got %d lines, want at most %d:\n%s", n, tc.maxLines, all)
			}
			if strings.Contains(all, "loopback") {
				t.Errorf("output blames loopback:\n%s", all)
			}
		})
	}
	// frobnicate is near no command: no guess.
	var out strings.Builder
	run(context.Background(), []string{"frobnicate"}, &out, &out)
	if strings.Contains(out.String(), "did you mean") {
		t.Errorf("frobnicate: got a guess: %s", out.String())
	}
}
