package harness

import (
	"os"
	"strings"
	"testing"

	"kvlab/engine/crashtest"
)

func TestMain(m *testing.M) {
	crashtest.MaybeRunChild() // the crash command re-executes this binary
	os.Exit(m.Run())
}

// The contract fields (CONTRACTS.md and DESIGN.md "JSON result"). Paths
// with a dot go into nested objects; "[]" checks the first element.
var (
	benchFields = []string{"kind", "spec", "engine", "sync", "workload", "threads", "ops", "units",
		"wall_seconds", "ops_per_sec", "units_per_sec", "value_size", "keys", "dist", "latency", "fsyncs", "fsync_mean_ns",
		"timeline", "timeline[].second", "timeline[].ops", "timeline[].ops_per_sec",
		"probe.fs", "probe.device", "probe.rotational", "probe.write_ns", "probe.fdatasync_ns"}
	latencyFields = []string{"count", "mean_ns", "p50_ns", "p95_ns", "p99_ns", "p999_ns", "max_ns", "exact",
		"spectrum", "spectrum[].p", "spectrum[].ns", "histogram", "histogram[].le_ns", "histogram[].count"}
	modelInBench = []string{"model.predicted_ops_per_sec", "model.t_write_ns", "model.t_fsync_ns", "model.t_fsync_source",
		"model.p99_path", "model.loss_window_writes", "model.loss_window_ms"}
	probeFields = []string{"kind", "host", "cpu", "cores", "ram_bytes", "kernel", "go", "dir", "fs", "device", "rotational", "free_bytes",
		"write.iterations", "write.mean_ns", "write.p50_ns", "write.p99_ns", "write.max_ns", "write.ops_per_sec",
		"write_fdatasync.iterations", "write_fdatasync.mean_ns", "write_fdatasync.p50_ns", "write_fdatasync.p99_ns",
		"write_fdatasync.max_ns", "write_fdatasync.ops_per_sec", "write_ns", "fdatasync_ns"}
	modelFields = []string{"kind", "sync", "t_write_ns", "t_fsync_ns", "source", "predicted_ops_per_sec", "p99_path",
		"loss_window_writes", "loss_window_ms"}
	crashFields = []string{"kind", "sync", "power", "trials", "durable_acked", "recovered", "lost", "corrupt", "per_trial",
		"per_trial[].n", "per_trial[].durable_acked", "per_trial[].recovered", "per_trial[].lost", "per_trial[].corrupt"}
)

// lookup follows a path like "a.b" or "a[].b" into decoded JSON.
func lookup(v any, path string) (any, bool) {
	for _, part := range strings.Split(path, ".") {
		arr := strings.HasSuffix(part, "[]")
		part = strings.TrimSuffix(part, "[]")
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = m[part]; !ok {
			return nil, false
		}
		if arr {
			a, ok := v.([]any)
			if !ok || len(a) == 0 {
				return nil, false
			}
			v = a[0]
		}
	}
	return v, true
}

func requireFields(t *testing.T, what string, v any, fields []string) {
	t.Helper()
	for _, f := range fields {
		if _, ok := lookup(v, f); !ok {
			t.Errorf("%s: missing contract field %q", what, f)
		}
	}
}

// execJSON runs a line and returns its JSON output as generic values, for
// checking field names.
func execJSON(t *testing.T, line string) any {
	t.Helper()
	return execAs[any](t, line)
}

func TestJSONBenchHasContractFields(t *testing.T) {
	v := execJSON(t, "bench -engine null -sync batch:64 -workload mixed -ops 400 -rate 200000")
	requireFields(t, "bench", v, benchFields)
	requireFields(t, "bench", v, modelInBench)
	requireFields(t, "bench", v, []string{"hit_rate", "latency_uncorrected.put", "latency_uncorrected.get"})
	for _, op := range []string{"put", "get"} {
		l, _ := lookup(v, "latency."+op)
		requireFields(t, "latency."+op, l, latencyFields)
	}
	if k, _ := lookup(v, "kind"); k != "bench" {
		t.Errorf("kind = %v, want bench", k)
	}
	// A closed-loop write-only run has no hit rate and no uncorrected latency.
	v = execJSON(t, "bench -engine null -sync always -ops 100")
	for _, f := range []string{"hit_rate", "latency_uncorrected", "model", "dishonest"} {
		if _, ok := lookup(v, f); ok {
			t.Errorf("closed-loop fillrandom with sync always: unexpected field %q", f)
		}
	}
}

func TestJSONArrayHasOneResultPerRun(t *testing.T) {
	tests := []struct {
		line    string
		n       int
		threads []float64
	}{
		{"sweep -engine null -threads 1,2,3 -ops 100", 3, []float64{1, 2, 3}},
		{"bench -engine null,testmap -ops 100", 2, []float64{1, 1}},
		{"bench -engine null -ops 100 -repeat 3", 3, []float64{1, 1, 1}},
		{"sweep -engine null,testmap -threads 1,2 -ops 100", 4, []float64{1, 2, 1, 2}},
	}
	for _, tt := range tests {
		v := execJSON(t, tt.line)
		a, ok := v.([]any)
		if !ok || len(a) != tt.n {
			t.Errorf("%s: got %T of length %d, want an array of %d", tt.line, v, len(a), tt.n)
			continue
		}
		for i, e := range a {
			requireFields(t, tt.line, e, benchFields)
			if th, _ := lookup(e, "threads"); th != tt.threads[i] {
				t.Errorf("%s: [%d].threads = %v, want %v", tt.line, i, th, tt.threads[i])
			}
		}
	}
}

func TestJSONProbeAndModelHaveContractFields(t *testing.T) {
	requireFields(t, "probe", execJSON(t, "probe -ops 20 -duration 50ms"), probeFields)
	requireFields(t, "model", execJSON(t, "model -sync batch:64"), modelFields)
	m := execJSON(t, "model -sync batch:100 -t-write 1us -t-fsync 200us")
	if s, _ := lookup(m, "source"); s != "given" {
		t.Errorf("model with both costs given: source = %v, want given", s)
	}
	if ops, _ := lookup(m, "predicted_ops_per_sec"); ops != 1e9/3000.0 {
		t.Errorf("model batch:100 at 1 µs + 200 µs: predicted %v, want %v", ops, 1e9/3000.0)
	}
}

func TestJSONCrashHasContractFields(t *testing.T) {
	for _, line := range []string{"crash -sync batch:100 -trials 1 -power", "crash -sync always -trials 1"} {
		v := execJSON(t, line)
		requireFields(t, line, v, crashFields)
		if ok, _ := lookup(v, "ok"); ok != true {
			t.Errorf("%s: ok = %v, want true", line, ok)
		}
		if inv, _ := lookup(v, "invariant"); inv != Invariant {
			t.Errorf("%s: invariant = %v, want %q", line, inv, Invariant)
		}
	}
	// Each power mode is selectable and named in the result; SIGKILL has none.
	for _, mode := range []string{"prefix", "reorder", "pages", "dirent"} {
		line := "crash -sync none -trials 1 -power -power-mode " + mode
		v := execJSON(t, line)
		if got, _ := lookup(v, "power_mode"); got != mode {
			t.Errorf("%s: power_mode = %v, want %s", line, got, mode)
		}
		if ok, _ := lookup(v, "ok"); ok != true {
			t.Errorf("%s: ok = %v, want true", line, ok)
		}
	}
	if got, ok := lookup(execJSON(t, "crash -sync always -trials 1"), "power_mode"); ok {
		t.Errorf("SIGKILL crash: power_mode = %v, want it absent", got)
	}
}
