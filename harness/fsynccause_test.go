package harness

import (
	"strings"
	"testing"
)

// A kv run splits its fdatasyncs by cause, and the split accounts for
// every sync the harness timed: the causes sum to fsync_samples, commits
// are what the policy asks for, and fsyncs keeps its meaning (commit +
// seal; no compaction runs here).
func TestKVFsyncCausesSumToSamples(t *testing.T) {
	for _, c := range []struct {
		sync       string
		wantCommit int64
	}{
		{"always", 300},
		{"batch:10", 30},
		{"none", 0},
	} {
		t.Run(c.sync, func(t *testing.T) {
			r := bench(t, "bench -engine kv -sync "+c.sync+" -workload fillrandom -ops 300 -warmup 0 -dir "+t.TempDir())
			by := r.FsyncsByCause
			if by == nil {
				t.Fatal("no fsyncs_by_cause in a kv result")
			}
			var sum int64
			for _, n := range by {
				sum += n
			}
			if sum != r.FsyncSamples {
				t.Errorf("fsyncs_by_cause %v sums to %d, fsync_samples %d: want equal", by, sum, r.FsyncSamples)
			}
			if by["commit"] != c.wantCommit {
				t.Errorf("commit %d, want %d for 300 Puts under %s", by["commit"], c.wantCommit, c.sync)
			}
			if r.Fsyncs != by["commit"]+by["seal"] {
				t.Errorf("fsyncs %d, want commit %d + seal %d", r.Fsyncs, by["commit"], by["seal"])
			}
			// The first Put zero-fills the new segment under "always" and
			// "batch:N"; "none" appends (no preallocation by default).
			if want := map[bool]int64{true: 1, false: 0}[c.sync != "none"]; by["prealloc"] != want {
				t.Errorf("prealloc %d, want %d", by["prealloc"], want)
			}
		})
	}
}

// The table's fsync split: shown only where not every fdatasync was a
// commit, causes in a fixed order, zeros left out.
func TestFsyncSplitLine(t *testing.T) {
	for _, c := range []struct {
		name string
		by   map[string]int64
		want string
	}{
		{"not said", nil, ""},
		{"all commits", map[string]int64{"commit": 1000, "seal": 0, "prealloc": 0}, ""},
		{"none at all", map[string]int64{"commit": 0, "seal": 0}, ""},
		{"always with zero-fill", map[string]int64{"commit": 1001, "prealloc": 63, "seal": 0, "hint": 0},
			"fdatasyncs by cause: 1001 commit (the policy's own), 63 zero-fill (under the write lock: Puts queue behind it); 1064 in all"},
		{"none with a seal", map[string]int64{"commit": 0, "seal": 1, "hint": 1},
			"fdatasyncs by cause: 1 segment seal, 1 hint file; 2 in all"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := fsyncSplit(&BenchResult{FsyncsByCause: c.by}); got != c.want {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
	// And it is in the table.
	r := &BenchResult{Kind: "bench", Engine: "kv", Sync: "always", Fsyncs: 3, FsyncsCounted: true,
		FsyncsByCause: map[string]int64{"commit": 3, "prealloc": 1}}
	var b strings.Builder
	if err := writeBenchTable(&b, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "fdatasyncs by cause: 3 commit") {
		t.Errorf("table has no fsync split:\n%s", b.String())
	}
}
