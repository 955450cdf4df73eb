package calc

import (
	"math"
	"testing"
)

func TestMeasuredP99PathRule(t *testing.T) {
	for _, tt := range []struct {
		p99, putP50, fsyncP50 float64
		want                  string
	}{
		{115_000, 1_800, 100_000, P99Slow},   // the run in the issue, whatever the mean
		{4_500, 1_800, 300_000, P99Fast},     // periodic: p99 a write
		{250_000, 240_000, 200_000, P99Slow}, // always: every Put is slow
		{19_000, 2_000, 200_000, P99Fast},    // just below sqrt(2 µs x 200 µs) = 20 µs
		{21_000, 2_000, 200_000, P99Slow},    // just above it
		{5_000, 2_000, 0, P99Fast},           // no fdatasync ran
		{300_000, 0, 200_000, P99Slow},       // Puts below the clock's resolution
	} {
		if got := MeasuredP99Path(tt.p99, tt.putP50, tt.fsyncP50); got != tt.want {
			t.Errorf("MeasuredP99Path(p99 %v, put p50 %v, fsync p50 %v) = %s, want %s", tt.p99, tt.putP50, tt.fsyncP50, got, tt.want)
		}
	}
}

// A model line has no run: its loss window is counted at 1/T_write and
// says so; AtRate restates it at a measured rate.
func TestLossWindowRateSource(t *testing.T) {
	p, err := Periodic(10e6, 1000, 1e6) // periodic:10ms, 1 µs writes, 1 ms flushes
	if err != nil {
		t.Fatal(err)
	}
	if p.RateSource != RateFromTWrite || p.WriteRate != 1e6 || p.LossWindowWrites != 11000 {
		t.Errorf("model line: rate source %q rate %v window %v writes, want t_write, 1e6/s, 11000", p.RateSource, p.WriteRate, p.LossWindowWrites)
	}
	p.AtRate(2000)
	if p.RateSource != RateFromRun || p.WriteRate != 2000 || p.LossWindowWrites != 22 || p.LossWindowMs != 11 {
		t.Errorf("at 2000/s: rate source %q rate %v window %v writes / %v ms, want run, 2000, 22, 11", p.RateSource, p.WriteRate, p.LossWindowWrites, p.LossWindowMs)
	}
	b, _ := Batch(100, 1000, 1e6)
	b.AtRate(5000)
	if b.LossWindowWrites != 99 || b.LossWindowMs != 19.8 {
		t.Errorf("batch:100 at 5000/s: %v writes / %v ms, want 99 / 19.8", b.LossWindowWrites, b.LossWindowMs)
	}
	for _, bad := range []float64{0, -1, math.Inf(1), math.NaN()} {
		q := p
		q.AtRate(bad)
		if q != p {
			t.Errorf("AtRate(%v) changed the prediction", bad)
		}
	}
}
