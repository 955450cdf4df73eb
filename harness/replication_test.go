package harness

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestNetDeviceFlushes(t *testing.T) {
	ptr := func(n int64) *int64 { return &n }
	// 300 flushes in 2 s, 50/s of them the idle members': 200 for 100 commits.
	rep := &ReplicationReport{}
	netDeviceFlushes(rep, 50, "", &DeviceIO{FlushRequests: ptr(300)}, 2, 100)
	if rep.DeviceFlushesPerCommit == nil || *rep.DeviceFlushesPerCommit != 2 || *rep.DeviceIdleFlushesPerSec != 50 {
		t.Errorf("net device flushes = %+v, want 2 per commit over 50/s idle", rep)
	}
	// A busier idle window than the run never gives negative flushes.
	rep = &ReplicationReport{}
	netDeviceFlushes(rep, 500, "", &DeviceIO{FlushRequests: ptr(300)}, 2, 100)
	if rep.DeviceFlushesPerCommit == nil || *rep.DeviceFlushesPerCommit != 0 {
		t.Errorf("idle busier than the run: %v, want 0", rep.DeviceFlushesPerCommit)
	}
	for _, tt := range []struct {
		why  string
		dev  *DeviceIO
		want string
	}{
		{"tmp is on tmpfs", nil, "tmpfs"},
		{"", &DeviceIO{}, "no flush count"},
	} {
		rep = &ReplicationReport{}
		netDeviceFlushes(rep, 1, tt.why, tt.dev, 2, 100)
		if rep.DeviceFlushesPerCommit != nil || !strings.Contains(rep.DeviceUnavailable, tt.want) {
			t.Errorf("why %q: %+v, want no figure and %q", tt.why, rep, tt.want)
		}
	}
}

func TestReplicationLine(t *testing.T) {
	pc, idle := 1.5, 3.0
	r := &BenchResult{Replication: &ReplicationReport{Leader: "m1",
		Members: []ReplicaMember{{Name: "m1", Role: "leader", FlushesCounted: true, FlushesPerCommit: 1}, {Name: "m0", Role: "follower"}},
		Net:     &NetReport{DelayNs: 1e6, RTTP50Ns: 2.1e6, RTTP99Ns: 3e6}, DeviceFlushesPerCommit: &pc, DeviceIdleFlushesPerSec: &idle}}
	got := replicationLine(r)
	for _, want := range []string{"leader m1", "m1 (leader) 1.00 flushes/commit", "m0 (follower)", "device 1.50 flushes/commit", "RTT through the proxy p50 2.10 ms"} {
		if !strings.Contains(got, want) {
			t.Errorf("replicationLine = %q, want it to hold %q", got, want)
		}
	}
	if replicationLine(&BenchResult{}) != "" {
		t.Errorf("a run of another engine got a replication line")
	}
}

func TestReplicationModel(t *testing.T) {
	probe := &ProbeBrief{FdatasyncNs: 2e6}
	for _, tt := range []struct {
		waits string
		rtt   int64
		want  float64
	}{
		{"leader_only", 10e6, 2e6},
		{"follower_write", 10e6, 10e6},
		{"follower_write", 1e6, 2e6}, // the leader's flush is the longer
		{"follower_flush", 10e6, 12e6},
		{"follower_flush", 0, 2e6},
	} {
		rep := &ReplicationReport{WaitsFor: tt.waits}
		if tt.rtt > 0 {
			rep.Net = &NetReport{RTTP50Ns: tt.rtt}
		}
		replicationModel(rep, probe, "etcd")
		if rep.ModelCommitNs != tt.want {
			t.Errorf("%s, RTT %d ns: model %v ns, want %v", tt.waits, tt.rtt, rep.ModelCommitNs, tt.want)
		}
	}
	for _, tt := range []struct {
		waits string
		want  float64
	}{{"follower_write", 12e6}, {"follower_flush", 14e6}} {
		rep := &ReplicationReport{WaitsFor: tt.waits, LeaderFlushFirst: true, Net: &NetReport{RTTP50Ns: 10e6}}
		replicationModel(rep, probe, "etcd")
		if rep.ModelCommitNs != tt.want {
			t.Errorf("%s after the leader's flush: model %v ns, want %v", tt.waits, rep.ModelCommitNs, tt.want)
		}
	}
	// pg-sync pays the probe's overwrite case (its WAL segments are
	// zero-filled when made), etcd the append case.
	both := &ProbeBrief{FdatasyncNs: 2e6, FdatasyncOverwriteNs: 1e6}
	pg := &ReplicationReport{WaitsFor: "follower_flush", LeaderFlushFirst: true}
	replicationModel(pg, both, "pg-sync")
	et := &ReplicationReport{WaitsFor: "follower_flush"}
	replicationModel(et, both, "etcd")
	if pg.ModelCommitNs != 2e6 || et.ModelCommitNs != 2e6 {
		t.Errorf("pg-sync %v, etcd %v; want 2 × 1 ms (overwrite) and 2 ms (append)", pg.ModelCommitNs, et.ModelCommitNs)
	}
	rep := &ReplicationReport{WaitsFor: "follower_flush"}
	replicationModel(rep, &ProbeBrief{}, "etcd")
	if rep.ModelCommitNs != 0 {
		t.Errorf("no probe figure: model %v, want none", rep.ModelCommitNs)
	}
}

// TestKillAtRecordsWhatItKilled: the fault fires once, after its delay
// from the first Arm, and Killed says what it killed and when; a later
// Arm does not start a second countdown, and Disarm before the delay
// stops it.
func TestKillAtRecordsWhatItKilled(t *testing.T) {
	k := &KillAt{After: 20 * time.Millisecond}
	var fired atomic.Int32
	kill := func() string { fired.Add(1); return "s1" }
	k.Arm(kill)
	k.Arm(kill)
	deadline := time.Now().Add(10 * time.Second)
	for name, _ := k.Killed(); name == "" && time.Now().Before(deadline); name, _ = k.Killed() {
		time.Sleep(time.Millisecond)
	}
	name, after := k.Killed()
	if name != "s1" || after < 20*time.Millisecond || fired.Load() != 1 {
		t.Errorf("Killed() = %q after %v, fired %d times; want s1 after at least 20ms, once", name, after, fired.Load())
	}
	k.Disarm()

	stopped := &KillAt{After: time.Hour}
	stopped.Arm(kill)
	stopped.Disarm()
	if name, _ := stopped.Killed(); name != "" {
		t.Errorf("a disarmed countdown killed %q", name)
	}
	never := &KillAt{}
	never.Arm(kill)
	if name, _ := never.Killed(); name != "" || fired.Load() != 1 {
		t.Errorf("After 0 killed %q (fired %d)", name, fired.Load())
	}
}
