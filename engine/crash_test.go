package engine_test

import (
	"context"
	"os"
	"strconv"
	"testing"

	"kvlab/engine"
	"kvlab/engine/crashtest"
)

// TestMain lets this test binary serve as the crash child: the SIGKILL
// trials re-execute it with KVLAB_CRASH_CHILD set.
func TestMain(m *testing.M) {
	crashtest.MaybeRunChild()
	os.Exit(m.Run())
}

// crashTrials is the number of trials per policy: 20, or
// KVLAB_CRASH_TRIALS (make crash sets 300).
func crashTrials(t *testing.T, def int) int {
	s := os.Getenv("KVLAB_CRASH_TRIALS")
	if s == "" {
		if testing.Short() {
			return def / 4
		}
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		t.Fatalf("KVLAB_CRASH_TRIALS=%q: want a positive integer", s)
	}
	return n
}

var crashPolicies = []string{"always", "group", "batch:16", "periodic:5ms", "none"}

// TestCrashSIGKILL kills a child writing under each policy at a random
// moment. The page cache survives a process kill, so every write the store
// had handed to the OS (WrittenSeq) must come back, and every write it
// acknowledged as durable; under always and group that is every
// acknowledged write. Under none, batch:N and periodic:D a write still in
// the store's write buffer may be lost. Nothing wrong may come back.
func TestCrashSIGKILL(t *testing.T) {
	for _, p := range crashPolicies {
		t.Run(p, func(t *testing.T) {
			pol, err := engine.ParseSync(p)
			if err != nil {
				t.Fatal(err)
			}
			rep, err := crashtest.Run(context.Background(), crashtest.Config{
				Sync: pol, Trials: crashTrials(t, 20), Dir: t.TempDir(),
			}, nil)
			if err != nil {
				t.Fatal(err)
			}
			checkReport(t, rep)
			if rep.LostWritten != 0 {
				t.Errorf("lost %d writes handed to the OS to a process kill, want 0 (the kernel keeps written pages)", rep.LostWritten)
			}
			if acksDurable := pol.Mode == engine.SyncAlways || pol.Mode == engine.SyncGroup; acksDurable && rep.LostAcked != 0 {
				t.Errorf("lost %d acknowledged writes to a process kill under %s, want 0 (a Put returns after its fdatasync)", rep.LostAcked, p)
			}
			for _, tr := range rep.Trials {
				// batch:N writes its buffer before every fdatasync: a kill
				// loses at most the N-1 writes since the last one.
				if pol.Mode == engine.SyncBatch && tr.LostAcked > int64(pol.N-1) {
					t.Errorf("trial %d: lost %d acknowledged writes to a kill under %s, want at most %d", tr.N, tr.LostAcked, p, pol.N-1)
				}
			}
			if rep.Writes == 0 {
				t.Errorf("no writes acknowledged in %d trials: the workload did not run", len(rep.Trials))
			}
			t.Logf("%s: %d trials, %d writes acknowledged, %d durable, %d recovered, %d lost from the write buffer", p, len(rep.Trials), rep.Writes, rep.DurableAcked, rep.Recovered, rep.LostAcked)
		})
	}
}

// TestPowerLoss cuts the power of a MemFS under each policy. always and
// group lose nothing acknowledged; batch:N loses fewer than N
// acknowledged writes; none and periodic may lose what was not synced,
// but never a write the store reported durable.
func TestPowerLoss(t *testing.T) {
	cases := []struct {
		sync          string
		maxLostAcked  int64 // per trial; -1 = no bound
		writersForRun int
		mustLose      bool // the simulation must show some loss over all trials
	}{
		{"always", 0, 0, false},
		{"group", 0, 8, false},
		{"batch:1", 0, 0, false},
		{"batch:16", 15, 0, false},
		{"batch:64", 63, 0, false},
		{"periodic:2ms", -1, 0, false},
		{"none", -1, 0, true},
	}
	for _, c := range cases {
		t.Run(c.sync, func(t *testing.T) {
			pol, err := engine.ParseSync(c.sync)
			if err != nil {
				t.Fatal(err)
			}
			rep, err := crashtest.Run(context.Background(), crashtest.Config{
				Sync: pol, Trials: crashTrials(t, 20), Power: true, Writers: c.writersForRun, Seed: 42,
			}, nil)
			if err != nil {
				t.Fatal(err)
			}
			checkReport(t, rep)
			for _, tr := range rep.Trials {
				if c.maxLostAcked >= 0 && tr.LostAcked > c.maxLostAcked {
					t.Errorf("trial %d: lost %d acknowledged writes, want at most %d", tr.N, tr.LostAcked, c.maxLostAcked)
				}
			}
			if rep.Writes == 0 {
				t.Errorf("no writes acknowledged in %d trials: the workload did not run", len(rep.Trials))
			}
			if c.mustLose && rep.LostAcked == 0 {
				t.Errorf("%s lost no acknowledged write in %d power cuts; want some: is MemFS really dropping unsynced bytes?", c.sync, len(rep.Trials))
			}
			t.Logf("%s: %d trials, %d writes acknowledged, %d durable, %d recovered, %d acknowledged but lost", c.sync, len(rep.Trials), rep.Writes, rep.DurableAcked, rep.Recovered, rep.LostAcked)
		})
	}
}

func checkReport(t *testing.T, rep crashtest.Report) {
	t.Helper()
	for _, tr := range rep.Trials {
		if tr.Error != "" {
			t.Errorf("trial %d: reopen failed: %s", tr.N, tr.Error)
		}
		if tr.Lost != 0 || tr.Corrupt != 0 || tr.Unwritten != 0 {
			t.Errorf("trial %d: lost %d durable writes, %d corrupt, %d unwritten; want 0, 0, 0 (%+v)", tr.N, tr.Lost, tr.Corrupt, tr.Unwritten, tr)
		}
		if tr.Recovered < tr.DurableAcked {
			t.Errorf("trial %d: recovered %d < durable_acked %d", tr.N, tr.Recovered, tr.DurableAcked)
		}
	}
}

// TestCrashBackgroundCompaction cuts the power (and kills the process)
// while writers overwrite a store whose small segments and low
// AutoCompact threshold keep background compaction running most of the
// time, so most crashes land in the middle of one: no acknowledged write
// may be lost and no delete may come back.
func TestCrashBackgroundCompaction(t *testing.T) {
	for _, c := range []struct {
		sync  string
		power bool
	}{{"always", true}, {"group", true}, {"group", false}} {
		name := c.sync + "/kill"
		if c.power {
			name = c.sync + "/power"
		}
		t.Run(name, func(t *testing.T) {
			pol, err := engine.ParseSync(c.sync)
			if err != nil {
				t.Fatal(err)
			}
			rep, err := crashtest.Run(context.Background(), crashtest.Config{
				Sync: pol, Trials: crashTrials(t, 20), Power: c.power, Writers: 4, Seed: 39, Dir: t.TempDir(),
				Keys: 50, SegmentSize: 8 << 10, CompactEvery: -1, AutoCompact: 0.2,
			}, nil)
			if err != nil {
				t.Fatal(err)
			}
			checkReport(t, rep)
			if rep.LostAcked != 0 {
				t.Errorf("lost %d acknowledged writes under %s, which acknowledges only durable writes", rep.LostAcked, c.sync)
			}
			if rep.Writes == 0 {
				t.Errorf("no writes acknowledged in %d trials: the workload did not run", len(rep.Trials))
			}
			t.Logf("%s: %d trials, %d writes acknowledged, %d recovered", name, len(rep.Trials), rep.Writes, rep.Recovered)
		})
	}
}
