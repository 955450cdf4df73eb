package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"strings"
	"testing"

	"kvlab/engine/crashtest"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// fixedBench is a bench result with round numbers, for the golden files.
func fixedBench(engine string, threads, run int, opsPerSec float64) *BenchResult {
	lat := func(n int64, base int64) *LatencySummary {
		return &LatencySummary{Count: n, MeanNs: float64(base) * 1.4, MinNs: base / 2, P50Ns: base, P95Ns: base * 2, P99Ns: base * 10,
			P999Ns: base * 40, MaxNs: base * 90, Exact: true}
	}
	hit := 0.75
	return &BenchResult{
		Kind: "bench", Spec: "bench -engine " + engine + " -sync batch:64 -workload updaterandom -ops 4000 -threads 1",
		Engine: engine, Sync: "batch:64", Workload: "updaterandom", Threads: threads,
		Ops: 8000, Units: 4000, WallSeconds: 8000 / opsPerSec, OpsPerSec: opsPerSec, UnitsPerSec: opsPerSec / 2,
		ValueSize: 128, Keys: 4000, Dist: "uniform", Warmup: 400,
		Latency: map[string]*LatencySummary{"get": lat(4000, 2500), "put": lat(4000, 12000)},
		HitRate: &hit,
		Fsyncs:  62, FsyncMeanNs: 210000, BytesWritten: 4000 * 160,
		FsyncSamples: 62, FsyncP50Ns: 180000, FsyncP99Ns: 900000, FsyncMaxNs: 1200000,
		Model: &BenchModel{PredictedOpsPerSec: 240000, TWriteNs: 900, TWriteSource: "run_wall", TFsyncNs: 210000, TFsyncSource: "run", P99Path: "slow", MeasuredP99Path: "slow",
			P99ThresholdNs: 46476, FsyncP50Source: "run_p50", LossWindowWrites: 63, LossWindowMs: 4.2, RateSource: "run", WriteRate: 15000},
		Timeline: []TimelinePoint{{Second: 1, Ops: 8000, OpsPerSec: opsPerSec}},
		Probe:    &ProbeBrief{FS: "ext4", Device: "vda", WriteNs: 900, FdatasyncNs: 190000, Cores: 2, Go: "go1.26.8", FdatasyncOverwriteNs: 150000},
		Run:      run,
	}
}

func fixedProbe() *ProbeResult {
	return &ProbeResult{Kind: "probe", Host: "lab", CPU: "Example CPU", Cores: 2, RAMBytes: 24 << 30, Kernel: "Linux 6.1", OS: "linux/amd64",
		Go: "go1.26.8", Dir: "/tmp", FS: "ext4", Device: "vda", FreeBytes: 80 << 30, WriteSize: 128,
		Write:          ProbeCost{Iterations: 2000, MeanNs: 900, P50Ns: 850, P99Ns: 2100, MaxNs: 15000, OpsPerSec: 1.1e6},
		WriteFdatasync: ProbeCost{Iterations: 2000, MeanNs: 190900, P50Ns: 180000, P99Ns: 420000, MaxNs: 3e6, OpsPerSec: 5200},
		WriteNs:        900, FdatasyncNs: 190000,
		WriteFdatasyncOverwrite: ProbeCost{Iterations: 2000, MeanNs: 150900, P50Ns: 145000, P99Ns: 390000, MaxNs: 2.5e6, OpsPerSec: 6600},
		FdatasyncOverwriteNs:    150000}
}

func TestReportsMatchGoldenFiles(t *testing.T) {
	mr, err := modelLine(context.Background(), &Spec{Cmd: "model", Sync: "batch:64", TWrite: 900, TFsync: 190000, given: map[string]string{"t-fsync": "190us"}}, "")
	if err != nil {
		t.Fatal(err)
	}
	dishonest := fixedBench("kv", 1, 0, 30000)
	dishonest.Dishonest = []string{"throughput-from-samples"}
	tests := []struct {
		name   string
		format string
		v      any
	}{
		{"bench_table", "table", fixedBench("kv", 1, 0, 30000)},
		{"bench_dishonest_table", "table", dishonest},
		{"bench_tsv", "tsv", fixedBench("kv", 1, 0, 30000)},
		{"bench_benchstat", "benchstat", []*BenchResult{fixedBench("kv", 1, 1, 30000), fixedBench("kv", 1, 2, 32000), fixedBench("kv", 1, 3, 29000)}},
		{"sweep_table", "table", []*BenchResult{fixedBench("kv", 1, 0, 4000), fixedBench("kv", 2, 0, 7000), fixedBench("kv", 4, 0, 12000), fixedBench("kv", 8, 0, 13000)}},
		// An open-loop sweep in which one thread count's generator was late:
		// the LATE line names the run.
		{"sweep_openloop_late_table", "table", func() []*BenchResult {
			rs := []*BenchResult{fixedBench("null", 1, 0, 4000), fixedBench("null", 2, 0, 7000)}
			for _, r := range rs {
				r.Rate = 10000
				r.PacerLag = &PacerLag{Count: 4000, P50Ns: 900, P99Ns: 30000, MaxNs: 90000, DelayP99Ns: 40000, Exact: true}
			}
			rs[1].PacerLag.P99Ns, rs[1].PacerLag.DelayP99Ns, rs[1].GeneratorLate = 1100000, 8500000, true
			return rs
		}()},
		{"repeat_table", "table", func() []*BenchResult {
			rs := []*BenchResult{fixedBench("kv", 1, 1, 30000), fixedBench("kv", 1, 2, 32000), fixedBench("kv", 1, 3, 29000),
				fixedBench("bbolt", 1, 1, 9000), fixedBench("bbolt", 1, 2, 9500), fixedBench("bbolt", 1, 3, 8000)}
			// The last run of each group carries the pooled latency: here
			// one run's bad tail lifts the pooled put p99 above the median.
			for _, last := range []*BenchResult{rs[2], rs[5]} {
				pooled := fixedBench(last.Engine, 1, 0, 0).Latency
				pooled["put"].P99Ns, pooled["put"].P999Ns = 480000, 960000
				last.Pooled = &Pooled{Runs: 3, Latency: pooled}
			}
			return rs
		}()},
		// Interleaved rounds where the machine slowed in round 2: the
		// ratio column is the median of the per-round ratios (0.50x),
		// not the ratio of the medians (6000/20000 = 0.30x).
		{"repeat_paired_table", "table", func() []*BenchResult {
			rs := []*BenchResult{fixedBench("kv", 1, 1, 30000), fixedBench("kv", 1, 2, 10000), fixedBench("kv", 1, 3, 20000),
				fixedBench("bbolt", 1, 1, 6000), fixedBench("bbolt", 1, 2, 5000), fixedBench("bbolt", 1, 3, 10000)}
			for _, r := range rs {
				r.Round = r.Run
			}
			return rs
		}()},
		{"probe_table", "table", fixedProbe()},
		// A Mac's probe names the call it timed (engine.Datasync).
		{"probe_macos_table", "table", func() *ProbeResult {
			p := fixedProbe()
			p.OS, p.Kernel, p.FS, p.Device, p.SyncCall = "darwin/arm64", "Darwin 24.1.0", "apfs", "disk3s1", "F_FULLFSYNC"
			return p
		}()},
		{"bench_macos_table", "table", func() *BenchResult {
			b := fixedBench("kv", 1, 0, 30000)
			b.Probe.FS, b.Probe.Device, b.Probe.SyncCall = "apfs", "disk3s1", "F_FULLFSYNC"
			return b
		}()},
		{"model_table", "table", mr},
		// An open loop that fell behind: utilization, and the units due
		// that never started, named as censored samples.
		{"bench_openloop_table", "table", func() *BenchResult {
			b := fixedBench("kv", 1, 0, 30000)
			b.Rate, b.Utilization, b.BacklogUnits = 20000, 1.35, 1234
			b.LatencyUncorrected = map[string]*LatencySummary{"get": b.Latency["get"], "put": b.Latency["put"]}
			b.PacerLag = &PacerLag{Count: 4000, MeanNs: 4100, P50Ns: 2100, P99Ns: 41000, MaxNs: 910000, Exact: true, DelayP99Ns: 52000}
			b.Behind = "store"
			return b
		}()},
		// An open loop whose generator was late and fell behind: the LATE
		// line, and BEHIND naming the generator, not the store.
		{"bench_openloop_late_table", "table", func() *BenchResult {
			b := fixedBench("null", 1, 0, 30000)
			b.Rate, b.Utilization, b.BacklogUnits = 10000, 0.01, 120
			b.LatencyUncorrected = map[string]*LatencySummary{"get": b.Latency["get"], "put": b.Latency["put"]}
			b.PacerLag = &PacerLag{Count: 4000, MeanNs: 90000, P50Ns: 60000, P99Ns: 1100000, MaxNs: 9000000, Exact: true, DelayP99Ns: 8500000}
			b.GeneratorLate, b.Behind = true, "generator"
			return b
		}()},
		{"crash_table", "table", &CrashResult{Kind: "crash", Spec: "crash -sync batch:100 -trials 2 -power", Sync: "batch:100", Power: true, Trials: 2,
			Writes: 500, DurableAcked: 400, Recovered: 450, LostAcked: 50, LostPageCache: 50, OK: true,
			PerTrial: []crashtest.Trial{{N: 1, Writes: 200, DurableAcked: 200, Recovered: 200}, {N: 2, Writes: 300, DurableAcked: 200, Recovered: 250, LostAcked: 50}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := Write(&b, tt.format, tt.v); err != nil {
				t.Fatal(err)
			}
			checkGolden(t, tt.name, b.String())
		})
	}
}

func TestMedianRunTakesEachFiguresMedian(t *testing.T) {
	g := []*BenchResult{fixedBench("kv", 1, 1, 30000), fixedBench("kv", 1, 2, 10000), fixedBench("kv", 1, 3, 20000)}
	g[0].Latency["put"].P99Ns = 5
	g[1].Latency["put"].P99Ns = 1
	g[2].Latency["put"].P99Ns = 9
	m := medianRun(g)
	if m.OpsPerSec != 20000 || m.Latency["put"].P99Ns != 5 {
		t.Errorf("median ops/s %v p99 %d, want 20000 and 5", m.OpsPerSec, m.Latency["put"].P99Ns)
	}
}

func TestRunCLIExitCodesAndOutput(t *testing.T) {
	tests := []struct {
		args   []string
		code   int
		stdout string // substring
		stderr string // substring
		isJSON bool
	}{
		{nil, 0, "commands:", "", false},
		{[]string{"help"}, 0, "labserver bench -engine kv -sync always", "", false},
		{[]string{"help", "sweep"}, 0, "usage: labserver sweep", "", false},
		{[]string{"bench", "-h"}, 0, "-dishonest-no-warmup", "", false},
		{[]string{"crash", "--help"}, 0, "labserver crash -sync batch:100 -trials 20", "", false},
		{[]string{"bench", "-ops", "0"}, 2, "", "-ops 0: must be between 1 and 10000000", false},
		{[]string{"bogus"}, 2, "", "run 'labserver help'", false},
		{[]string{"bench", "-engine", "null", "-ops", "200", "-format", "json"}, 0, `"kind": "bench"`, "", true},
		{[]string{"bench", "-engine", "null", "-ops", "200"}, 0, "micros/op", "", false},
		{[]string{"bench", "-engine", "null", "-ops", "200", "-format", "benchstat"}, 0, "BenchmarkKV/engine=null", "", false},
		{[]string{"bench", "-engine", "testfail", "-ops", "200"}, 1, "", "put refused", false},
		{[]string{"model", "-sync", "batch:10", "-t-write", "1us", "-t-fsync", "100us", "-format", "tsv"}, 0, "predicted_ops_per_sec\t90909.0909", "", false},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var out, errb bytes.Buffer
			args := tt.args
			if len(args) > 0 && (args[0] == "bench") {
				args = append(args, "-dir", t.TempDir())
			}
			code := RunCLI(context.Background(), args, &out, &errb)
			if code != tt.code {
				t.Errorf("exit code %d, want %d; stderr: %s", code, tt.code, errb.String())
			}
			if !strings.Contains(out.String(), tt.stdout) {
				t.Errorf("stdout does not contain %q:\n%s", tt.stdout, out.String())
			}
			if !strings.Contains(errb.String(), tt.stderr) {
				t.Errorf("stderr does not contain %q:\n%s", tt.stderr, errb.String())
			}
			if tt.isJSON && !json.Valid(out.Bytes()) {
				t.Errorf("stdout is not valid JSON:\n%s", out.String())
			}
		})
	}
}

func TestRunCLIProgressFlag(t *testing.T) {
	var out, errb bytes.Buffer
	code := RunCLI(context.Background(), []string{"bench", "-engine", "null", "-duration", "1200ms", "-progress", "-dir", t.TempDir()}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !strings.Contains(errb.String(), "ops/s  p50") {
		t.Errorf("-progress printed no progress line to stderr: %q", errb.String())
	}
	errb.Reset()
	RunCLI(context.Background(), []string{"bench", "-engine", "null", "-duration", "1200ms", "-dir", t.TempDir()}, &out, &errb)
	if errb.Len() != 0 {
		t.Errorf("without -progress and with stderr not a terminal, stderr = %q, want nothing", errb.String())
	}
}

// Benchmark names keep apart runs that measured different things: an
// open-loop run at -rate R is not a sample of the closed-loop one.
func TestBenchstatNameHasRate(t *testing.T) {
	closed, open := fixedBench("kv", 1, 0, 30000), fixedBench("kv", 1, 0, 30000)
	open.Rate = 5000
	name := func(r *BenchResult) string {
		var b strings.Builder
		if err := writeBenchstat(&b, r); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(b.String(), "\n")
		return strings.Fields(lines[1])[0]
	}
	if a, b := name(closed), name(open); a == b {
		t.Errorf("closed and -rate 5000 runs both named %s, want different names", a)
	} else if !strings.Contains(b, "/rate=5000") {
		t.Errorf("open-loop name %s, want /rate=5000 in it", b)
	}
}

// TestServerLine checks the table's line that puts a server's own timing
// beside the client's, and says why when there is none.
func TestServerLine(t *testing.T) {
	tests := []struct {
		r    BenchResult
		want string
	}{
		{BenchResult{}, ""},
		{BenchResult{ServerLatencyUnavailable: "resp: connection refused"}, "server-side time: unavailable (resp: connection refused)"},
		{BenchResult{
			ServerLatencySource: "INFO",
			ServerLatency:       map[string]*ServerLatency{"put": {Count: 10, P50Ns: 2000, P99Ns: 9000, P999Ns: 12000}, "get": {Count: 0}},
			Latency:             map[string]*LatencySummary{"put": {P50Ns: 50000, P99Ns: 90000}},
		}, "server-side time (INFO): put p50 2.0 µs p99 9.0 µs p99.9 12.0 µs (10) vs client p50 50.0 µs p99 90.0 µs"},
	}
	for _, tt := range tests {
		if got := serverLine(&tt.r); got != tt.want {
			t.Errorf("serverLine = %q, want %q", got, tt.want)
		}
	}
}
