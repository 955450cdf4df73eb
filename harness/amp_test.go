package harness

import (
	"context"
	"testing"
)

// amplification takes the engine's counters when it keeps them, the
// device's otherwise, and says which.
func TestAmplificationSources(t *testing.T) {
	n := func(v int64) *int64 { return &v }
	dev := &DeviceIO{WriteBytes: n(8000), ReadRequests: n(30)}
	before := StoreStats{StoredBytes: 1000}
	after := StoreStats{StoredBytes: 4000, Metrics: map[string]int64{"disk_bytes": 600, "live_bytes": 200}}
	a := amplification(before, after, dev, 1000, 10)
	if a == nil || a.Write == nil || *a.Write != 3 || a.WriteSource != "engine" {
		t.Errorf("engine counters: write %+v, want 3 from the engine", a)
	}
	if a.Space == nil || *a.Space != 3 || a.SpaceSource != "engine" {
		t.Errorf("space %v (%s), want 3 from the engine", a.Space, a.SpaceSource)
	}
	if a.Read == nil || *a.Read != 3 || a.ReadSource != "device" {
		t.Errorf("read %v (%s), want 3 device reads per Get", a.Read, a.ReadSource)
	}
	a = amplification(StoreStats{}, StoreStats{}, dev, 1000, 0)
	if a == nil || a.Write == nil || *a.Write != 8 || a.WriteSource != "device" || a.Space != nil || a.Read != nil {
		t.Errorf("no engine counters: %+v, want write 8 from the device and no space or read figure", a)
	}
	if a := amplification(StoreStats{}, StoreStats{}, nil, 0, 0); a != nil {
		t.Errorf("nothing known: %+v, want nil", a)
	}
}

// A kv run reports its write and space amplification from the engine's
// counters, and its compaction state among its metrics. A fill of fresh
// keys writes each record once, with its header: a little over 1 byte
// per user byte, and every byte on disk is live.
func TestKVAmplification(t *testing.T) {
	cfg := runConfig{engine: "kv", sync: "none", workload: "fillrandom", dist: "uniform",
		threads: 1, ops: 2000, maxUnits: 1 << 20, exactCap: DefaultExactCap, valueSize: 100, keys: 1 << 20, dir: t.TempDir()}
	r, err := runOne(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	a := r.Amplification
	if a == nil || a.Write == nil || a.WriteSource != "engine" || *a.Write <= 1 || *a.Write > 1.5 {
		t.Fatalf("amplification %+v: want write amplification from the engine, between 1 and 1.5", a)
	}
	if a.Space == nil || *a.Space < 1 || *a.Space > 1.1 {
		t.Errorf("space amplification %v, want about 1 for fresh keys", a.Space)
	}
	for _, k := range []string{"compaction_debt_bytes", "live_bytes", "disk_bytes", "compaction_bytes_written"} {
		if _, ok := r.EngineMetrics[k]; !ok {
			t.Errorf("engine_metrics has no %q: %v", k, r.EngineMetrics)
		}
	}
}
