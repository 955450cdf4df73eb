package peers

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"kvlab/harness"
	"kvlab/harness/harnesstest"
	"kvlab/internal/browsertest"
)

// requireEtcd skips (or, with KVLAB_REQUIRE_TOOLS=1, fails) a test when
// the etcd server binary is not installed.
func requireEtcd(t *testing.T) {
	t.Helper()
	if etcdBin() == "" {
		browsertest.Missing(t, ErrEtcdMissing.Error())
	}
}

func TestEtcdFlags(t *testing.T) {
	for _, tt := range []struct{ line, want string }{
		{"bench -engine etcd -replicas 1", "-replicas 1: -engine etcd takes 2 or 4"},
		{"bench -engine etcd -replicas 2 -quorum any", "chooses its quorum itself"},
		{"bench -engine etcd -sync none", "-engine etcd takes always only"},
		{"bench -engine etcd,pg-sync -sync remote_write", "-engine etcd takes always only"},
		{"bench -engine etcd -kill primary@1s", "allowed: follower@D or leader@D"},
		{"bench -engine etcd -kill leader@0s", "allowed: follower@D or leader@D"},
		{"bench -engine pg-sync -kill follower@1s", "would wait for it forever"},
		{"bench -engine kv -kill follower@1s", "applies to the replicated engines"},
	} {
		_, err := harness.ParseSpec(tt.line, harness.DefaultLimits())
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error = %v, want one saying %q", tt.line, err, tt.want)
		}
	}
	// A leader may be killed with one standby: it is the primary that goes.
	if sp, err := harness.ParseSpec("bench -engine pg-sync -kill leader@1s", harness.DefaultLimits()); err != nil || sp.KillLeader != time.Second || !strings.Contains(sp.String(), "-kill leader@1s") {
		t.Errorf("-kill leader@1s: %v, KillLeader %v", err, sp)
	}
	// A scaled line (a -short test) kills inside its shorter run.
	if got, err := harnesstest.ScaleLine("bench -engine etcd -duration 4s -kill leader@1s", 0.05); err != nil || !strings.Contains(got, "-kill leader@50ms") || !strings.Contains(got, "-duration 200ms") {
		t.Errorf("ScaleLine = %q, %v; want the kill scaled with the duration", got, err)
	}
	s, err := harness.ParseSpec("bench -engine etcd -replicas 4 -net cross-region", harness.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := s.String(), "-engine etcd -sync always -replicas 4 -net cross-region"; !strings.Contains(got, want) {
		t.Errorf("printed as %q, want it to hold %q", got, want)
	}
}

func TestEtcdTiming(t *testing.T) {
	for _, tt := range []struct {
		delay, jitter, hb, el time.Duration
	}{
		{0, 0, 100 * time.Millisecond, time.Second},                                           // etcd's defaults
		{15 * time.Millisecond, 1500 * time.Microsecond, 100 * time.Millisecond, time.Second}, // cross-region: RTT 33 ms, 2×RTT < 100 ms
		{100 * time.Millisecond, 0, 400 * time.Millisecond, 4 * time.Second},                  // RTT 200 ms: heartbeat 2×RTT
	} {
		hb, el := etcdTiming(tt.delay, tt.jitter)
		if hb != tt.hb || el != tt.el {
			t.Errorf("etcdTiming(%v, %v) = %v, %v; want %v, %v", tt.delay, tt.jitter, hb, el, tt.hb, tt.el)
		}
	}
}

func TestParseEtcdMetrics(t *testing.T) {
	text := `# HELP etcd_disk_wal_fsync_duration_seconds The latency distributions of fsync called by WAL.
# TYPE etcd_disk_wal_fsync_duration_seconds histogram
etcd_disk_wal_fsync_duration_seconds_bucket{le="0.001"} 3
etcd_disk_wal_fsync_duration_seconds_sum 0.022195458
etcd_disk_wal_fsync_duration_seconds_count 7
etcd_server_quota_backend_bytes 2.147483648e+09
`
	m, err := parseEtcdMetrics(strings.NewReader(text))
	if err != nil || m.walFsyncs != 7 || m.walFsyncSec != 0.022195458 || m.quotaBytes != 2147483648 {
		t.Errorf("parseEtcdMetrics = %+v, %v; want 7 fsyncs, 0.022195458 s, quota 2147483648", m, err)
	}
	if _, err := parseEtcdMetrics(strings.NewReader("go_goroutines 12\n")); err == nil {
		t.Errorf("metrics without the WAL fsync count: no error")
	}
}

// TestEtcdStore runs the store suite (reopen included: the members
// restart on the ports kept in the directory) on a 3-member cluster.
func TestEtcdStore(t *testing.T) {
	requireEtcd(t)
	suite(t, "etcd", "always")
}

// TestEtcdEngine runs a bench on a 3-member cluster with 5 ms each way
// between the members, and checks what the result says of the members:
// one leader among three, each member's WAL fsyncs counted (one client:
// every member fsyncs about once per commit), etcd's quota and snapshot
// settings as the members reported them; and that a commit, which waits
// for a follower's answer through two proxies, took at least the round
// trip (a lower bound: a timer never fires early).
func TestEtcdEngine(t *testing.T) {
	requireEtcd(t)
	const ops, delay = 30, 5 * time.Millisecond
	r, dir := benchReplicated(t, "bench -engine etcd -ops 30 -warmup 2 -net-delay 5ms")
	rep := r.Replication
	if len(rep.Members) != 3 {
		t.Fatalf("%d members, want 3: %+v", len(rep.Members), rep)
	}
	leaders := 0
	for _, m := range rep.Members {
		if m.Role == "leader" {
			leaders++
			if m.Name != rep.Leader {
				t.Errorf("member %s has role leader, but leader = %s", m.Name, rep.Leader)
			}
		}
		if !m.FlushesCounted || m.Flushes < ops/2 || m.Flushes > 2*ops+10 {
			t.Errorf("member %s (%s): %d WAL fsyncs (counted %v) for %d commits from one client, want %d..%d", m.Name, m.Role, m.Flushes, m.FlushesCounted, ops, ops/2, 2*ops+10)
		}
	}
	if leaders != 1 {
		t.Errorf("%d members with role leader, want 1", leaders)
	}
	if q := rep.Settings["quota-backend-bytes"]; !strings.HasPrefix(q, "2147483648 ") {
		t.Errorf("quota-backend-bytes = %q, want etcd's default 2147483648 as the member reported it", q)
	}
	if sc := rep.Settings["snapshot-count"]; sc == "" {
		t.Errorf("snapshot-count not reported: settings %v", rep.Settings)
	}
	if n := rep.Net; n == nil || n.RTTP50Ns < int64(2*delay) {
		t.Errorf("net = %+v, want a round trip of at least %v", n, 2*delay)
	}
	if put := r.Latency["put"]; put == nil || put.Count != ops || put.P50Ns < int64(2*delay) {
		t.Errorf("put latency = %+v, want %d commits with p50 at least %v", put, ops, 2*delay)
	}
	checkNoServers(t, dir)
}

// TestEtcdKillFollower kills a follower half a second into a 2-second
// run: the leader and the other follower go on committing (a majority of
// 3 is 2), and the result says whom it killed and when.
func TestEtcdKillFollower(t *testing.T) {
	requireEtcd(t)
	r, dir := benchReplicated(t, "bench -engine etcd -duration 2s -warmup 2 -kill follower@500ms")
	killed := 0
	for _, m := range r.Replication.Members {
		if m.KilledAfterNs > 0 {
			killed++
			if m.Role != "follower" || m.KilledAfterNs < int64(500*time.Millisecond) || m.FlushesCounted {
				t.Errorf("killed member %+v, want a follower killed at least 500ms in, its flushes not counted", m)
			}
		}
	}
	if killed != 1 {
		t.Errorf("%d members killed, want 1: %+v", killed, r.Replication.Members)
	}
	var after int64
	for _, tp := range r.Timeline {
		if tp.Second >= 2 {
			after += tp.Ops
		}
	}
	if after == 0 {
		t.Errorf("no commits after the follower was killed: timeline %+v", r.Timeline)
	}
	checkNoServers(t, dir)
}

// TestEtcdCancelled cancels a 30-second etcd run after a second, as a
// closed cell does: the run ends, and no member outlives it.
func TestEtcdCancelled(t *testing.T) {
	requireEtcd(t)
	dir := openDir(t)
	ctx, cancel := context.WithCancel(context.Background())
	timer := time.AfterFunc(time.Second, cancel)
	defer timer.Stop()
	if _, err := harnesstest.Exec(ctx, "bench -engine etcd -duration 30s -format json", harness.Env{Dir: dir}); err != nil && !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled run: %v", err)
	}
	checkNoServers(t, dir)
}

// TestEtcdKillLeader kills the leader a second into a 4-second run with
// two clients: the two members left elect another (etcd's election
// timeout is 1 s), the clients send their writes there, and every
// acknowledged write reads back from the new leader. The Put in flight
// at the kill waited out the election, so an interval of the timeline
// shows a max of at least half the election's length (its p99 may not:
// among hundreds of commits a second, two slow ones are under 1 %); and
// commits go on after it.
func TestEtcdKillLeader(t *testing.T) {
	requireEtcd(t)
	r, dir := benchReplicated(t, "bench -engine etcd -duration 4s -warmup 2 -threads 2 -kill leader@1s")
	f := r.Replication.Failover
	if f == nil {
		t.Fatalf("no failover report: %+v", r.Replication)
	}
	if f.Killed == "" || f.NewLeader == "" || f.NewLeader == f.Killed || r.Replication.Leader != f.NewLeader || f.WritesStopped {
		t.Errorf("failover = %+v, leader %s: want a new leader other than the killed one", f, r.Replication.Leader)
	}
	if f.KilledAfterNs < int64(time.Second) || f.ElectedAfterNs <= 0 || f.ResumedAfterNs < f.ElectedAfterNs {
		t.Errorf("killed at %v, elected %v later, resumed %v after: want a kill at least 1s in, then an election, then writes", time.Duration(f.KilledAfterNs), time.Duration(f.ElectedAfterNs), time.Duration(f.ResumedAfterNs))
	}
	c := f.AckCheck
	if c == nil || c.Error != "" || c.Keys == 0 || c.Acknowledged < int64(c.Keys) || c.Lost != 0 {
		t.Errorf("ack check = %+v, want every acknowledged write read back, none lost", c)
	}
	if put := r.Latency["put"]; put == nil || c == nil || put.Count > c.Acknowledged {
		t.Errorf("%v timed Puts, more than the %+v acknowledged", put, c)
	}
	var slow bool
	var after int64
	for _, tp := range r.Timeline {
		slow = slow || tp.MaxNs >= f.ElectedAfterNs/2
		if float64(tp.Second) > float64(f.KilledAfterNs+f.ResumedAfterNs)/1e9+1 {
			after += tp.Ops
		}
	}
	if !slow {
		t.Errorf("no timeline interval with a max of at least half the election's %v: %+v", time.Duration(f.ElectedAfterNs), r.Timeline)
	}
	if after == 0 {
		t.Errorf("no commits after writes resumed: timeline %+v", r.Timeline)
	}
	for _, m := range r.Replication.Members {
		if m.Name == f.Killed && (m.Role != "former leader" || m.KilledAfterNs == 0) {
			t.Errorf("killed member %+v, want role former leader and when", m)
		}
	}
	checkNoServers(t, dir)
}

// TestKillLeaderCancelled cancels a run, as a closed cell does, a second
// after -kill leader fired: etcd's clients are then waiting out the
// election, pg-sync's have stopped writing and wait for -duration. The
// run ends at once, and neither a server (the killed leader's orphaned
// children included) nor the run's directory outlives it.
func TestKillLeaderCancelled(t *testing.T) {
	for _, tt := range []struct {
		engine  string
		require func(*testing.T)
	}{
		{"etcd", requireEtcd},
		{"pg-sync", requirePostgres},
	} {
		t.Run(tt.engine, func(t *testing.T) {
			tt.require(t)
			dir := openDir(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			env := harness.Env{Dir: dir, Progress: func(p harness.Progress) {
				if p.Elapsed >= 1500*time.Millisecond {
					cancel()
				}
			}}
			start := time.Now()
			_, err := harnesstest.Exec(ctx, "bench -engine "+tt.engine+" -duration 60s -warmup 2 -kill leader@500ms -format json", env)
			if err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("cancelled run: %v", err)
			}
			if ctx.Err() == nil {
				t.Fatalf("the run ended (%v) before it was cancelled", err)
			}
			if d := time.Since(start); d > 50*time.Second {
				t.Errorf("the cancelled run took %v, want it to end well before its 60s", d)
			}
			checkNoServers(t, dir)
			if left, _ := os.ReadDir(dir); len(left) != 0 {
				t.Errorf("%d entries left in %s after the run: %v", len(left), dir, left)
			}
		})
	}
}
