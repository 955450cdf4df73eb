package harness

import (
	"strings"
	"testing"
)

// samples builds a warm-up from per-second throughputs and debts.
func samples(ops []float64, debt []int64) []SteadySample {
	s := make([]SteadySample, len(ops))
	for i := range ops {
		s[i] = SteadySample{Second: i + 1, OpsPerSec: ops[i], Debt: -1}
		if debt != nil {
			s[i].Debt = debt[i]
		}
	}
	return s
}

// The detector on recorded warm-ups, steady and not.
func TestFindSteady(t *testing.T) {
	tests := []struct {
		name     string
		ops      []float64
		debt     []int64
		reached  bool
		at       int
		evidence string
	}{
		{"ramp then flat", []float64{10e3, 30e3, 60e3, 80e3, 81e3, 80.5e3, 80e3, 81e3}, nil, true, 6, ""},
		{"still ramping", []float64{10e3, 20e3, 30e3, 40e3, 50e3, 60e3}, nil, false, 0, "varied by"},
		{"noisy", []float64{80e3, 60e3, 80e3, 60e3, 80e3, 60e3}, nil, false, 0, "varied by"},
		{"flat but debt growing", []float64{80e3, 80e3, 80e3, 80e3, 80e3}, []int64{0, 1e6, 2e6, 3e6, 4e6}, false, 0, "compaction debt grew"},
		{"debt drains, then flat", []float64{80e3, 80e3, 80e3, 80e3, 80e3, 80e3}, []int64{4e6, 2e6, 0, 0, 0, 0}, true, 5, ""},
		{"debt flat, not zero", []float64{50e3, 50e3, 50e3, 50e3}, []int64{9e6, 9.1e6, 9e6, 9e6}, true, 3, ""},
		{"too short", []float64{80e3, 80e3}, nil, false, 0, "fewer than the 3-second window"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := FindSteady(samples(tt.ops, tt.debt), 3, 0.05)
			if st.Reached != tt.reached || st.AtSecond != tt.at {
				t.Errorf("reached %v at second %d (%s), want %v at %d", st.Reached, st.AtSecond, st.Evidence, tt.reached, tt.at)
			}
			if !strings.Contains(st.Evidence, tt.evidence) {
				t.Errorf("evidence %q, want it to say %q", st.Evidence, tt.evidence)
			}
			if st.Reached && st.Spread > st.Tolerance {
				t.Errorf("reached with spread %v over tolerance %v", st.Spread, st.Tolerance)
			}
		})
	}
}
