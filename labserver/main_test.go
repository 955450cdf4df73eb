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
		{[]string{"help"}, 0, "version  this labserver's version"},
		{[]string{"compare", "1"}, 2, "give two groups of run ids"},
		{[]string{"bench", "-engine", "null", "-ops", "1000", "-format", "json"}, 0, `"ops_per_sec"`},
		{[]string{"runs", "-limit", "1"}, 0, "bench -engine null -ops 1000 -format json"},
		{[]string{"bench", "-ops", "0"}, 2, "-ops 0: must be between 1 and"},
		{[]string{"frobnicate"}, 2, `unknown command "frobnicate"`},
		{[]string{"-h"}, 0, "-addr"},
		{[]string{"serve", "-h"}, 0, "-lessons"},
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
