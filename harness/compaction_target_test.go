package harness

import (
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

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

// verdict says whether a target was met.
func verdict(met bool) string {
	if met {
		return "met"
	}
	return "MISSED"
}

// testkvoff is kv with background compaction off, and otherwise the
// same store as kv: the other side of the latency target's rounds.
func init() {
	RegisterEngine("testkvoff", func(dir, sync string) (Store, error) {
		return openKVCompacting(dir, sync, 0)
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

	say("conditions: %d keys, 128-byte values, -sync none, one closed-loop client; load average %.1f at the start", keys, loadAverage())

	// Space: five overwrites of every key. Writes stall when the
	// compaction debt passes engine.DefaultStallDebt of the live bytes,
	// so the bytes on disk stay within 2x however fast the writer is.
	long := run("kv", 5*int64(keys))
	m := long.EngineMetrics
	space := 0.0
	if a := long.Amplification; a != nil && a.Space != nil {
		space = *a.Space
	}
	writeAmp := 0.0
	if a := long.Amplification; a != nil && a.Write != nil {
		writeAmp = *a.Write
	}
	say("space: overwrite of %d keys x 5: %s on disk, %s live: ratio %.2f (target at most 2: %s); %d background compactions, debt left %s, write amplification %.2f; %d write stalls, %s in all, of a %.1f s run (%.0f Puts/s)",
		keys, FormatBytes(m["disk_bytes"]), FormatBytes(m["live_bytes"]), space, verdict(space > 0 && space <= 2), m["background_compactions"],
		FormatBytes(m["compaction_debt_bytes"]), writeAmp, m["write_stalls"], time.Duration(m["write_stall_ns"]).Round(time.Millisecond), long.WallSeconds, long.UnitsPerSec)
	if space == 0 || space > 2 {
		// Not a speed: the stall bound holds the ratio on any machine.
		t.Errorf("space amplification %.2f after the overwrite run, want at most 2 (the write stalls bound it)", space)
	}

	// Latency: interleaved rounds, each a pair of overwrite runs of two
	// overwrites per key, one with background compaction, one without.
	// A round counts only if a background compaction completed during
	// the kv run's measured part: the counters are the store's since it
	// was opened after the preload (whose distinct keys leave no garbage,
	// nor can the 1,000 warm-up Puts make enough to start one).
	var ratios []float64
	for round := 1; round <= *compactionTarget; round++ {
		order := []string{"kv", "testkvoff"}
		if round%2 == 0 {
			order = []string{"testkvoff", "kv"}
		}
		p99 := map[string]int64{}
		var on map[string]int64
		for _, e := range order {
			r := run(e, 2*int64(keys))
			p99[e] = r.Latency["put"].P99Ns
			if e == "kv" {
				on = r.EngineMetrics
			}
		}
		ratio := float64(p99["kv"]) / float64(max(p99["testkvoff"], 1))
		say("round %d (%s first): Put p99 %d ns with background compaction (%d completed, %s copied, %d write stalls for %s), %d ns without: ratio %.2f",
			round, order[0], p99["kv"], on["background_compactions"], FormatBytes(on["compaction_bytes_written"]), on["write_stalls"],
			time.Duration(on["write_stall_ns"]).Round(time.Millisecond), p99["testkvoff"], ratio)
		if on["background_compactions"] == 0 {
			t.Errorf("round %d: no background compaction completed during the kv run (%s copied): its p99 is not a p99 while compacting; the round is left out", round, FormatBytes(on["compaction_bytes_written"]))
			continue
		}
		ratios = append(ratios, ratio)
	}
	if len(ratios) == 0 {
		t.Fatalf("no round overlapped a background compaction: no latency figure")
	}
	slices.Sort(ratios)
	med := calc.MedianOf(ratios)
	say("latency: median ratio of Put p99 compacting / not compacting over %d rounds: %.2f (target at most 2: %s; range %.2f-%.2f); load average %.1f at the end",
		len(ratios), med, verdict(med <= 2), ratios[0], ratios[len(ratios)-1], loadAverage())
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
