package crashtest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"kvlab/engine"
)

// TestPromise pins the oracle to the policies' promises (the package
// comment): which acknowledged writes a power cut and a kill must keep.
func TestPromise(t *testing.T) {
	end := time.Unix(1000, 0)
	cases := []struct {
		sync   string
		wbuf   int
		closed bool
		ages   []time.Duration // per write, oldest first: how long before end it was acknowledged
		power  string          // per write: 'y' promised to survive a power cut
		kill   string          // per write: 'y' promised to survive a kill
	}{
		{"always", 0, false, ages(5), "yyyyy", "yyyyy"},
		{"group", 0, false, ages(5), "yyyyy", "yyyyy"},
		// batch:4 may lose the last 3 acknowledged writes, no more; its
		// default buffer (64 KiB) holds them all.
		{"batch:4", 0, false, ages(6), "yyy...", "yyy..."},
		{"batch:1", 0, false, ages(3), "yyy", "yyy"},
		{"batch:4", 0, true, ages(6), "yyyyyy", "yyyyyy"},
		// A 300-byte buffer holds at most two 120-byte records.
		{"batch:4", 300, false, ages(6), "yyy...", "yyyy.."},
		{"none", 300, false, ages(5), ".....", "yyy.."},
		{"none", 0, false, ages(5), ".....", "....."},
		{"none", -1, false, ages(5), ".....", "yyyyy"},
		{"none", 0, true, ages(3), "yyy", "yyy"},
		// periodic:10ms: what was acknowledged more than 10ms + fsyncBound
		// before the crash.
		{"periodic:10ms", 300, false, []time.Duration{3 * time.Second, fsyncBound + 11*time.Millisecond, fsyncBound, time.Millisecond}, "yy..", "yy.."},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s/wbuf%d/closed=%v", c.sync, c.wbuf, c.closed), func(t *testing.T) {
			pol, err := engine.ParseSync(c.sync)
			if err != nil {
				t.Fatal(err)
			}
			h := newHistory(PointsConfig{Sync: pol, WriteBuffer: c.wbuf, Keys: 1}.defaults())
			var acked []ref
			for _, age := range c.ages {
				acked = append(acked, ref{0, len(h.events[0])})
				h.events[0] = append(h.events[0], event{value: []byte("v"), size: 120, acked: true, at: end.Add(-age)})
			}
			h.promise(acked, end, 0, c.closed)
			var power, kill []byte
			for _, e := range h.events[0][1:] {
				power = append(power, ".y"[b2i(e.durable)])
				kill = append(kill, ".y"[b2i(e.killSafe)])
			}
			if string(power) != c.power || string(kill) != c.kill {
				t.Errorf("promised to survive a power cut %s, a kill %s; want %s and %s", power, kill, c.power, c.kill)
			}
		})
	}
}

// ages returns n acknowledgement ages, oldest first, all recent.
func ages(n int) []time.Duration {
	a := make([]time.Duration, n)
	for i := range a {
		a[i] = time.Duration(n-i) * time.Millisecond
	}
	return a
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestPromiseTicks: with TickEvery, periodic:D promises every write
// acknowledged before a completed sync of the timer, and no other.
func TestPromiseTicks(t *testing.T) {
	h := newHistory(PointsConfig{Sync: engine.SyncPolicy{Mode: engine.SyncPeriodic, Interval: 10 * time.Millisecond}, TickEvery: 5, Keys: 1}.defaults())
	var acked []ref
	for _, tick := range []int{0, 1, 2, 2} {
		acked = append(acked, ref{0, len(h.events[0])})
		h.events[0] = append(h.events[0], event{value: []byte("v"), size: 120, acked: true, tick: tick})
	}
	h.promise(acked, time.Now(), 2, false)
	var power []byte
	for _, e := range h.events[0][1:] {
		power = append(power, ".y"[b2i(e.durable)])
	}
	if string(power) != "yy.." {
		t.Errorf("after 2 of the timer's syncs, writes acknowledged after 0, 1, 2, 2 of them: promised %s, want yy..", power)
	}
}

// TestKillCheck: after a kill, a write promised to survive a kill (not a
// power cut) that did not come back is lost; after a power cut it is not.
func TestKillCheck(t *testing.T) {
	h := newHistory(PointsConfig{Keys: 1}.defaults())
	ev := []event{{durable: true, killSafe: true}, {value: []byte("v"), acked: true, killSafe: true}}
	for _, kill := range []bool{true, false} {
		var tr Trial
		h.checkKey(&tr, 0, ev, nil, engine.ErrNotFound, kill)
		if want := int64(b2i(kill)); tr.Lost != want {
			t.Errorf("kill=%v: the write is missing, lost %d, want %d", kill, tr.Lost, want)
		}
	}
}

// TestRunPointsEveryOperation: without second crashes, an enumeration
// crashes once after each of its operations, the last (Close's final
// fdatasync) included.
func TestRunPointsEveryOperation(t *testing.T) {
	for _, kill := range []bool{false, true} {
		rep, err := RunPoints(context.Background(), PointsConfig{Sync: engine.SyncPolicy{Mode: engine.SyncAlways}, Kill: kill, Steps: 20, Seed: 3})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Points != rep.Ops || !rep.OK() {
			t.Errorf("kill=%v: %d crash points for %d operations (OK %v), want one per operation, all OK", kill, rep.Points, rep.Ops, rep.OK())
		}
	}
}

// TestSecondCrashIsAPowerCut: the second crash after a reopen is a power
// cut, even after a first kill. Under "none" without a write buffer a
// kill loses nothing, and a PowerDirent cut every write not synced, so
// the second crashes must add lost writes to those of the first.
func TestSecondCrashIsAPowerCut(t *testing.T) {
	cfg := PointsConfig{Sync: engine.SyncPolicy{Mode: engine.SyncNone}, WriteBuffer: -1, Kill: true, Mode: engine.PowerDirent, Steps: 10, CompactEvery: -1, Seed: 4}
	first, err := RunPoints(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Second = 10
	both, err := RunPoints(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if first.LostAcked != 0 || both.LostAcked == 0 || !both.OK() {
		t.Errorf("acknowledged writes lost: %d by the kills alone, %d with the second crashes (OK %v); want 0, then some, all allowed", first.LostAcked, both.LostAcked, both.OK())
	}
}
