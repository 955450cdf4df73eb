package harnesstest

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"kvlab/harness"
	_ "kvlab/harness/mine"  // registers mine and mine-null
	_ "kvlab/harness/peers" // registers bbolt, pebble, sqlite, redis, etcd, pg-sync ...
)

var update = flag.Bool("update", false, "rewrite testdata/scaled_lines.golden")

func TestScaleLineScalesGivenBudgets(t *testing.T) {
	tests := []struct {
		line string
		f    float64
		want string
		// keys and warmup are what the scaled line runs with: its
		// defaults follow the scaled budgets.
		keys, warmup int64
	}{
		{"bench -engine kv -ops 8000 -warmup 100", 0.1, "bench -engine kv -ops 800 -warmup 10", 800, 10},
		{"labserver bench -ops 5 -keys 3", 0.1, "labserver bench -ops 1 -keys 1", 1, 1},
		{"bench -ops 8000", 1, "bench -ops 8000", 8000, 800},
		{"bench -ops 8000", 0.05, "bench -ops 400", 400, 40},
		// Digits grouped with "_" scale too, and both spellings of a flag.
		{"bench -ops 8_000", 0.5, "bench -ops 4000", 4000, 400},
		{"sweep -threads 1,2 --duration=3s", 0.1, "sweep -threads 1,2 --duration=300ms", 100000, 100},
		{"sweep -duration=3s", 0.0001, "sweep -duration=1ms", 100000, 100},
		// -repeat stays, and so do the flags that say where and how to
		// show the results.
		{"bench -ops 400 -repeat 3 -format json -dir /tmp -keep -progress=false", 0.5,
			"bench -ops 200 -repeat 3 -format json -dir /tmp -keep -progress=false", 200, 20},
	}
	for _, tt := range tests {
		got, err := ScaleLine(tt.line, tt.f)
		if err != nil {
			t.Errorf("ScaleLine(%q, %v): %v", tt.line, tt.f, err)
			continue
		}
		if got != tt.want {
			t.Errorf("ScaleLine(%q, %v) = %q, want %q", tt.line, tt.f, got, tt.want)
		}
		s, err := harness.ParseSpec(got, harness.DefaultLimits())
		if err != nil {
			t.Errorf("scaled line %q does not parse: %v", got, err)
			continue
		}
		if int64(s.Keys) != tt.keys || s.Warmup != tt.warmup {
			t.Errorf("scaled line %q runs -keys %d -warmup %d, want %d and %d", got, s.Keys, s.Warmup, tt.keys, tt.warmup)
		}
	}
	for _, tt := range []struct {
		line string
		f    float64
		want string
	}{
		{"crash -sync batch:100 -trials 20", 0.25, "crash -sync batch:100 -trials 5"},
		{"probe -ops 2000", 0.001, "probe -ops 10"},
		{"probe -duration 1s", 0.001, "probe -duration 10ms"},
		{"model -sync batch:64", 0.5, "model -sync batch:64"},
		{"bench -engine etcd -duration 4s -kill leader@1s", 0.05, "bench -engine etcd -duration 200ms -kill leader@50ms"},
		{"bench -engine etcd -duration 2s -kill follower@2s", 0.5, "bench -engine etcd -duration 1s -kill follower@1s"},
		{"bench -engine etcd -duration 1s -kill leader@1ms", 0.01, "bench -engine etcd -duration 10ms -kill leader@1ms"},
	} {
		if got, err := ScaleLine(tt.line, tt.f); err != nil || got != tt.want {
			t.Errorf("ScaleLine(%q, %v) = %q, %v; want %q", tt.line, tt.f, got, err, tt.want)
		}
	}
	for _, f := range []float64{0, -1, 1.5} {
		if _, err := ScaleLine("bench", f); err == nil {
			t.Errorf("ScaleLine with f=%v: got nil error", f)
		}
	}
	if _, err := ScaleLine("bench -ops 0", 0.5); err == nil {
		t.Error("ScaleLine of an invalid line: got nil error")
	}
}

// The smallest values ScaleLine keeps a budget at are the grammar's: each
// parses, and one step below it does not.
func TestScaleLineKeepsTheGrammarsMinimums(t *testing.T) {
	for _, tt := range []struct{ ok, below string }{
		{fmt.Sprintf("bench -ops %d", minOps), fmt.Sprintf("bench -ops %d", minOps-1)},
		{fmt.Sprintf("probe -ops %d", minProbeOps), fmt.Sprintf("probe -ops %d", minProbeOps-1)},
		{"bench -duration " + minDuration.String(), "bench -duration " + (minDuration - time.Microsecond).String()},
		{"probe -duration " + minProbeDuration.String(), "probe -duration " + (minProbeDuration - time.Millisecond).String()},
		{"bench -keys 1", "bench -keys 0"},
		{"bench -warmup 0", "bench -warmup -1"},
		{"crash -sync always -trials 1", "crash -sync always -trials 0"},
	} {
		if _, err := harness.ParseSpec(tt.ok, harness.DefaultLimits()); err != nil {
			t.Errorf("%s: %v, want it to parse", tt.ok, err)
		}
		if _, err := harness.ParseSpec(tt.below, harness.DefaultLimits()); err == nil {
			t.Errorf("%s parses, want an error: the minimum is lower than ScaleLine keeps", tt.below)
		}
	}
}

// TestScaledCourseLinesAreUnchanged scales every line of harness's
// printed-form golden file (every run line of the course, every help
// example, and lines that give every flag) by each factor, and compares
// what the scaled line runs (its canonical form and its Spec's fields)
// with testdata/scaled_lines.golden, written when the scaling rules were
// still the grammar's (harness.ScaleLine).
func TestScaledCourseLinesAreUnchanged(t *testing.T) {
	all, err := os.ReadFile(filepath.Join("..", "testdata", "spec_lines.golden"))
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for l := range strings.SplitSeq(string(all), "\n") {
		if line, ok := strings.CutPrefix(l, "line: "); ok {
			lines = append(lines, line)
		}
	}
	var b strings.Builder
	for _, line := range lines {
		if _, err := harness.ParseSpec(line, harness.DefaultLimits()); err != nil {
			continue // one of the lines that show an error
		}
		fmt.Fprintf(&b, "line: %s\n", line)
		for _, f := range []float64{0.001, 0.05, 0.5, 1} {
			scaled, err := ScaleLine(line, f)
			if err != nil {
				fmt.Fprintf(&b, "  scale %g: error: %v\n", f, err)
				continue
			}
			s, err := harness.ParseSpec(scaled, harness.DefaultLimits())
			if err != nil {
				fmt.Fprintf(&b, "  scale %g: does not parse: %v\n", f, err)
				continue
			}
			fmt.Fprintf(&b, "  scale %g: %s\n   ", f, s)
			v := reflect.ValueOf(*s)
			for i := range v.NumField() {
				if f := v.Type().Field(i); f.IsExported() {
					fmt.Fprintf(&b, " %s:%+v", f.Name, v.Field(i))
				}
			}
			b.WriteString("\n")
		}
	}
	path := filepath.Join("testdata", "scaled_lines.golden")
	if *update {
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (rerun with -update to create it)", err)
	}
	gl, wl := strings.Split(b.String(), "\n"), strings.Split(string(want), "\n")
	for i := range min(len(gl), len(wl)) {
		if gl[i] != wl[i] {
			t.Fatalf("%s: line %d differs (rerun with -update and review the diff):\n got %s\nwant %s", path, i+1, gl[i], wl[i])
		}
	}
	if len(gl) != len(wl) {
		t.Fatalf("%s: got %d lines, want %d (rerun with -update and review the diff)", path, len(gl), len(wl))
	}
}
