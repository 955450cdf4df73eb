package harness

import (
	"strings"
	"testing"
	"time"
)

func TestFlagErrorsNameFlagAndAllowed(t *testing.T) {
	tests := []struct {
		line string
		want string // substring of the error
	}{
		{"", "empty line: expected one of bench, sweep, probe, model, crash"},
		{"frobnicate", `unknown command "frobnicate"`},
		{"bench -ops 0", "-ops 0: must be between 1 and 10000000"},
		{"bench -ops 10000001", "-ops 10000001: must be between 1 and 10000000"},
		{"bench -ops abc", "-ops abc: not a whole number: want one between 1 and 10000000"},
		{"bench -ops", "-ops: needs a value"},
		{"bench -ops 5 -ops 6", "-ops: given twice"},
		{"bench -ops 5 -duration 1s", "-ops and -duration: give one or the other"},
		{"bench -duration 3", "-duration 3: must be a duration between 1ms and 10m0s"},
		{"bench -duration 11m", "-duration 11m: must be a duration between 1ms and 10m0s"},
		{"bench -threads 0", "-threads 0: each count must be between 1 and 256"},
		{"bench -threads 1,2", "-threads 1,2: bench takes one count; use sweep for a list"},
		{"sweep -threads 1,x", "-threads 1,x: each count must be between 1 and 256"},
		{"bench -value-size -1", "-value-size -1: must be between 0 and 1048576"},
		{"bench -keys 0", "-keys 0: must be between 1 and 10000000"},
		{"bench -engine nope", "-engine nope: unknown engine; allowed:"},
		{"bench -engine kv,nope", "-engine nope: unknown engine"},
		{"bench -engine null,null", "-engine null,null: null is named twice"},
		{"sweep -engine kv,null,kv", "-engine kv,null,kv: kv is named twice"},
		{"sweep -threads 1,2,1", "-threads 1,2,1: 1 is named twice"},
		{"bench -sync sometimes", "-sync sometimes: unknown policy; allowed: always, group, batch:N, periodic:D, none"},
		{"bench -sync batch:0", "-sync batch:0: batch:N needs N between 1 and 1048576"},
		{"bench -sync batch:x", "-sync batch:x: batch:N needs N between"},
		{"bench -sync periodic:0s", "-sync periodic:0s: periodic:D needs a duration between 100µs and 1m"},
		{"bench -sync batch:007", "-sync batch:007: batch:N needs N between 1 and 1048576"},
		{"bench -sync always:1", "-sync always:1: always takes no parameter; allowed: always, group, batch:N, periodic:D, none"},
		{"sweep -sync periodic:2m", "-sync periodic:2m: periodic:D needs a duration between 100µs and 1m, e.g. periodic:10ms"},
		{"bench -workload scan", "-workload scan: unknown workload; allowed: fillseq, fillrandom"},
		{"bench -workload seekrandom", "-workload seekrandom: engine kv cannot scan keys in order: its index is a hash table"},
		{"bench -engine null,kv -workload seekrandom", "engine kv cannot scan keys in order"},
		{"bench -dist pareto", "-dist pareto: unknown distribution; allowed: uniform, zipfian"},
		{"bench -format xml", "-format xml: allowed: table, tsv, json, benchstat"},
		{"bench -rate 0", "-rate 0: must be between 1 and 10000000"},
		{"bench -workload readrandom -cache hot", "-cache hot: unknown; allowed: warm, cold"},
		{"bench -cache cold", "-cache cold: -workload fillrandom reads nothing written before the timed region, so there is no cache to empty; cold applies to workloads on a preloaded store: overwrite, readrandom"},
		{"bench -repeat 21", "-repeat 21: must be between 1 and 20"},
		{"bench -trials 3", "bench: unknown flag -trials; allowed:\n  -engine"},
		{"bench -opz 3", "bench: unknown flag -opz (did you mean `-ops`?); allowed:\n  -engine"},
		{"bench -ops abc", "-ops abc: not a whole number: want one between 1 and 10000000, e.g. -ops 1000"},
		{"probe -ops 1e3", "-ops 1e3: not a whole number: want one between 10 and 1000000"},
		{"swep", "unknown command \"swep\" (did you mean `sweep`?): expected one of bench, sweep"},
		{"bench ops 5", `bench: unexpected argument "ops"`},
		{"bench -keep=maybe", "-keep=maybe: must be true or false"},
		{"bench -ops 10000000 -value-size 1048576", "must be at most 8.0 GiB in total"},
		{"probe -ops 5", "-ops 5: must be between 10 and 1000000"},
		{"probe -format benchstat", "-format benchstat: only bench and sweep lines have runs to print so; allowed for probe: table, tsv, json"},
		{"model", "model: -sync is required"},
		{"model -sync always", "-sync always: the model covers batch:N and periodic:D only"},
		{"model -sync batch:8 -t-write 0s", "-t-write 0s: must be a duration between 1ns and 1s"},
		{"crash -trials 0", "-trials 0: must be between 1 and 1000"},
		{"crash -power -power-mode torn", "-power-mode torn: allowed: prefix, reorder, pages, dirent"},
		{"crash -power-mode pages", "-power-mode pages: needs -power"},
		{"crash -points", "-points: needs -power"},
		{"crash -power -points -trials 3", "-points and -trials: give one or the other"},
		{"crash -fail-sync 0", "-fail-sync 0: must be between 1 and 100000"},
		{"bench -batch 4", "-batch 4: applies to -workload fillbatch only"},
		{"bench -workload fillbatch -batch 0", "-batch 0: must be between 1 and 1024"},
		{"crash -power -fail-sync 10", "-fail-sync 10: runs one store to one failed fdatasync and a reopen, on the in-memory filesystem; -power, -power-mode, -points and -trials do not apply"},
		{"crash -trials 3 -fail-sync 10", "-fail-sync 10: runs one store"},
		{"crash -write-buffer 67108865", "-write-buffer 67108865: must be between 0 and 67108864"},
		{"crash -sync nope", "-sync nope: unknown policy"},
		// The archive is the command line's, never a cell's.
		{"bench -archive=false", "bench: -archive belongs to the labserver command line, not to a run line"},
		{"probe -archive postgres://x/y", "probe: -archive belongs to the labserver command line"},
		{"crash -data /tmp", "crash: -data belongs to the labserver command line"},
	}
	for _, tt := range tests {
		t.Run(tt.line, func(t *testing.T) {
			err := Check(tt.line, DefaultLimits())
			if err == nil {
				t.Fatalf("Check(%q) = nil, want an error containing %q", tt.line, tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Check(%q) = %q, want it to contain %q", tt.line, err, tt.want)
			}
		})
	}
}

func TestLimitsBoundTheFlags(t *testing.T) {
	lim := Limits{MaxOps: 5000, MaxDuration: 5 * time.Second, MaxValueSize: 4096, MaxTotalBytes: 1 << 20, MaxThreads: 8, MaxTrials: 5, MaxRepeat: 3}
	tests := []struct{ line, want string }{
		{"bench -ops 5001", "-ops 5001: must be between 1 and 5000"},
		{"bench -duration 6s", "-duration 6s: must be a duration between 1ms and 5s"},
		{"bench -value-size 5000", "-value-size 5000: must be between 0 and 4096"},
		{"bench -threads 9", "-threads 9: each count must be between 1 and 8"},
		{"crash -trials 6", "-trials 6: must be between 1 and 5"},
		{"bench -repeat 4", "-repeat 4: must be between 1 and 3"},
		{"bench -ops 5000 -value-size 4096", "must be at most 1.0 MiB in total"},
	}
	for _, tt := range tests {
		err := Check(tt.line, lim)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Check(%q) = %v, want an error containing %q", tt.line, err, tt.want)
		}
	}
	if err := Check("labserver bench -ops 5000 -value-size 100 -threads 8", lim); err != nil {
		t.Errorf("a line within the limits: %v", err)
	}
}

func TestParseFillsEveryDefaultAndRoundTrips(t *testing.T) {
	tests := []struct {
		line string
		want string // canonical line
	}{
		{"bench", "bench -engine kv -sync always -workload fillrandom -ops 1000 -threads 1 -value-size 128 -keys 1000 -dist uniform -warmup 100"},
		{"labserver  bench -engine kv -sync batch:64 -workload fillrandom -ops 8000",
			"bench -engine kv -sync batch:64 -workload fillrandom -ops 8000 -threads 1 -value-size 128 -keys 8000 -dist uniform -warmup 800"},
		{"bench --ops=50000 -warmup=0", "bench -engine kv -sync always -workload fillrandom -ops 50000 -threads 1 -value-size 128 -keys 50000 -dist uniform -warmup 0"},
		{"sweep -engine kv -sync group -threads 1,2,4,8,16 -duration 3s",
			"sweep -engine kv -sync group -workload fillrandom -duration 3s -threads 1,2,4,8,16 -value-size 128 -keys 100000 -dist uniform -warmup 100"},
		{"bench -engine kv,null -sync periodic:10ms -rate 500 -dishonest-no-warmup",
			"bench -engine kv,null -sync periodic:10ms -workload fillrandom -ops 1000 -threads 1 -value-size 128 -keys 1000 -dist uniform -warmup 100 -rate 500 -dishonest-no-warmup"},
		{"bench -ops 500 -repeat 5", "bench -engine kv -sync always -workload fillrandom -ops 500 -threads 1 -value-size 128 -keys 500 -dist uniform -warmup 50 -repeat 5"},
		{"probe", "probe -ops 2000 -duration 1s -value-size 128"},
		{"model -sync batch:64", "model -sync batch:64"},
		{"crash -sync batch:100 -trials 20 -power", "crash -sync batch:100 -trials 20 -power"},
		{"crash -sync none -power -power-mode dirent", "crash -sync none -trials 10 -power -power-mode dirent"},
		{"crash -sync none -write-buffer 4096", "crash -sync none -trials 10 -write-buffer 4096"},
		{"crash -points -power -sync batch:16 -power-mode reorder", "crash -sync batch:16 -power -power-mode reorder -points"},
		{"crash -fail-sync 1000 -sync batch:16", "crash -sync batch:16 -fail-sync 1000"},
		{"bench -workload fillbatch -ops 100", "bench -engine kv -sync always -workload fillbatch -batch 16 -ops 100 -threads 1 -value-size 128 -keys 1600 -dist uniform -warmup 10"},
	}
	for _, tt := range tests {
		s, err := ParseSpec(tt.line, DefaultLimits())
		if err != nil {
			t.Errorf("ParseSpec(%q): %v", tt.line, err)
			continue
		}
		if got := s.String(); got != tt.want {
			t.Errorf("ParseSpec(%q).String()\n got %s\nwant %s", tt.line, got, tt.want)
		}
		// The canonical line parses back to itself.
		s2, err := ParseSpec(s.String(), DefaultLimits())
		if err != nil || s2.String() != s.String() {
			t.Errorf("canonical line %q does not round-trip: %v %v", s.String(), err, s2)
		}
	}
}

// The list of flags an unknown flag's error gives is one a person can
// read: over short lines, without the flags that break the rules on
// purpose (the lessons' cells that show a broken rule name them).
func TestUnknownFlagListReadable(t *testing.T) {
	for _, line := range []string{"bench -opz 3", "sweep -x 1", "crash -nope", "probe -q"} {
		_, err := ParseSpec(line, DefaultLimits())
		if err == nil {
			t.Fatalf("%s: no error", line)
		}
		msg := err.Error()
		if strings.Contains(msg, "dishonest") {
			t.Errorf("%s: the list names the dishonest flags: %s", line, msg)
		}
		for _, l := range strings.Split(msg, "\n") {
			if len(l) > 100 {
				t.Errorf("%s: a line of %d characters: %q", line, len(l), l)
			}
		}
	}
}
