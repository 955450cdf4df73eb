package harness

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// tailStore answers every request in about 100µs except every 50th,
// which takes 50 ms: a server with a rare slow moment, the tail hedging
// is for. Which request is slow depends on the order of calls, not on the
// key, so a hedge (a later call) is almost never slow too.
type tailStore struct {
	mapStore
	calls atomic.Int64
}

func (s *tailStore) wait() {
	if s.calls.Add(1)%50 == 0 {
		time.Sleep(50 * time.Millisecond)
	} else {
		time.Sleep(100 * time.Microsecond)
	}
}

func (s *tailStore) Put(k, v []byte) error { s.wait(); return s.mapStore.Put(k, v) }

func (s *tailStore) Get(k []byte) ([]byte, bool, error) { s.wait(); return s.mapStore.Get(k) }

func init() {
	RegisterEngine("testtail", func(dir, sync string) (Store, error) {
		return &tailStore{mapStore: mapStore{m: map[string][]byte{}}}, nil
	})
}

// TestHedge runs units of 4 requests on a store with a 2 % slow tail:
// without hedges about 1 − 0.98^4 = 8 % of units take 50 ms, so their
// p99 is 50 ms; hedged at the running p90 (a fraction of a millisecond,
// a few on a busy machine), a slow request is sent again and the copy,
// fast unless it too is one of the 2 %, answers first, so the units' p99
// falls far below (a 50 ms sleep never ends early, and the bound is a
// half). About 10 % more requests go out (the p90's own tail).
func TestHedge(t *testing.T) {
	cfg := runConfig{engine: "testtail", sync: "none", workload: "fillrandom", dist: "uniform", threads: 2,
		ops: 400, warmup: 200, maxUnits: 1 << 30, exactCap: DefaultExactCap, valueSize: 8, keys: 1000, dir: t.TempDir(), fanout: 4, hedge: 90}
	r, err := runOne(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	f := r.Fanout
	if f == nil || f.Hedge != "p90" || f.Units != 400 || f.Requests != 1600 {
		t.Fatalf("fanout = %+v, want 400 hedged units of 4 first requests at p90", f)
	}
	if f.HedgeThresholdNs <= 0 || f.HedgeThresholdNs >= int64(25*time.Millisecond) {
		t.Errorf("hedge threshold %v, want the fast requests' p90, well under the slow 50 ms", time.Duration(f.HedgeThresholdNs))
	}
	if f.UnhedgedUnitP99Ns < int64(50*time.Millisecond) {
		t.Errorf("unhedged unit p99 %v, want the slow requests' 50 ms at least", time.Duration(f.UnhedgedUnitP99Ns))
	}
	if f.UnitP99Ns >= f.UnhedgedUnitP99Ns/2 {
		t.Errorf("hedged unit p99 %v, want under half the unhedged %v", time.Duration(f.UnitP99Ns), time.Duration(f.UnhedgedUnitP99Ns))
	}
	if f.Hedges < f.Requests/60 || f.HedgeExtraPct <= 0 || f.HedgeExtraPct > 50 || f.HedgeWins == 0 || f.HedgeWins > f.Hedges {
		t.Errorf("%d hedges (+%.1f%%), %d won, of %d requests: want at least the 2%% slow ones hedged, some winning", f.Hedges, f.HedgeExtraPct, f.HedgeWins, f.Requests)
	}
	line := fanoutLine(r)
	for _, want := range []string{"hedge at p90", "without the hedges", "hedges, +"} {
		if !strings.Contains(line, want) {
			t.Errorf("fanout line %q, want it to hold %q", line, want)
		}
	}
}

// TestHedgeEstimate: nothing is hedged before hedgeMinObs first requests
// have ended; then the threshold is the window's pP.
func TestHedgeEstimate(t *testing.T) {
	h := newHedger(95, 10)
	for i := range hedgeMinObs - 1 {
		h.observe(time.Duration(i+1) * time.Microsecond)
	}
	if got := h.threshold.Load(); got != 0 {
		t.Fatalf("threshold %d after %d observations, want 0 (no hedging yet)", got, hedgeMinObs-1)
	}
	h.observe(100 * time.Microsecond)
	if got := h.threshold.Load(); got != int64(95*time.Microsecond) {
		t.Errorf("threshold %v over 1..100 µs, want p95 = 95µs", time.Duration(got))
	}
}

func TestHedgeFlag(t *testing.T) {
	for _, tt := range []struct{ line, want string }{
		{"bench -fanout 4 -hedge 95", "allowed: pP"},
		{"bench -fanout 4 -hedge p10", "between 50 and 99.9"},
		{"bench -fanout 4 -hedge p95 -workload overwrite", "applies to -workload fillseq"},
	} {
		if _, err := ParseSpec(tt.line, DefaultLimits()); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want one saying %q", tt.line, err, tt.want)
		}
	}
	s, err := ParseSpec("bench -fanout 8 -hedge p99.5", DefaultLimits())
	if err != nil || s.Hedge != 99.5 || !strings.Contains(s.String(), "-fanout 8 -hedge p99.5") {
		t.Errorf("-hedge p99.5: %v, spec %q", err, s)
	}
}
