package classroom

import (
	"fmt"
	"math"

	"kvlab/harness"
)

// Physical bounds of a shared result. A result is refused (an error
// wrapping ErrOutOfBounds) when a rate or a latency it carries is not a
// finite number within them: nothing this lab measures goes past them,
// and a board must never have to draw 1.7e308 ops/s.
const (
	// MaxOpsPerSec bounds every rate: a billion operations a second,
	// far more than any engine here does on one machine.
	MaxOpsPerSec = 1e9
	// MaxLatencyNs bounds every latency, sync time and probe cost: one
	// hour, in nanoseconds.
	MaxLatencyNs = 3600e9
)

// bounded is one figure of a result with its bound.
type bounded struct {
	name string  // where it is in the result, e.g. result.latency.put.p99_ns
	v    float64 // its value
	max  float64 // MaxOpsPerSec or MaxLatencyNs
}

func (b bounded) check() error {
	if math.IsNaN(b.v) || math.IsInf(b.v, 0) || b.v < 0 || b.v > b.max {
		unit := "ns"
		if b.max == MaxOpsPerSec {
			unit = "ops/s"
		}
		return fmt.Errorf("%w: %s %g: must be between 0 and %g %s", ErrOutOfBounds, b.name, b.v, b.max, unit)
	}
	return nil
}

// CheckMeasure refuses a board value outside its measure's bounds.
func CheckMeasure(m string, v float64) error {
	if MeasureUnit(m) == "ops/s" {
		return bounded{m, v, MaxOpsPerSec}.check()
	}
	return bounded{m, v, MaxLatencyNs}.check()
}

// checkAll returns the first figure out of bounds.
func checkAll(bs []bounded) error {
	for _, b := range bs {
		if err := b.check(); err != nil {
			return err
		}
	}
	return nil
}

// benchBounds lists a bench result's rates and latencies; at names the
// result ("result" or "result[i]").
func benchBounds(at string, r *harness.BenchResult) []bounded {
	bs := []bounded{{at + ".ops_per_sec", r.OpsPerSec, MaxOpsPerSec}, {at + ".units_per_sec", r.UnitsPerSec, MaxOpsPerSec},
		{at + ".rate", r.Rate, MaxOpsPerSec}, {at + ".fsync_mean_ns", r.FsyncMeanNs, MaxLatencyNs},
		{at + ".fsync_p50_ns", float64(r.FsyncP50Ns), MaxLatencyNs}, {at + ".fsync_p99_ns", float64(r.FsyncP99Ns), MaxLatencyNs},
		{at + ".fsync_max_ns", float64(r.FsyncMaxNs), MaxLatencyNs}}
	for field, lat := range map[string]map[string]*harness.LatencySummary{"latency": r.Latency, "latency_uncorrected": r.LatencyUncorrected} {
		for op, l := range lat {
			if l == nil {
				continue
			}
			p := at + "." + field + "." + op + "."
			bs = append(bs, bounded{p + "mean_ns", l.MeanNs, MaxLatencyNs}, bounded{p + "min_ns", float64(l.MinNs), MaxLatencyNs},
				bounded{p + "p50_ns", float64(l.P50Ns), MaxLatencyNs}, bounded{p + "p95_ns", float64(l.P95Ns), MaxLatencyNs},
				bounded{p + "p99_ns", float64(l.P99Ns), MaxLatencyNs}, bounded{p + "p999_ns", float64(l.P999Ns), MaxLatencyNs},
				bounded{p + "max_ns", float64(l.MaxNs), MaxLatencyNs})
		}
	}
	return bs
}

// probeBounds lists a probe's costs.
func probeBounds(p *harness.ProbeResult) []bounded {
	bs := []bounded{{"result.write_ns", p.WriteNs, MaxLatencyNs},
		// fdatasync_ns is a difference of two means and may be slightly
		// negative on a fast disk; only its size is bounded.
		{"result.fdatasync_ns (its size)", math.Abs(p.FdatasyncNs), MaxLatencyNs}}
	for name, c := range map[string]harness.ProbeCost{"write": p.Write, "write_fdatasync": p.WriteFdatasync} {
		at := "result." + name + "."
		bs = append(bs, bounded{at + "mean_ns", c.MeanNs, MaxLatencyNs}, bounded{at + "p50_ns", float64(c.P50Ns), MaxLatencyNs},
			bounded{at + "p99_ns", float64(c.P99Ns), MaxLatencyNs}, bounded{at + "max_ns", float64(c.MaxNs), MaxLatencyNs},
			bounded{at + "ops_per_sec", c.OpsPerSec, MaxOpsPerSec})
	}
	return bs
}
