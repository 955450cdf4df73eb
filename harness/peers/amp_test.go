package peers

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"kvlab/harness"
	"kvlab/harness/harnesstest"
)

// Every local peer reports its write and space amplification, each with
// its source: pebble and SQLite count what they write (their adapters'
// counting filesystems), bbolt is measured on the device; space comes
// from the store's files against a full scan. An overwrite of the same
// keys cannot leave fewer bytes on disk than the live keys and values,
// and a B-tree that rewrites a page per commit writes several times the
// user's bytes.
func TestPeersReportAmplification(t *testing.T) {
	for _, tt := range []struct {
		engine, writeSrc, sync string
	}{
		// pebble under -sync none leaves its WAL's last block in memory
		// when the run ends (its LogWriter flushes asynchronously), so
		// on a fast machine its counted bytes could trail the user's:
		// under always every commit is written before it returns.
		{"pebble", "engine", "always"},
		{"sqlite", "engine", "none"},
		{"bbolt", "device", "none"}, // or device_net, or absent where the device is unknown
	} {
		t.Run(tt.engine, func(t *testing.T) {
			out, err := harnesstest.Exec(context.Background(), "bench -engine "+tt.engine+" -sync "+tt.sync+" -workload overwrite -ops 3000 -keys 2000 -value-size 100", harness.Env{Dir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			var r harness.BenchResult
			if err := json.Unmarshal(out, &r); err != nil {
				t.Fatal(err)
			}
			a := r.Amplification
			if a == nil || a.Space == nil || a.SpaceSource != "files" {
				t.Fatalf("amplification %+v, want space amplification from the files", a)
			}
			if *a.Space < 1 {
				t.Errorf("space amplification %.2f: fewer bytes on disk than the live keys and values", *a.Space)
			}
			if live := r.EngineMetrics["scanned_live_bytes"]; live != 2000*(16+100) {
				t.Errorf("scanned_live_bytes %d, want 2000 keys of 16 + 100 bytes = %d", live, 2000*116)
			}
			switch {
			case tt.writeSrc == "engine":
				if a.Write == nil || a.WriteSource != "engine" || *a.Write < 1 {
					t.Errorf("write amplification %v (%s), want at least 1 from the engine's counters", fmtRatio(a.Write), a.WriteSource)
				}
			case a.Write != nil:
				if a.WriteSource != "device" && a.WriteSource != "device_net" {
					t.Errorf("bbolt write amplification from %q, want the device", a.WriteSource)
				}
			}
		})
	}
}

// fmtRatio prints a ratio that may be absent.
func fmtRatio(r *float64) string {
	if r == nil {
		return "absent"
	}
	return fmt.Sprintf("%.3f", *r)
}
