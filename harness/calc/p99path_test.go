package calc

import "testing"

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
