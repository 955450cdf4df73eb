package harness

import "testing"

// TestShareSplitsEvenly checks that share's parts sum to the total and
// differ by at most one, the larger ones first.
func TestShareSplitsEvenly(t *testing.T) {
	tests := []struct {
		total, n int
		want     []int
	}{
		{0, 1, []int{0}},
		{0, 3, []int{0, 0, 0}},
		{1, 3, []int{1, 0, 0}},
		{7, 1, []int{7}},
		{8, 4, []int{2, 2, 2, 2}},
		{10, 4, []int{3, 3, 2, 2}},
		{11, 4, []int{3, 3, 3, 2}},
		{1000, 7, []int{143, 143, 143, 143, 143, 143, 142}},
		{3, 8, []int{1, 1, 1, 0, 0, 0, 0, 0}},
	}
	for _, tt := range tests {
		sum, lo, hi := 0, tt.total, 0
		for i := range tt.n {
			got := share(tt.total, tt.n, i)
			if got != tt.want[i] {
				t.Errorf("share(%d, %d, %d) = %d, want %d", tt.total, tt.n, i, got, tt.want[i])
			}
			sum += got
			lo, hi = min(lo, got), max(hi, got)
		}
		if sum != tt.total {
			t.Errorf("share(%d, %d, ·) sums to %d, want %d", tt.total, tt.n, sum, tt.total)
		}
		if hi-lo > 1 {
			t.Errorf("share(%d, %d, ·) ranges from %d to %d, want them to differ by at most 1", tt.total, tt.n, lo, hi)
		}
	}
}

// TestNewWorkersRoles checks the workers a run builds: -threads clients
// doing the workload's step, with shares of -ops that sum to it, and,
// for readwhilewriting only, one writer that Puts and has no quota.
func TestNewWorkersRoles(t *testing.T) {
	for _, wl := range workloads {
		cfg := &runConfig{workload: wl.name, dist: "uniform", threads: 3, ops: 100, keys: 10, valueSize: 8}
		clients, writer := newWorkers(cfg, nullStoreForTest{}, nil)
		var sum int64
		for i, w := range clients {
			if w.role != roleClient || w.step != wl.step || w.id != i {
				t.Errorf("%s: client %d has role %v, step %v, id %d; want client, %v, %d", wl.name, i, w.role, w.step, w.id, wl.step, i)
			}
			sum += w.quota
		}
		if sum != cfg.ops {
			t.Errorf("%s: the clients' quotas sum to %d, want -ops %d", wl.name, sum, cfg.ops)
		}
		switch {
		case wl.name == "readwhilewriting" && writer == nil:
			t.Errorf("%s: no writer", wl.name)
		case wl.name == "readwhilewriting" && (writer.role != roleWriter || writer.step != stepPut):
			t.Errorf("%s: writer has role %v and step %v, want the writer's role and stepPut", wl.name, writer.role, writer.step)
		case wl.name != "readwhilewriting" && writer != nil:
			t.Errorf("%s: a writer, want none", wl.name)
		}
	}
}
