package harness

import (
	"runtime"
	"strings"
	"testing"
	"time"
)

// The USE line says, per resource, what the results measured and what
// they did not: the disk's busy share and requests in flight, the load
// against the cores (SATURATED above them), the generator's lateness in
// an open loop, and errors; over several runs, ranges.
func TestUseLine(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	withDisk := func(busy, inFlight, load float64) *BenchResult {
		r := fixedBench("kv", 1, 0, 30000)
		r.DeviceIO = &DeviceIO{Device: "vda", BusyFraction: f(busy), MeanInFlight: f(inFlight)}
		r.LoadAvg = load
		return r
	}
	openLoop := func(late bool, lagP99 int64, backlog int64) *BenchResult {
		r := withDisk(0.1, 0.1, 0.5)
		r.Rate, r.GeneratorLate, r.BacklogUnits = 1000, late, backlog
		r.PacerLag = &PacerLag{P99Ns: lagP99}
		return r
	}
	cancelled := withDisk(0.5, 1, 1)
	cancelled.Cancelled = true
	for _, c := range []struct {
		name string
		rs   []*BenchResult
		want string
	}{
		{"nothing measured", []*BenchResult{fixedBench("kv", 1, 0, 30000)},
			"USE: disk: no counters; CPU load unknown; generator: closed loop, paced by the store; errors: none (a store error stops the run)"},
		{"unavailable", []*BenchResult{func() *BenchResult {
			r := withDisk(0, 0, 1)
			r.DeviceIO = &DeviceIO{Unavailable: "/tmp is on tmpfs"}
			return r
		}()}, "USE: disk: no counters; CPU load 1.00 on 2 cores before the run; generator: closed loop, paced by the store; errors: none (a store error stops the run)"},
		{"busy disk, quiet CPU", []*BenchResult{withDisk(0.43, 0.92, 1.2)},
			"USE: disk vda busy 43% of the run, 0.92 requests in flight on average; CPU load 1.20 on 2 cores before the run; generator: closed loop, paced by the store; errors: none (a store error stops the run)"},
		{"saturated CPU", []*BenchResult{withDisk(0.05, 0.05, 6.3)},
			"USE: disk vda busy 5% of the run, 0.05 requests in flight on average; CPU SATURATED before the run: load 6.30 on 2 cores; generator: closed loop, paced by the store; errors: none (a store error stops the run)"},
		{"open loop on time", []*BenchResult{openLoop(false, 41000, 0)},
			"USE: disk vda busy 10% of the run, 0.10 requests in flight on average; CPU load 0.50 on 2 cores before the run; generator on time (pacer lag p99 41.0 µs); errors: none (a store error stops the run)"},
		{"open loop late, censored", []*BenchResult{openLoop(false, 30000, 0), openLoop(true, 1100000, 120)},
			"USE: disk vda busy 10% of the run, 0.10 requests in flight on average; CPU load 0.50 on 2 cores before the run; generator LATE in 1 of 2 open-loop runs (pacer lag p99 up to 1.10 ms), 120 units never started; errors: none (a store error stops the run)"},
		{"ranges and a cancelled run", []*BenchResult{withDisk(0.2, 0.3, 1.1), withDisk(0.45, 0.9, 1.4), cancelled},
			"USE: disk vda busy 20–50% of the run, 0.30–1.00 requests in flight on average; CPU load 1.00–1.40 on 2 cores before the run; generator: closed loop, paced by the store; errors: 1 of 3 runs cancelled before the end"},
		{"processors measured", []*BenchResult{func() *BenchResult {
			r := withDisk(0.1, 0.1, 0.5)
			r.CPU = &CPUUse{IntervalMs: 2000, Cores: 2, BusyFraction: 0.55, ProcessFraction: 0.48, StealFraction: 0.003, StealMs: 12}
			return r
		}()}, "USE: disk vda busy 10% of the run, 0.10 requests in flight on average; CPU load 0.50 on 2 cores before the run, busy 55% during it (this process 48%), steal 0.3%; generator: closed loop, paced by the store; errors: none (a store error stops the run)"},
		{"processors stolen", []*BenchResult{func() *BenchResult {
			r := withDisk(0.1, 0.1, 0.5)
			r.CPU = &CPUUse{IntervalMs: 2000, Cores: 2, BusyFraction: 0.3, ProcessFraction: 0.2, StealFraction: 0.04, StealMs: 160}
			return r
		}()}, "USE: disk vda busy 10% of the run, 0.10 requests in flight on average; CPU load 0.50 on 2 cores before the run, busy 30% during it (this process 20%), the hypervisor STOLE 4.0% (160 ms); generator: closed loop, paced by the store; errors: none (a store error stops the run)"},
		{"one cancelled run", []*BenchResult{cancelled}, "errors: cancelled before the end"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := useLine(c.rs)
			if c.name == "one cancelled run" {
				if !strings.HasSuffix(got, c.want) {
					t.Errorf("got  %q\nwant it to end %q", got, c.want)
				}
				return
			}
			if got != c.want {
				t.Errorf("got  %q\nwant %q", got, c.want)
			}
		})
	}
}

// The processors' account comes from two /proc files: the cpu line of
// /proc/stat (steal is its eighth counter) and utime + stime of
// /proc/self/stat, whose command name may hold spaces and parentheses.
func TestCPUDelta(t *testing.T) {
	before, err := parseProcStat("cpu  100 0 50 800 20 0 5 0 0 0\ncpu0 50 0 25 400 10 0 3 0 0 0\ncpu1 50 0 25 400 10 0 2 0 0 0\nintr 1\n")
	if err != nil {
		t.Fatal(err)
	}
	after, err := parseProcStat("cpu  160 0 70 900 30 0 10 30 0 0\ncpu0 80 0 35 450 15 0 5 15 0 0\ncpu1 80 0 35 450 15 0 5 15 0 0\n")
	if err != nil {
		t.Fatal(err)
	}
	if before.self, err = parseSelfStat("4242 (lab server) (x) S 1 1 1 0 -1 0 0 0 0 0 10 5 0 0 20 0 1 0"); err != nil || before.self != 15 {
		t.Fatalf("parseSelfStat = %d, %v; want 15 (utime 10 + stime 5, after a name with spaces and a parenthesis)", before.self, err)
	}
	after.self = 15 + 40
	u := cpuDelta(before, after, 1500*time.Millisecond)
	// 225 ticks in all: 60 user + 20 system + 5 softirq busy, 100 idle,
	// 10 iowait, 30 stolen; this process 40.
	near := func(got, want float64) bool { return got > want-1e-9 && got < want+1e-9 }
	if u.Cores != 2 || u.IntervalMs != 1500 || !near(u.BusyFraction, 85.0/225) || !near(u.ProcessFraction, 40.0/225) ||
		!near(u.IOWaitFraction, 10.0/225) || !near(u.StealFraction, 30.0/225) || u.StealMs != 300 {
		t.Errorf("cpuDelta = %+v; want 2 cores, 1500 ms, busy 85/225, process 40/225, iowait 10/225, steal 30/225 = 300 ms", u)
	}
	for _, bad := range []string{"intr 1\n", "cpu 1 2 3\n", "cpu 1 2 3 4 5 6 x 8\n"} {
		if _, err := parseProcStat(bad); err == nil {
			t.Errorf("parseProcStat(%q): no error", bad)
		}
	}
}

// A bench run carries the processors' account: on Linux read from /proc
// (cores counted, shares between 0 and 1), elsewhere why not.
func TestBenchCarriesCPU(t *testing.T) {
	r := execAs[BenchResult](t, "bench -engine null -workload fillrandom -duration 300ms")
	c := r.CPU
	switch {
	case c == nil:
		t.Fatal("the result has no cpu")
	case runtime.GOOS != "linux":
		if c.Unavailable == "" {
			t.Errorf("cpu on %s: %+v, want it unavailable, saying why", runtime.GOOS, c)
		}
	case c.Unavailable != "" || c.Cores < 1 || c.IntervalMs < 300 || c.BusyFraction < 0 || c.BusyFraction > 1 || c.ProcessFraction > 1 || c.StealFraction < 0:
		t.Errorf("cpu = %+v; want the processors counted over the 300 ms run, shares between 0 and 1", c)
	}
}
