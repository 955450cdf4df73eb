package harness

import (
	"fmt"
	"testing"
)

func ExamplePredict() {
	// This disk's probe said: a 128-byte write costs 1 µs, an fdatasync 200 µs.
	for _, sync := range []string{"batch:16", "batch:100", "batch:1000", "periodic:10ms"} {
		p, _, _ := Predict(sync, 1000, 200000)
		fmt.Printf("%-13s %7.0f ops/s  p99 %-4s  loss window %5.0f writes %6.2f ms\n",
			sync, p.PredictedOpsPerSec, p.P99Path, p.LossWindowWrites, p.LossWindowMs)
	}
	// Output:
	// batch:16        74074 ops/s  p99 slow  loss window    15 writes   0.20 ms
	// batch:100      333333 ops/s  p99 slow  loss window    99 writes   0.30 ms
	// batch:1000     833333 ops/s  p99 fast  loss window   999 writes   1.20 ms
	// periodic:10ms 1000000 ops/s  p99 fast  loss window 10200 writes  10.20 ms
}

func TestPredictPolicies(t *testing.T) {
	for _, sync := range []string{"always", "group", "none"} {
		if _, ok, err := Predict(sync, 1000, 200000); ok || err != nil {
			t.Errorf("Predict(%s): ok %v err %v, want no model and no error", sync, ok, err)
		}
	}
	for _, tt := range []struct{ sync, want string }{
		{"batch:x", "-sync batch:x: batch:N needs N between 1 and 1048576"},
		{"periodic:0s", "-sync periodic:0s: periodic:D needs a duration between 100µs and 1m, e.g. periodic:10ms"},
		{"sometimes", "-sync sometimes: unknown policy; allowed: always, group, batch:N, periodic:D, none"},
	} {
		if _, ok, err := Predict(tt.sync, 1000, 200000); ok || err == nil || err.Error() != tt.want {
			t.Errorf("Predict(%s): ok %v err %v, want the error %q", tt.sync, ok, err, tt.want)
		}
	}
}

func TestBenchModelSource(t *testing.T) {
	brief := &ProbeBrief{WriteNs: 1000, FdatasyncNs: 300000}
	r := &BenchResult{Latency: map[string]*LatencySummary{"put": {P99Ns: 250000}}}
	m := benchModel("batch:10", r, brief)
	if m == nil || m.TFsyncSource != "probe" || m.TFsyncNs != 300000 {
		t.Fatalf("no fsyncs in the run: got %+v, want T_fsync 300000 from the probe", m)
	}
	r.Fsyncs, r.FsyncMeanNs = 10, 200000
	m = benchModel("batch:10", r, brief)
	if m.TFsyncSource != "run" || m.TFsyncNs != 200000 {
		t.Errorf("with the run's fsyncs: got source %s T_fsync %v, want run and 200000", m.TFsyncSource, m.TFsyncNs)
	}
	if m.MeasuredP99Path != "slow" {
		t.Errorf("p99 250 µs against T_write 1 µs + T_fsync 200 µs: measured path %s, want slow", m.MeasuredP99Path)
	}
	if benchModel("always", r, brief) != nil {
		t.Error("sync always got a model, want nil")
	}
}
