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
var pointPolicies = []string{"always", "group", "batch:4", "batch:4/wbuf300", "periodic:1m", "none", "none/wbuf300"}

// pointConfig is the enumeration of one of pointPolicies.
func pointConfig(t *testing.T, p string) crashtest.PointsConfig {
	name, wbuf := p, 0
	if n, ok := strings.CutSuffix(p, "/wbuf300"); ok {
		name, wbuf = n, 300
	}
	pol, err := engine.ParseSync(name)
	if err != nil {
		t.Fatal(err)
	}
	return crashtest.PointsConfig{Sync: pol, WriteBuffer: wbuf}
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
	if rep.Damaged == 0 {
		t.Errorf("no crash image had a promised write to damage where recovery must notice: the damage check checked nothing")
	}
	return rep
}

// TestCrashPointsPower cuts the power after every filesystem operation of
// a workload that rotates segments, writes hints and compacts, under every
// policy and every power mode, and checks the invariant after each cut.
// After some of the cuts (every one in make crash) the store is reopened,
// written to and cut again after each operation of that second run.
func TestCrashPointsPower(t *testing.T) {
	modes := []engine.PowerMode{engine.PowerPrefix, engine.PowerReorder, engine.PowerPages, engine.PowerDirent}
	for _, p := range pointPolicies {
		for _, mode := range modes {
			t.Run(p+"/"+mode.String(), func(t *testing.T) {
				cfg := pointConfig(t, p)
				cfg.Mode, cfg.Seed, cfg.Second, cfg.SecondStride = mode, 11, 6, 16
				if fullPoints() {
					cfg.Steps, cfg.Cuts, cfg.Second, cfg.SecondStride = 300, 4, 20, 4
				}
				rep := runPoints(t, cfg)
				t.Logf("%s %s: %d ops, %d crash points, %d acked, %d promised, %d lost_acked, %d damaged images refused", p, mode, rep.Ops, rep.Points, rep.Writes, rep.DurableAcked, rep.LostAcked, rep.Damaged)
			})
		}
	}
}

// TestCrashPointsKill kills the process after every filesystem operation:
// everything handed to the filesystem survives, synced or not, so a kill
// may take only what the policy lets the write buffer hold (nothing under
// always and group, the last N-1 writes under batch:N, the buffer's bytes
// under periodic and none). Each kill is followed by a
// reopen, more writes and a power cut after each of their operations
// (Open's own included): the second crash finds what the first recovery
// left undurable, such as a segment whose directory entry was never
// synced.
func TestCrashPointsKill(t *testing.T) {
	for _, p := range pointPolicies {
		t.Run(p, func(t *testing.T) {
			cfg := pointConfig(t, p)
			cfg.Kill, cfg.Seed, cfg.Second, cfg.SecondStride = true, 12, 6, 3
			if fullPoints() {
				cfg.Steps, cfg.Second, cfg.SecondStride = 300, 20, 1
			}
			rep := runPoints(t, cfg)
			t.Logf("%s kill: %d ops, %d crash points, %d acked, %d promised, %d lost_acked, %d damaged images refused", p, rep.Ops, rep.Points, rep.Writes, rep.DurableAcked, rep.LostAcked, rep.Damaged)
		})
	}
}
