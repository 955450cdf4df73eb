package peers

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"kvlab/harness"
	"kvlab/harness/harnesstest"
)

func TestPgSyncStandbyNames(t *testing.T) {
	for _, tt := range []struct {
		n      int
		quorum string
		want   string
	}{
		{1, "any", "s1"},
		{2, "any", "ANY 1 (s1, s2)"},
		{2, "first", "FIRST 1 (s1, s2)"},
	} {
		if got := pgSyncStandbyNames(tt.n, tt.quorum); got != tt.want {
			t.Errorf("pgSyncStandbyNames(%d, %s) = %q, want %q", tt.n, tt.quorum, got, tt.want)
		}
	}
}

// TestReplicationFlags checks the replicated engines' flags on lines:
// what they refuse, with what message, and what a good line prints.
func TestReplicationFlags(t *testing.T) {
	bad := []struct{ line, want string }{
		{"bench -engine kv -replicas 2", "applies to the replicated engines"},
		{"bench -engine kv -net-delay 1ms", "applies to the replicated engines"},
		{"bench -engine pg-sync -replicas 3", "-replicas 3: -engine pg-sync takes 1 or 2"},
		{"bench -engine pg-sync -quorum first", "needs -replicas 2"},
		{"bench -engine pg-sync -replicas 2 -quorum most", "allowed: any, first"},
		{"bench -engine pg-sync -sync group", "-engine pg-sync takes always"},
		{"bench -engine kv -sync remote_write", "remote_write"},
		{"bench -engine pg-sync,kv -sync remote_write", "remote_write"},
		{"bench -engine pg-sync -net-client", "needs a delay"},
		{"bench -engine pg-sync -net moon", "allowed: same-rack | one-region | cross-region"},
		{"bench -engine pg-sync -net-delay 2s", "must be a duration between 0s and 500ms"},
	}
	for _, tt := range bad {
		_, err := harness.ParseSpec(tt.line, harness.DefaultLimits())
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error = %v, want one saying %q", tt.line, err, tt.want)
		}
	}
	good := []struct{ line, want string }{
		{"bench -engine pg-sync -replicas 2 -quorum first -sync remote_apply -net one-region", "-sync remote_apply -replicas 2 -quorum first -net one-region"},
		{"bench -engine pg-sync -net-delay 2ms -net-jitter 500us -net-client", "-net-delay 2ms -net-jitter 500µs -net-client"},
	}
	for _, tt := range good {
		s, err := harness.ParseSpec(tt.line, harness.DefaultLimits())
		if err != nil {
			t.Errorf("%s: %v", tt.line, err)
			continue
		}
		if got := s.String(); !strings.Contains(got, tt.want) {
			t.Errorf("%s printed as %q, want it to hold %q", tt.line, got, tt.want)
		}
	}
}

// benchReplicated runs one bench line on a replicated engine in a
// directory PostgreSQL (as nobody) can reach, and decodes its result.
func benchReplicated(t *testing.T, line string) (*harness.BenchResult, string) {
	t.Helper()
	dir := openDir(t)
	raw, err := harnesstest.Exec(context.Background(), line+" -format json", harness.Env{Dir: dir})
	if err != nil {
		t.Fatalf("%s: %v", line, err)
	}
	var r harness.BenchResult
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatalf("decoding %s: %v", raw, err)
	}
	if r.Replication == nil {
		t.Fatalf("%s: no replication object in %s", line, raw)
	}
	return &r, dir
}

// checkNoServers fails when a process still runs whose command line
// names dir: a server that outlived its run (Linux only).
func checkNoServers(t *testing.T, dir string) {
	t.Helper()
	if runtime.GOOS != "linux" {
		return
	}
	// A stopped server may take a moment to be reaped.
	for range 50 {
		left := serversUnder(dir)
		if len(left) == 0 {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Errorf("processes still running with %s on their command line: %v", dir, serversUnder(dir))
}

func serversUnder(dir string) []string {
	var left []string
	ms, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, m := range ms {
		b, err := os.ReadFile(m)
		if err == nil && strings.Contains(string(b), dir) {
			left = append(left, strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	return left
}

// TestPgSyncEngine starts a primary with two standbys under ANY 1 and
// kills s1 a second into a 2-second run: the result names the members
// and their states, the primary flushed its WAL once per commit (one
// client), and commits went on after the kill (the quorum of one left).
func TestPgSyncEngine(t *testing.T) {
	requirePostgres(t)
	r, dir := benchReplicated(t, "bench -engine pg-sync -replicas 2 -quorum any -sync always -duration 2s -warmup 2 -kill follower@1s")
	rep := r.Replication
	if rep.Leader != "primary" || len(rep.Members) != 3 {
		t.Fatalf("leader %q, %d members; want primary and 3: %+v", rep.Leader, len(rep.Members), rep)
	}
	if !strings.Contains(rep.Commit, "ANY 1 (s1, s2)") || !strings.Contains(rep.Commit, "synchronous_commit = on") {
		t.Errorf("commit = %q, want synchronous_commit = on and ANY 1 (s1, s2)", rep.Commit)
	}
	s1, s2 := rep.Members[1], rep.Members[2]
	if s1.Name != "s1" || s1.KilledAfterNs < int64(time.Second) || !strings.Contains(s1.State, "killed") {
		t.Errorf("s1 = %+v, want it killed at least 1s into the run", s1)
	}
	if s2.Role != "standby" || s2.State != "streaming, quorum" {
		t.Errorf("s2: role %q state %q, want a standby streaming, quorum", s2.Role, s2.State)
	}
	commits := r.Latency["put"].Count
	p := rep.Members[0]
	if !p.FlushesCounted || p.Flushes < commits || p.Flushes > commits+20 {
		t.Errorf("primary: %d WAL flushes (counted %v) for %d commits from one client, want %d..%d", p.Flushes, p.FlushesCounted, commits, commits, commits+20)
	}
	var after int64
	for _, tp := range r.Timeline {
		if tp.Second >= 2 {
			after += tp.Ops
		}
	}
	if after == 0 {
		t.Errorf("no commits after s1 was killed: timeline %+v", r.Timeline)
	}
	checkNoServers(t, dir)
}

// TestPgSyncDelay puts 10 ms each way between the standby and the
// primary: a synchronous commit cannot return before its WAL has gone to
// the standby and the standby's answer has come back, so every commit
// takes at least 20 ms, and so does the round trip the result reports
// (a lower bound: a timer never fires early).
func TestPgSyncDelay(t *testing.T) {
	requirePostgres(t)
	const delay = 10 * time.Millisecond
	r, dir := benchReplicated(t, "bench -engine pg-sync -sync always -ops 15 -warmup 1 -net-delay 10ms")
	n := r.Replication.Net
	if n == nil || n.RTTSamples == 0 || n.RTTP50Ns < int64(2*delay) || n.DelayNs != int64(delay) {
		t.Fatalf("net = %+v, want a round trip of at least %v measured through the proxy", n, 2*delay)
	}
	put := r.Latency["put"]
	if put == nil || put.Count != 15 {
		t.Fatalf("put latency = %+v, want 15 commits", put)
	}
	if put.P50Ns < int64(2*delay) {
		t.Errorf("commit p50 %v through a %v proxy, want at least the round trip %v", time.Duration(put.P50Ns), delay, 2*delay)
	}
	checkNoServers(t, dir)
}

// TestPgSyncKillLeader kills the primary a second into a 3-second run
// under synchronous_commit = on: PostgreSQL promotes no standby, so the
// writes stop (the run goes on to its end and says so, with no new
// leader), and every write the primary acknowledged is on the standby,
// which has flushed it before the primary answered.
func TestPgSyncKillLeader(t *testing.T) {
	requirePostgres(t)
	r, dir := benchReplicated(t, "bench -engine pg-sync -sync always -duration 3s -warmup 2 -kill leader@1s")
	f := r.Replication.Failover
	if f == nil {
		t.Fatalf("no failover report: %+v", r.Replication)
	}
	if f.Killed != "primary" || !f.WritesStopped || f.NewLeader != "" || !strings.Contains(f.What, "does not fail over") {
		t.Errorf("failover = %+v, want the primary killed, writes stopped, no new leader", f)
	}
	c := f.AckCheck
	if c == nil || c.Error != "" || c.Keys == 0 || c.Lost != 0 || !strings.Contains(c.ReadFrom, "s1") {
		t.Errorf("ack check = %+v, want every acknowledged write read back from s1, none lost", c)
	}
	if r.WallSeconds < 3 {
		t.Errorf("wall %.2fs, want the run's clock to go on to -duration 3s after the writes stopped", r.WallSeconds)
	}
	var before, late int64
	for _, tp := range r.Timeline {
		switch {
		case tp.Second == 1:
			before += tp.Ops
		case tp.Second >= 3:
			late += tp.Ops
		}
	}
	if before == 0 || late != 0 {
		t.Errorf("commits in the first second %d, from the third on %d; want some, then none: %+v", before, late, r.Timeline)
	}
	if p := r.Replication.Members[0]; p.Name != "primary" || p.KilledAfterNs < int64(time.Second) {
		t.Errorf("primary %+v, want it killed at least 1s in", p)
	}
	checkNoServers(t, dir)
}
