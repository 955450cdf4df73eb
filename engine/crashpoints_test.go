package engine_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"kvlab/engine"
	"kvlab/engine/crashtest"
)

// pointPolicies are the policies the crash-point tests enumerate. The
// periodic timer must not fire during a run for its operations to repeat
// exactly, so periodic syncs here only where every policy does (rotation,
// compaction, Close); TestPowerLoss covers its timer. "none/wbuf300" runs
// "none" with a 300-byte write buffer, so the buffer also goes to the OS
// when full, between sync points; "batch:4/wbuf300" does so between
// batch:4's fdatasyncs, which must still come every 4th write.
// "periodic:10ms/tick5" fires periodic's timer after every 5th step
// (PointsConfig.TickEvery), so its syncs are enumerated too;
// "group/followers3" commits the writes in groups of four writers queued
// behind one another (PointsConfig.Followers).
var pointPolicies = []string{"always", "group", "group/followers3", "batch:4", "batch:4/wbuf300", "periodic:1m", "periodic:10ms/tick5", "none", "none/wbuf300"}

// pointConfig is the enumeration of one of pointPolicies.
func pointConfig(t *testing.T, p string) crashtest.PointsConfig {
	name, wbuf, tick, followers := p, 0, 0, 0
	if n, ok := strings.CutSuffix(p, "/wbuf300"); ok {
		name, wbuf = n, 300
	}
	if n, ok := strings.CutSuffix(p, "/tick5"); ok {
		name, tick = n, 5
	}
	if n, ok := strings.CutSuffix(p, "/followers3"); ok {
		name, followers = n, 3
	}
	pol, err := engine.ParseSync(name)
	if err != nil {
		t.Fatal(err)
	}
	return crashtest.PointsConfig{Sync: pol, WriteBuffer: wbuf, TickEvery: tick, Followers: followers}
}

// fullPoints reports whether make crash asked for the full enumeration.
func fullPoints() bool { return os.Getenv("KVLAB_CRASH_TRIALS") != "" }

// runPoints runs one enumeration and fails the test for every crash that
// broke the invariant, including every reopen that refused the crashed
// store as corrupt: a power cut that lost nothing durable must leave a
// store that opens (sync marks, syncmark.go, let recovery tell a torn
// unsynced tail from damaged durable data).
func runPoints(t *testing.T, cfg crashtest.PointsConfig) crashtest.PointsReport {
	t.Helper()
	rep, err := crashtest.RunPoints(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range rep.Findings {
		t.Error(f)
	}
	for _, f := range rep.Refusals {
		t.Error(f)
	}
	if !rep.OK() {
		t.Errorf("%d of %d crash points broke the invariant: lost %d durable writes (%d resurrected deletes), %d corrupt, %d unwritten, %d failed reopens, %d inconsistent reopens, %d of %d damaged images not refused",
			len(rep.Findings), rep.Points, rep.Lost, rep.Resurrected, rep.Corrupt, rep.Unwritten, rep.Failed, rep.Inconsistent, rep.Undetected, rep.Damaged)
	}
	if rep.Writes == 0 || rep.Ops < 20 {
		t.Errorf("the workload did %d filesystem ops and acknowledged %d writes: too small to test anything", rep.Ops, rep.Writes)
	}
	if rep.Damaged == 0 && cfg.Stride <= 1 {
		t.Errorf("no crash image had a promised write to damage where recovery must notice: the damage check checked nothing")
	}
	return rep
}

// secondSteps is the length of the second run after a first crash: long
// enough to rotate a 4 KiB segment and reach a compaction (after 50
// steps) after the recovery.
const secondSteps = 55

// logPoints logs an enumeration's counts, for the closing figures of make
// crash.
func logPoints(t *testing.T, name string, rep crashtest.PointsReport) {
	t.Helper()
	t.Logf("%s: %d ops, %d crash points, %d acked, %d promised, %d lost_acked, %d damaged images refused", name, rep.Ops, rep.Points, rep.Writes, rep.DurableAcked, rep.LostAcked, rep.Damaged)
}

// TestCrashPointsPower cuts the power after every filesystem operation of
// a workload that rotates segments, writes hints and compacts, under every
// policy and every power mode, and checks the invariant after each cut.
// After some of the cuts (every one in make crash) the store is reopened,
// written to long enough to rotate and compact again, and cut again after
// each operation of that second run.
func TestCrashPointsPower(t *testing.T) {
	modes := []engine.PowerMode{engine.PowerPrefix, engine.PowerReorder, engine.PowerPages, engine.PowerDirent}
	for _, p := range pointPolicies {
		for _, mode := range modes {
			t.Run(p+"/"+mode.String(), func(t *testing.T) {
				cfg := pointConfig(t, p)
				cfg.Mode, cfg.Seed, cfg.Second, cfg.SecondStride = mode, 11, secondSteps, 40
				if fullPoints() {
					cfg.Cuts, cfg.SecondStride = 4, 1
				}
				logPoints(t, p+" "+mode.String(), runPoints(t, cfg))
			})
		}
	}
}

// TestCrashPointsKill kills the process after every filesystem operation,
// tearing the write it interrupts (half of it reaches the page cache):
// everything handed to the filesystem survives, synced or not, so a kill
// may take only what the policy lets the write buffer hold (nothing under
// always and group, the last N-1 writes under batch:N, the buffer's bytes
// under periodic and none). Each kill is followed by a reopen, more writes
// and a second crash after each of their operations (Open's own
// included), in every power mode and as a kill (make test samples one
// per policy): the second crash finds what the first recovery left
// undurable, such as a segment whose directory entry was never synced.
func TestCrashPointsKill(t *testing.T) {
	seconds := []string{"prefix", "reorder", "pages", "dirent", "kill"}
	for i, p := range pointPolicies {
		for j, second := range seconds {
			if !fullPoints() && j != i%len(seconds) {
				continue
			}
			t.Run(p+"/then-"+second, func(t *testing.T) {
				cfg := pointConfig(t, p)
				cfg.Kill, cfg.TornKill, cfg.Seed, cfg.Second, cfg.SecondStride = true, true, 12, secondSteps, 6
				if second == "kill" {
					cfg.SecondKill = true
				} else {
					cfg.Mode, _ = engine.ParsePowerMode(second)
				}
				if fullPoints() {
					cfg.SecondStride = 1
				}
				logPoints(t, p+" kill, then "+second, runPoints(t, cfg))
			})
		}
	}
}

// pointVariants are the configurations the enumerations above leave out,
// each under the policies where it changes what is written: "none"'s
// default of plain appends (and appends under the policies that
// preallocate by default), zero-filled chunks that end inside a segment,
// no hint files, a reopen with another segment size or with hints
// toggled, empty values, and values larger than a segment.
var pointVariants = []struct {
	name     string
	policies []string
	set      func(*crashtest.PointsConfig)
}{
	{"append", []string{"none", "always", "batch:4"}, func(c *crashtest.PointsConfig) { c.Preallocate = -1 }},
	{"prealloc1000", []string{"always", "group", "batch:4/wbuf300"}, func(c *crashtest.PointsConfig) { c.Preallocate = 1000 }},
	{"nohints", []string{"always", "none/wbuf300"}, func(c *crashtest.PointsConfig) { c.NoHints = true }},
	{"reopen-8k-segments", []string{"always", "batch:4"}, func(c *crashtest.PointsConfig) { c.ReopenSegmentSize = 8 << 10 }},
	{"reopen-hints-off", []string{"always", "none"}, func(c *crashtest.PointsConfig) { c.ReopenToggleHints = true }},
	{"reopen-hints-on", []string{"group"}, func(c *crashtest.PointsConfig) { c.NoHints, c.ReopenToggleHints = true, true }},
	{"empty-values", []string{"always", "batch:4"}, func(c *crashtest.PointsConfig) { c.EmptyEvery = 3 }},
	{"big-values", []string{"always", "group", "none/wbuf300"}, func(c *crashtest.PointsConfig) { c.BigEvery = 10 }},
}

// TestCrashPointsConfigs enumerates pointVariants: a power cut in each
// mode and a torn kill after every operation, each followed on some
// points by a reopen and a second crash. make test samples: one kind of
// crash per configuration and policy, in turn, at every fourth
// operation.
func TestCrashPointsConfigs(t *testing.T) {
	crashes := []string{"prefix", "reorder", "pages", "dirent", "kill"}
	n := 0
	for _, v := range pointVariants {
		for _, p := range v.policies {
			n++
			for j, crash := range crashes {
				if !fullPoints() && j != n%len(crashes) {
					continue
				}
				t.Run(v.name+"/"+p+"/"+crash, func(t *testing.T) {
					cfg := pointConfig(t, p)
					v.set(&cfg)
					cfg.Seed, cfg.Second, cfg.Stride, cfg.SecondStride = 13, secondSteps, 4, 20
					if crash == "kill" {
						cfg.Kill, cfg.TornKill = true, true
					} else {
						cfg.Mode, _ = engine.ParsePowerMode(crash)
					}
					if fullPoints() {
						cfg.Stride, cfg.SecondStride = 1, 4
					}
					logPoints(t, v.name+" "+p+" "+crash, runPoints(t, cfg))
				})
			}
		}
	}
}

// TestCrashPointsBatches enumerates a workload where every third write
// is an atomic batch of three (DB.Apply) under every policy: a power cut
// in each mode and a torn kill after every operation (make test: every
// other operation, one kind of crash per policy in turn). Beside the
// usual invariant, no crash may leave a batch recovered in part.
func TestCrashPointsBatches(t *testing.T) {
	crashes := []string{"prefix", "reorder", "pages", "dirent", "kill"}
	for i, p := range pointPolicies {
		for j, crash := range crashes {
			if !fullPoints() && j != i%len(crashes) {
				continue
			}
			t.Run(p+"/"+crash, func(t *testing.T) {
				cfg := pointConfig(t, p)
				cfg.BatchEvery, cfg.Seed, cfg.Second, cfg.Stride, cfg.SecondStride = 3, 14, secondSteps, 2, 20
				if crash == "kill" {
					cfg.Kill, cfg.TornKill = true, true
				} else {
					cfg.Mode, _ = engine.ParsePowerMode(crash)
				}
				if fullPoints() {
					cfg.Stride, cfg.SecondStride = 1, 4
				}
				rep := runPoints(t, cfg)
				logPoints(t, "batches "+p+" "+crash, rep)
			})
		}
	}
}
