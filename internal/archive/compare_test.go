package archive

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"kvlab/harness"
)

// benchRun makes a bench run whose result has the given ops/s and put
// p99; the other figures follow from them.
func benchRun(id int64, sync string, opsPerSec float64, p99 int64) Run {
	res := harness.BenchResult{
		Kind: "bench", Spec: "bench -engine kv -sync " + sync + " -workload fillrandom -ops 1000 -threads 1",
		Engine: "kv", Sync: sync, Workload: "fillrandom", Threads: 1, Ops: 1000, Units: 1000,
		OpsPerSec: opsPerSec, ValueSize: 128, Keys: 1000,
		Latency: map[string]*harness.LatencySummary{"put": {Count: 1000, P50Ns: p99 / 10, P99Ns: p99, P999Ns: p99 * 2, MaxNs: p99 * 3}},
		Fsyncs:  1000, FsyncsCounted: true, FsyncMeanNs: float64(p99) / 2,
		Probe: &harness.ProbeBrief{FS: "ext4", Device: "vda"},
	}
	b, _ := json.Marshal(res)
	return Run{ID: id, Kind: "bench", Spec: res.Spec, Result: b, Host: "lab/1", Version: "v1"}
}

func group(start int64, sync string, ops ...float64) []Run {
	var out []Run
	for i, o := range ops {
		out = append(out, benchRun(start+int64(i), sync, o, int64(1e6/o*1000)))
	}
	return out
}

// mustCompare compares groups a and b, failing t if they cannot be compared.
func mustCompare(t *testing.T, a, b []Run) *Comparison {
	t.Helper()
	c, err := Compare(a, b)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func metricRow(t *testing.T, c *Comparison, key string) MetricComparison {
	t.Helper()
	for _, m := range c.Metrics {
		if m.Metric == key {
			return m
		}
	}
	t.Fatalf("no metric %s in %+v", key, c.Metrics)
	return MetricComparison{}
}

func TestCompareSignificant(t *testing.T) {
	a := group(1, "always", 100, 104, 98, 101, 99, 103)
	b := group(7, "batch:64", 200, 190, 210, 205, 195, 202)
	c := mustCompare(t, a, b)
	ops := metricRow(t, c, "ops_per_sec")
	if ops.A.Median != 100.5 || ops.B.Median != 201 {
		t.Errorf("medians: got %v and %v, want 100.5 and 201", ops.A.Median, ops.B.Median)
	}
	if ops.ChangePct == nil || math.Abs(*ops.ChangePct-100) > 0.01 {
		t.Errorf("change: got %v, want +100%%", ops.ChangePct)
	}
	if !ops.Significant || ops.Verdict != "better" || ops.TooFew || ops.P > Alpha {
		t.Errorf("ops/s: %+v: want significant, better (p %.4f)", ops, ops.P)
	}
	if ops.A.Lo == nil || ops.A.Hi == nil || *ops.A.Lo > 100.5 || *ops.A.Hi < 100.5 {
		t.Errorf("A's confidence interval: %v..%v, want one around 100.5", ops.A.Lo, ops.A.Hi)
	}
	// Latency went down with the doubled throughput: lower is better.
	p99 := metricRow(t, c, "put.p99_ns")
	if p99.Verdict != "better" || p99.HigherIsBetter || *p99.ChangePct >= 0 {
		t.Errorf("put p99: %+v: want lower and better", p99)
	}
	var keys []string
	for _, m := range c.Metrics {
		keys = append(keys, m.Metric)
	}
	if got := strings.Join(keys, " "); got != "ops_per_sec put.p50_ns put.p99_ns put.p999_ns put.max_ns fsync_mean_ns" {
		t.Errorf("metrics: %s", got)
	}
	if len(c.Changed) != 1 || c.Changed[0] != "sync: always → batch:64" {
		t.Errorf("changed: %q, want the sync policy", c.Changed)
	}
	if len(c.Warnings) != 0 {
		t.Errorf("warnings %q for groups measured under the same conditions", c.Warnings)
	}
	if _, err := json.Marshal(c); err != nil {
		t.Errorf("the comparison is not JSON: %v", err)
	}
}

func TestCompareNotSignificant(t *testing.T) {
	a := group(1, "always", 100, 104, 98, 101, 99, 103)
	b := group(7, "always", 102, 97, 100, 105, 99, 101)
	c := mustCompare(t, a, b)
	ops := metricRow(t, c, "ops_per_sec")
	if ops.Significant || ops.Verdict != "not significant" || ops.TooFew {
		t.Errorf("ops/s: %+v: want not significant, and enough runs", ops)
	}
}

// TestCompareTooFew: three runs a side cannot reach p <= 0.05 with the U
// test however far apart they are; Compare says so instead of a verdict.
func TestCompareTooFew(t *testing.T) {
	if MinRuns := minRuns(); MinRuns != 4 {
		t.Errorf("minRuns: got %d, want 4 (benchstat: need >= 4 samples at alpha 0.05)", MinRuns)
	}
	c := mustCompare(t, group(1, "always", 100, 101, 99), group(4, "none", 1000, 1010, 990))
	ops := metricRow(t, c, "ops_per_sec")
	if !ops.TooFew || ops.Verdict != "too few runs" || ops.Significant {
		t.Errorf("ops/s: %+v: want too few runs", ops)
	}
	if !strings.Contains(ops.Note, "at least 4 runs") || !strings.Contains(ops.Note, "A has 3, B has 3") {
		t.Errorf("note %q: want the minimum and the counts said plainly", ops.Note)
	}
	if ops.A.Lo != nil {
		t.Errorf("3 samples give no 95%% interval for the median, got lo %v", *ops.A.Lo)
	}
	if _, err := json.Marshal(c); err != nil {
		t.Errorf("the comparison is not JSON (an infinite interval?): %v", err)
	}
	// At the minimum, a clear difference is significant.
	c, _ = Compare(group(1, "always", 100, 101, 99, 102), group(5, "none", 1000, 1010, 990, 1020))
	if ops := metricRow(t, c, "ops_per_sec"); ops.TooFew || !ops.Significant {
		t.Errorf("4 runs a side, far apart: %+v: want significant", ops)
	}
}

func TestCompareConditionWarnings(t *testing.T) {
	a := group(1, "always", 100, 101, 99, 102)
	b := group(5, "always", 100, 101, 99, 102)
	for i := range b {
		b[i].Host = "other/2"
		b[i].Version = "v2"
		var res harness.BenchResult
		json.Unmarshal(b[i].Result, &res)
		res.Probe.FS = "tmpfs"
		res.ValueSize = 4096
		if i == 0 {
			res.Keys = 5000
		}
		b[i].Result, _ = json.Marshal(res)
	}
	c := mustCompare(t, a, b)
	all := strings.Join(c.Warnings, "\n")
	for _, want := range []string{"host: A lab/1, B other/2", "filesystem: A ext4, B tmpfs", "value size: A 128, B 4096",
		"key count: A has 1000, B has 1000, 5000", "labserver version: A v1, B v2"} {
		if !strings.Contains(all, want) {
			t.Errorf("warnings do not say %q:\n%s", want, all)
		}
	}
	if strings.Contains(all, "device") {
		t.Errorf("a device warning for the same device:\n%s", all)
	}
}

func TestCompareSamples(t *testing.T) {
	// A -repeat run is one sample per repetition.
	var reps []harness.BenchResult
	for _, o := range []float64{100, 101, 99, 102} {
		var r harness.BenchResult
		json.Unmarshal(benchRun(0, "always", o, 1000).Result, &r)
		reps = append(reps, r)
	}
	arr, _ := json.Marshal(reps)
	repeat := Run{ID: 1, Kind: "bench", Spec: "bench -repeat 4", Result: arr, Host: "lab/1", Version: "v1"}
	c := mustCompare(t, []Run{repeat}, group(2, "always", 100, 101, 99, 102))
	if c.A.Samples != 4 || len(c.A.RunIDs) != 1 {
		t.Errorf("group A: %+v: want 4 samples from 1 run", c.A)
	}

	// A sweep over threads mixes configurations: refused.
	reps[1].Spec = strings.Replace(reps[1].Spec, "-threads 1", "-threads 2", 1)
	arr, _ = json.Marshal(reps)
	sweep := Run{ID: 9, Kind: "sweep", Spec: "sweep", Result: arr}
	if _, err := Compare([]Run{sweep}, group(2, "always", 100)); err == nil || !strings.Contains(err.Error(), "run 9 holds 2 configurations") {
		t.Errorf("a sweep: got %v, want it refused, naming run 9", err)
	}

	// Only bench results compare.
	probe := Run{ID: 5, Kind: "probe", Spec: "probe", Result: json.RawMessage(`{"kind":"probe"}`)}
	if _, err := Compare([]Run{probe}, group(2, "always", 100)); err == nil || !strings.Contains(err.Error(), "run 5 is a probe run") {
		t.Errorf("a probe: got %v, want it refused", err)
	}
	if _, err := Compare(nil, group(2, "always", 100)); err == nil || !strings.Contains(err.Error(), "group A has no runs") {
		t.Errorf("an empty group: got %v", err)
	}

	// A cancelled run is left out, with a warning.
	cancelled := benchRun(20, "always", 5, 1000)
	var r harness.BenchResult
	json.Unmarshal(cancelled.Result, &r)
	r.Cancelled = true
	cancelled.Result, _ = json.Marshal(r)
	c = mustCompare(t, append(group(1, "always", 100, 101, 99, 102), cancelled), group(10, "always", 100, 101, 99, 102))
	if c.A.Samples != 4 || !strings.Contains(strings.Join(c.Warnings, "\n"), "run 20 was cancelled") {
		t.Errorf("a cancelled run: samples %d, warnings %q: want it left out and named", c.A.Samples, c.Warnings)
	}
}
