package peers

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"kvlab/harness"
	"kvlab/harness/harnesstest"
)

// benchResult is the part of a bench result the workload tests check.
type benchResult struct {
	Engine   string  `json:"engine"`
	Workload string  `json:"workload"`
	Ops      int64   `json:"ops"`
	Units    int64   `json:"units"`
	OpsPer   float64 `json:"ops_per_sec"`
	HitRate  *float64
	Latency  map[string]struct {
		Count int64 `json:"count"`
		P50   int64 `json:"p50_ns"`
		P99   int64 `json:"p99_ns"`
		Max   int64 `json:"max_ns"`
	} `json:"latency"`
	Fsyncs       int64 `json:"fsyncs"`
	FsyncSamples int64 `json:"fsync_samples"`
	FsyncP50Ns   int64 `json:"fsync_p50_ns"`
	FsyncP99Ns   int64 `json:"fsync_p99_ns"`
	FsyncMaxNs   int64 `json:"fsync_max_ns"`
}

func (r *benchResult) UnmarshalJSON(b []byte) error {
	type plain benchResult
	var aux struct {
		*plain
		HitRate *float64 `json:"hit_rate"`
	}
	aux.plain = (*plain)(r)
	if err := json.Unmarshal(b, &aux); err != nil {
		return err
	}
	r.HitRate = aux.HitRate
	return nil
}

// execBench runs one bench line through harness.Exec in a temporary dir.
func execBench(t *testing.T, line string) benchResult {
	t.Helper()
	raw, err := harnesstest.Exec(context.Background(), line, harness.Env{Dir: openDir(t)})
	if err != nil {
		t.Fatalf("Exec(%q): %v", line, err)
	}
	var r benchResult
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatalf("Exec(%q): decoding %s: %v", line, raw, err)
	}
	return r
}

// TestWorkloadsOnEveryEngine runs every workload at a small size on every
// registered engine and checks the result is sane: the counts add up and
// the percentiles are in order.
func TestWorkloadsOnEveryEngine(t *testing.T) {
	const units = 200
	for _, engineName := range harness.Engines() {
		for _, workload := range harness.Workloads {
			line := fmt.Sprintf("bench -engine %s -sync none -workload %s -ops %d -threads 2", engineName, workload, units)
			t.Run(engineName+"/"+workload, func(t *testing.T) {
				if workload == "reopen" {
					t.Skip("one open and close, not -ops units: TestReopenWorkload covers it")
				}
				if _, unordered := harness.Unordered(engineName); workload == "seekrandom" && unordered {
					// A hash index, a server reached by key: the run must refuse, naming why.
					_, err := harnesstest.Exec(context.Background(), line, harness.Env{Dir: t.TempDir()})
					if err == nil || !strings.Contains(err.Error(), "cannot scan keys in order") {
						t.Fatalf("Exec(%q): got error %v, want one saying %s cannot scan in order", line, err, engineName)
					}
					return
				}
				switch engineName {
				case "pg-sync", "etcd":
					// Each run starts a group of servers (seconds each); their
					// own tests run them (TestPgSyncEngine, TestEtcdEngine).
					t.Skip("a replicated engine: its own tests cover it")
				case "redis":
					requireRedis(t)
				case "postgres":
					requirePostgres(t)
				}
				r := execBench(t, line)
				if r.Engine != engineName || r.Workload != workload {
					t.Errorf("engine, workload = %s, %s; want %s, %s", r.Engine, r.Workload, engineName, workload)
				}
				if r.Units != units {
					t.Errorf("units = %d, want %d", r.Units, units)
				}
				opsPerUnit := int64(1)
				switch workload {
				case "updaterandom":
					opsPerUnit = 2 // a Get, then a Put
				case "fillbatch":
					opsPerUnit = 16 // -batch's default
				}
				if workload == "readwhilewriting" {
					// The readers do the units; a background writer's Puts
					// count as ops too, as many as it managed meanwhile.
					if got := r.Latency["get"].Count; got != units {
						t.Errorf("gets = %d, want %d", got, units)
					}
				} else if want := units * opsPerUnit; r.Ops != want {
					t.Errorf("ops = %d, want %d", r.Ops, want)
				}
				var counted int64
				for kind, l := range r.Latency {
					counted += l.Count
					if !(0 <= l.P50 && l.P50 <= l.P99 && l.P99 <= l.Max && l.Max > 0) {
						t.Errorf("latency %s: p50 %d, p99 %d, max %d; want 0 <= p50 <= p99 <= max, max > 0", kind, l.P50, l.P99, l.Max)
					}
				}
				if counted != r.Ops {
					t.Errorf("latency counts add up to %d, want ops = %d", counted, r.Ops)
				}
				if r.OpsPer <= 0 {
					t.Errorf("ops_per_sec = %v, want > 0", r.OpsPer)
				}
				// Every key was loaded before a readrandom, so every Get
				// finds one, except on the store that keeps nothing.
				if workload == "readrandom" {
					want := 1.0
					if storesNothing(engineName) {
						want = 0
					}
					if r.HitRate == nil || *r.HitRate != want {
						t.Errorf("hit_rate = %v, want %v", r.HitRate, want)
					}
				}
			})
		}
	}
}

// TestDurableRunCountsFsyncs checks, through the whole harness, that an
// always run on an engine that reports syncs made at least one per write.
func TestDurableRunCountsFsyncs(t *testing.T) {
	const units = 50
	for _, engineName := range []string{"kv", "pebble"} {
		t.Run(engineName, func(t *testing.T) {
			r := execBench(t, fmt.Sprintf("bench -engine %s -sync always -workload fillrandom -ops %d", engineName, units))
			if r.Fsyncs < units {
				t.Errorf("fsyncs = %d for %d durable writes, want at least %d", r.Fsyncs, units, units)
			}
		})
	}
}

// TestDurableRunTimesFsyncs checks that the engines whose syncs pass
// through a seam the harness wraps (kv's FS, pebble's vfs) report their
// latency distribution, and that bbolt, whose syncs do not, reports none
// rather than a made-up one.
func TestDurableRunTimesFsyncs(t *testing.T) {
	const units = 50
	for _, tt := range []struct {
		engine string
		timed  bool
	}{{"kv", true}, {"pebble", true}, {"bbolt", false}} {
		t.Run(tt.engine, func(t *testing.T) {
			r := execBench(t, fmt.Sprintf("bench -engine %s -sync always -workload fillrandom -ops %d", tt.engine, units))
			if !tt.timed {
				if r.FsyncSamples != 0 || r.FsyncP50Ns != 0 {
					t.Errorf("fsync_samples %d, fsync_p50_ns %d: want 0 for an engine whose syncs are not timed", r.FsyncSamples, r.FsyncP50Ns)
				}
				return
			}
			if r.FsyncSamples < units {
				t.Errorf("fsync_samples = %d for %d durable writes, want at least %d", r.FsyncSamples, units, units)
			}
			if !(0 < r.FsyncP50Ns && r.FsyncP50Ns <= r.FsyncP99Ns && r.FsyncP99Ns <= r.FsyncMaxNs) {
				t.Errorf("fsync p50 %d, p99 %d, max %d: want 0 < p50 <= p99 <= max", r.FsyncP50Ns, r.FsyncP99Ns, r.FsyncMaxNs)
			}
		})
	}
}

// TestPeersCarryDeviceIO: every engine's result carries the disk's own
// counters (or why there are none), read by the same runner, so a peer's
// writes per commit are measured, not assumed: a durable write reaches
// the device at least once.
func TestPeersCarryDeviceIO(t *testing.T) {
	const units = 50
	for _, engineName := range []string{"kv", "bbolt", "pebble"} {
		t.Run(engineName, func(t *testing.T) {
			raw, err := harnesstest.Exec(context.Background(), fmt.Sprintf("bench -engine %s -sync always -workload fillrandom -ops %d -warmup 0", engineName, units), harness.Env{Dir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			var r struct {
				DeviceIO *harness.DeviceIO `json:"device_io"`
			}
			if err := json.Unmarshal(raw, &r); err != nil {
				t.Fatal(err)
			}
			d := r.DeviceIO
			switch {
			case d == nil:
				t.Fatal("no device_io")
			case d.Unavailable != "":
				t.Logf("no device counters here: %s", d.Unavailable)
			case d.WriteRequests == nil || *d.WriteRequests < units:
				t.Errorf("device_io %+v: want at least %d write requests for %d durable writes", d, units, units)
			}
		})
	}
}
