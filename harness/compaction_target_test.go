package harness

import (
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"testing"

	"kvlab/engine"
	"kvlab/harness/calc"
)

// The background compaction's targets, measured by make bench (never by
// make test: they take minutes and a quiet disk):
//
//   - space: a long overwrite run on -compaction-keys keys keeps the
//     bytes on disk within 2x of the live bytes (kv's space
//     amplification at the end of the run);
//   - latency: the foreground Put p99 of an overwrite run with background
//     compaction on (and compacting) is within 2x of the p99 of the same
//     run with it off, in interleaved rounds (on, off, off, on, ...), the
//     ratio taken per round and its median reported.
var (
	compactionTarget = flag.Int("compaction-target", 0, "rounds of the background compaction targets (make bench); 0 skips them")
	compactionKeys   = flag.Int("compaction-keys", 1_000_000, "keys of the compaction targets' overwrite runs")
	compactionOut    = flag.String("compaction-out", "", "also write the compaction targets' report to this file")
)

// testkvoff is kv with background compaction off: the other side of the
// latency target's rounds.
func init() {
	RegisterEngine("testkvoff", func(dir, sync string) (Store, error) {
		p, err := engine.ParseSync(sync)
		if err != nil {
			return nil, err
		}
		db, err := engine.Open(dir, engine.Options{Sync: p})
		if err != nil {
			return nil, err
		}
		return kvStore{db, new(SyncTimes)}, nil
	})
}

func TestCompactionTargets(t *testing.T) {
	if *compactionTarget == 0 {
		t.Skip("make bench runs it: -compaction-target N (rounds)")
	}
	keys := *compactionKeys
	run := func(engineName string, ops int64) *BenchResult {
		t.Helper()
		cfg := runConfig{engine: engineName, sync: "none", workload: "overwrite", dist: "uniform", threads: 1,
			ops: ops, maxUnits: ops, exactCap: DefaultExactCap, valueSize: 128, keys: keys, warmup: 1000, dir: t.TempDir()}
		r, err := runOne(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	var out []string
	say := func(format string, args ...any) {
		line := fmt.Sprintf(format, args...)
		t.Log(line)
		out = append(out, line)
	}

	// Space: five overwrites of every key.
	long := run("kv", 5*int64(keys))
	m := long.EngineMetrics
	space := 0.0
	if a := long.Amplification; a != nil && a.Space != nil {
		space = *a.Space
	}
	say("space: overwrite of %d keys x 5 (value 128 B, -sync none): %s on disk, %s live: ratio %.2f (target at most 2; %d background compactions, debt left %s)",
		keys, FormatBytes(m["disk_bytes"]), FormatBytes(m["live_bytes"]), space, m["background_compactions"], FormatBytes(m["compaction_debt_bytes"]))

	// Latency: interleaved rounds, each a pair of overwrite runs of two
	// overwrites per key, one with background compaction, one without.
	var ratios []float64
	for round := 1; round <= *compactionTarget; round++ {
		order := []string{"kv", "testkvoff"}
		if round%2 == 0 {
			order = []string{"testkvoff", "kv"}
		}
		p99 := map[string]int64{}
		var compactions int64
		for _, e := range order {
			r := run(e, 2*int64(keys))
			p99[e] = r.Latency["put"].P99Ns
			if e == "kv" {
				compactions = r.EngineMetrics["background_compactions"]
			}
		}
		ratio := float64(p99["kv"]) / float64(max(p99["testkvoff"], 1))
		ratios = append(ratios, ratio)
		say("round %d (%s first): Put p99 %d ns compacting (%d background compactions), %d ns without: ratio %.2f",
			round, order[0], p99["kv"], compactions, p99["testkvoff"], ratio)
	}
	slices.Sort(ratios)
	say("latency: median ratio of Put p99 compacting / not compacting over %d rounds: %.2f (target at most 2; range %.2f-%.2f)",
		len(ratios), calc.MedianOf(ratios), ratios[0], ratios[len(ratios)-1])
	if *compactionOut != "" {
		f, err := os.Create(*compactionOut)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		for _, l := range out {
			fmt.Fprintln(f, l)
		}
	}
}
