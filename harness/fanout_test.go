package harness

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"sync"
	"testing"
)

// countStore records the keys it was asked for.
type countStore struct {
	mu   sync.Mutex
	puts []string
	gets int
	fail error
}

func (c *countStore) Put(k, v []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.puts = append(c.puts, string(k))
	return c.fail
}

func (c *countStore) Get(k []byte) ([]byte, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gets++
	return []byte("v"), true, c.fail
}
func (c *countStore) Delete(k []byte) error { return nil }
func (c *countStore) Close() error          { return nil }

func TestFanoutRequests(t *testing.T) {
	cs := &countStore{}
	s := newFanout(cs, 4, 10, 0)
	if err := s.Put([]byte("key"), []byte("v")); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, k := range cs.puts {
		seen[k] = true
	}
	if len(cs.puts) != 4 || len(seen) != 4 || !seen["key"] {
		t.Errorf("one Put under -fanout 4 wrote %q, want 4 distinct keys, the unit's own among them", cs.puts)
	}
	if v, ok, err := s.Get([]byte("key")); err != nil || !ok || string(v) != "v" || cs.gets != 4 {
		t.Errorf("Get = %q, %v, %v after %d reads; want v, true, nil after 4", v, ok, err, cs.gets)
	}
	cs.fail = errors.New("boom")
	if err := s.Put([]byte("k2"), nil); err == nil {
		t.Errorf("a failing request: Put returned nil")
	}
	if _, ok := s.(StatsReporter); ok {
		t.Errorf("a fan-out over a store that counts no syncs claims to count them")
	}
}

// TestFanoutReport feeds the report known samples: of 100 single
// requests 1..100 µs, p99 is 99 µs; 3 of 10 units are slower than that.
func TestFanoutReport(t *testing.T) {
	f := newFanout(&countStore{}, 10, 10, 0).(*fanoutStore)
	for i := range 100 {
		f.single[i] = int64(i+1) * 1000
	}
	f.nSingle.Store(100)
	for i := range 10 {
		f.units[i] = 50_000
		if i < 3 {
			f.units[i] = 150_000
		}
	}
	f.nUnits.Store(10)
	r := f.report(0)
	if r.SingleP99Ns != 99_000 || r.SingleP50Ns != 50_000 || r.PastSingleP99 != 0.3 || r.Requests != 100 || r.Units != 10 {
		t.Errorf("report = %+v, want p50 50µs, p99 99µs, 0.3 of units past it, 100 requests, 10 units", r)
	}
	if want := 1 - math.Pow(0.99, 10); math.Abs(r.Predicted-want) > 1e-12 {
		t.Errorf("predicted %v, want %v", r.Predicted, want)
	}
}

func TestFanoutRun(t *testing.T) {
	raw, err := Exec(context.Background(), "bench -engine null -fanout 8 -ops 200 -format json", Env{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	var r BenchResult
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatal(err)
	}
	if r.Fanout == nil || r.Fanout.K != 8 || r.Fanout.Units != 200 || r.Fanout.Requests != 1600 || !strings.Contains(r.Spec, "-fanout 8") {
		t.Fatalf("fanout = %+v (spec %q), want 200 units of 8 requests", r.Fanout, r.Spec)
	}
	for _, tt := range []struct{ line, want string }{
		{"bench -fanout 4 -workload overwrite", "applies to -workload fillseq, fillrandom, readrandom only"},
		{"bench -fanout 4 -pipeline 4 -engine testpipe", "cannot be combined with -pipeline 4"},
		{"bench -fanout 65", "must be between 1 and 64"},
	} {
		if _, err := ParseSpec(tt.line, DefaultLimits()); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error = %v, want one saying %q", tt.line, err, tt.want)
		}
	}
}
