package harness

import (
	"strings"
	"testing"
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
