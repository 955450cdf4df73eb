package lessons_test

import (
	"strings"
	"testing"
)

// Lesson 12's claims, each checked on the cell that shows it. The cells
// start real PostgreSQL and etcd servers; without them cellResults skips
// (or fails under KVLAB_REQUIRE_TOOLS=1). Each margin is below 1 when the
// claim holds, judged on the median of three runs when the first misses.

// "Replication's fsync tax": the synchronous commit's median is above the
// local one's, and the one standby streams as the synchronous one.
func TestStandbyTax(t *testing.T) {
	quizByID(t, lessonByPrefix(t, "12-"), "standby-ms")
	quizByID(t, lessonByPrefix(t, "12-"), "standby-ratio")
	margins := func(rs []any) []float64 {
		return []float64{1.1 * num(t, rs[0], "latency.put.p50_ns") / num(t, rs[1], "latency.put.p50_ns")}
	}
	marginsHold(t, "12-", "tax", margins, "always's p50 >= 1.1x local's")
	rs := cellResults(t, "12-", "tax")
	members, _ := rs[1].(map[string]any)["replication"].(map[string]any)["members"].([]any)
	if len(members) != 2 {
		t.Fatalf("tax: %d members, want the primary and s1", len(members))
	}
	if st, _ := members[1].(map[string]any)["state"].(string); st != "streaming, sync" {
		t.Errorf("tax: s1's state %q under always, want \"streaming, sync\" as the lesson says", st)
	}
}

// "The network in between": 5 ms each way moves etcd's median commit by
// about the round trip measured through the proxy (between half and twice
// it), and the delayed commit is at least that round trip's 10 ms.
func TestDelayAddsTheRoundTrip(t *testing.T) {
	quizByID(t, lessonByPrefix(t, "12-"), "delay-ms")
	margins := func(rs []any) []float64 {
		p0, p1 := num(t, rs[0], "latency.put.p50_ns"), num(t, rs[1], "latency.put.p50_ns")
		rtt := num(t, rs[1], "replication.net.rtt_p50_ns")
		delta := p1 - p0
		return []float64{0.5 * rtt / max(delta, 1), delta / (2 * rtt), 10e6 / p1}
	}
	marginsHold(t, "12-", "delay", margins, "delta >= half the RTT", "delta <= twice the RTT", "delayed p50 >= 10 ms")
}

// "Losing the leader": another member is elected, after about the
// election timeout (between half a second and four: 1 s, randomized up to
// twice that, plus the heartbeat the kill came after), writes resume on
// it, one Put waited through it (an interval's max at least half the
// pause), and no acknowledged write is lost.
func TestElectionInTheTimeline(t *testing.T) {
	quizByID(t, lessonByPrefix(t, "12-"), "election-s")
	r := cellResults(t, "12-", "election")[0]
	f, _ := r.(map[string]any)["replication"].(map[string]any)["failover"].(map[string]any)
	if f == nil {
		t.Fatal("election: no failover report")
	}
	killed, _ := f["killed"].(string)
	elected, _ := f["new_leader"].(string)
	if killed == "" || elected == "" || killed == elected {
		t.Errorf("election: killed %q, new leader %q: want another member elected", killed, elected)
	}
	el := num(t, r, "replication.failover.elected_after_ns")
	if el < 0.5e9 || el > 4e9 {
		t.Errorf("election: elected %.2fs after the kill, want between 0.5 and 4 s (etcd's 1 s timeout, randomized up to 2 s)", el/1e9)
	}
	if res := num(t, r, "replication.failover.resumed_after_ns"); res < el {
		t.Errorf("election: writes resumed %.2fs after the kill, before the election at %.2fs", res/1e9, el/1e9)
	}
	if lost := num(t, r, "replication.failover.ack_check.lost"); lost != 0 || num(t, r, "replication.failover.ack_check.keys") == 0 {
		t.Errorf("election: %v acknowledged writes lost, want 0 of some", lost)
	}
	slow := false
	for _, p := range r.(map[string]any)["timeline"].([]any) {
		if m, _ := p.(map[string]any)["max_ns"].(float64); m >= el/2 {
			slow = true
		}
	}
	if !slow {
		t.Errorf("election: no timeline interval whose max is at least half the %.2fs election", el/1e9)
	}
	if !strings.Contains(string(lessonByPrefix(t, "12-").Body), "`max_ns`: the Put that waited for the election") {
		t.Errorf("lesson 12 no longer names the timeline's max_ns as the Put that waited")
	}
}

// "The tail at scale": requests that share one store are slow together,
// so fewer units are past one request's p99 than 1 − 0.99^K predicts.
func TestFanoutTailSharedStore(t *testing.T) {
	quizByID(t, lessonByPrefix(t, "12-"), "hedge-tail")
	margins := func(rs []any) []float64 {
		return []float64{num(t, rs[0], "fanout.past_single_p99") / num(t, rs[0], "fanout.predicted")}
	}
	marginsHold(t, "12-", "fanout", margins, "past_single_p99 < 1 − 0.99^K")
}
