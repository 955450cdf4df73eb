package harness

import "testing"

// TestBenchModelTWriteSource: a one-writer run of batch:N (N >= 2) or
// periodic:D feeds the model its own median Put as T_write (the store's
// per-Put cost without an fdatasync); batch:1, several writers, or a run
// without put latencies fall back to the probe's write(2).
func TestBenchModelTWriteSource(t *testing.T) {
	brief := &ProbeBrief{WriteNs: 1000, FdatasyncNs: 300000}
	cases := []struct {
		sync    string
		threads int
		p50     int64
		want    string
		wantNs  float64
	}{
		{"batch:64", 1, 400, "run", 400},
		{"batch:2", 1, 400, "run", 400},
		{"periodic:10ms", 1, 400, "run", 400},
		{"batch:1", 1, 300400, "probe", 1000},
		{"batch:64", 4, 400, "probe", 1000},
		{"batch:64", 1, 0, "probe", 1000},
	}
	for _, c := range cases {
		r := &BenchResult{Threads: c.threads, Fsyncs: 10, FsyncMeanNs: 200000,
			Latency: map[string]*LatencySummary{"put": {P50Ns: c.p50, P99Ns: 250000}}}
		m := benchModel(c.sync, r, brief)
		if m == nil || m.TWriteSource != c.want || m.TWriteNs != c.wantNs {
			t.Errorf("%s, %d threads, p50 %d: got %+v, want T_write %v from %s", c.sync, c.threads, c.p50, m, c.wantNs, c.want)
		}
	}
}
