package harness

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestAckLogCheck reads keys back from a fake cluster: an acknowledged
// write whose key is absent, or holds an older value, is lost; a value
// from a write that never returned, or from one that overlapped the last
// acknowledged write, is accepted.
func TestAckLogCheck(t *testing.T) {
	l := NewAckLog()
	put := func(key, val string, err error) { l.End(l.Begin([]byte(key), []byte(val)), err) }
	put("gone", "v1", nil)   // acknowledged, then absent: lost
	put("old", "v1", nil)    // acknowledged v1, then v2: reads v1: lost
	put("old", "v2", nil)    //
	put("fine", "v1", nil)   // acknowledged, reads its value: kept
	put("flight", "v1", nil) // acknowledged v1; v2 failed (in flight at the kill): reads v2: kept
	put("flight", "v2", errors.New("connection reset"))
	// Two clients write "race" at once: b begins before a ends, a is
	// acknowledged last; either value may be the key's last.
	ta := l.Begin([]byte("race"), []byte("a"))
	tb := l.Begin([]byte("race"), []byte("b"))
	l.End(tb, nil)
	l.End(ta, nil)
	put("never", "v1", errors.New("refused")) // never acknowledged: not checked
	held := map[string][]string{"old": {"v1"}, "fine": {"v1"}, "flight": {"v2"}, "race": {"b"}}
	var reads atomic.Int64
	c := l.Check("fake", time.Minute, func(key []byte) ([][]byte, error) {
		reads.Add(1)
		var out [][]byte
		for _, v := range held[string(key)] {
			out = append(out, []byte(v))
		}
		return out, nil
	})
	if c.Acknowledged != 7 || c.Unacknowledged != 2 || c.Keys != 5 || reads.Load() != 5 {
		t.Errorf("check = %+v (%d reads), want 7 acknowledged, 2 not, 5 keys read", c, reads.Load())
	}
	if c.Lost != 2 || len(c.LostKeys) != 2 {
		t.Errorf("lost = %d %v, want 2 (gone, old)", c.Lost, c.LostKeys)
	}
	for _, k := range []string{"676f6e65", "6f6c64"} { // gone, old
		if !strings.Contains(strings.Join(c.LostKeys, " "), k) {
			t.Errorf("lost keys %v, want %s among them", c.LostKeys, k)
		}
	}
	// A read error stops the check and says so.
	c = l.Check("fake", time.Minute, func(key []byte) ([][]byte, error) { return nil, fmt.Errorf("refused") })
	if !strings.Contains(c.Error, "refused") || c.Keys != 0 {
		t.Errorf("check with failing reads = %+v, want the error and no key read", c)
	}
	var nilLog *AckLog
	nilLog.End(nilLog.Begin([]byte("k"), []byte("v")), nil) // records nothing, no panic
}

// stoppingStore acknowledges its first n Puts, then fails every Put with
// ErrWritesStopped, as pg-sync does once its primary is killed.
type stoppingStore struct {
	mapStore
	n, puts atomic.Int64
}

func (s *stoppingStore) Put(k, v []byte) error {
	if s.puts.Add(1) > s.n.Load() {
		return fmt.Errorf("%w: the primary is gone", ErrWritesStopped)
	}
	return s.mapStore.Put(k, v)
}

func init() {
	RegisterEngine("teststopping", func(dir, sync string) (Store, error) {
		s := &stoppingStore{mapStore: mapStore{m: map[string][]byte{}}}
		s.n.Store(20 + 50) // the warmup's 20, then 50 timed
		return s, nil
	})
}

// TestWritesStopped: a store whose writes stop (ErrWritesStopped) ends a
// client's writing, not the run: the result counts the Puts before the
// stop, and a -duration run's clock runs to its end.
func TestWritesStopped(t *testing.T) {
	r := bench(t, "bench -engine teststopping -workload fillrandom -duration 300ms -warmup 20 -threads 2 -format json")
	// The warmup's share of the 70 acknowledged Puts depends on how it
	// splits across clients; the timed region has the rest.
	if put := r.Latency["put"]; put == nil || put.Count < 40 || put.Count > 70 || r.Ops != put.Count {
		t.Fatalf("put latency = %+v (ops %d), want the 40..70 Puts before the stop", r.Latency["put"], r.Ops)
	}
	if r.WallSeconds < 0.3 {
		t.Errorf("wall %.3fs, want the clock to run to -duration 300ms", r.WallSeconds)
	}
	// Without -duration the clients stop at once.
	r = bench(t, "bench -engine teststopping -workload fillrandom -ops 200 -warmup 20 -format json")
	if put := r.Latency["put"]; put == nil || put.Count < 40 || put.Count > 70 {
		t.Errorf("-ops 200: put latency = %+v, want the 40..70 Puts before the stop", r.Latency["put"])
	}
}

// TestTimelineP99: each timeline interval in which ops ended carries the
// p99 and max of its latencies, none above the run's max.
func TestTimelineP99(t *testing.T) {
	cfg := runConfig{engine: "testmap", sync: "none", workload: "fillrandom", dist: "uniform", threads: 2,
		duration: 200 * time.Millisecond, maxUnits: 1 << 30, valueSize: 8, keys: 1000, dir: t.TempDir(),
		tick: 10 * time.Millisecond}
	r, err := runOne(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	withP99 := 0
	for _, p := range r.Timeline {
		if p.Ops > 0 && p.P99Ns > 0 && p.MaxNs >= p.P99Ns {
			withP99++
		}
		if p.MaxNs > r.Latency["put"].MaxNs {
			t.Errorf("interval %+v: max above the run's max %d", p, r.Latency["put"].MaxNs)
		}
	}
	if withP99 < 2 {
		t.Errorf("%d timeline intervals with a p99, want at least 2: %+v", withP99, r.Timeline)
	}
}

func TestFailoverLine(t *testing.T) {
	for _, tt := range []struct {
		f    *FailoverReport
		want []string
	}{
		{&FailoverReport{Killed: "m0", KilledAfterNs: 1e9, NewLeader: "m2", ElectedAfterNs: 1.2e9, ResumedAfterNs: 1.3e9,
			AckCheck: &AckCheck{ReadFrom: "m2", Acknowledged: 900, Keys: 880}},
			[]string{"m0 killed at 1.00s", "m2 elected 1.20s later", "resumed 1.30s after", "900 acknowledged writes (880 keys) read back from m2: 0 lost"}},
		{&FailoverReport{Killed: "primary", KilledAfterNs: 2e9, WritesStopped: true, AckCheck: &AckCheck{ReadFrom: "s1", Lost: 3, Error: "timeout"}},
			[]string{"writes stopped (no automatic failover)", "3 lost", "check incomplete: timeout"}},
	} {
		got := failoverLine(tt.f)
		for _, w := range tt.want {
			if !strings.Contains(got, w) {
				t.Errorf("failoverLine = %q, want it to hold %q", got, w)
			}
		}
	}
}
