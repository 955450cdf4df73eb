package harness

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
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
		{"ramp then flat", []float64{10e3, 30e3, 60e3, 80e3, 81e3, 80.5e3, 80e3, 81e3}, nil, true, 6, "steady over seconds 4-6"},
		{"still ramping", []float64{10e3, 20e3, 30e3, 40e3, 50e3, 60e3}, nil, false, 0, "varied by"},
		{"noisy", []float64{80e3, 60e3, 80e3, 60e3, 80e3, 60e3}, nil, false, 0, "varied by"},
		{"flat but debt growing", []float64{80e3, 80e3, 80e3, 80e3, 80e3}, []int64{0, 1e6, 2e6, 3e6, 4e6}, false, 0, "compaction debt grew"},
		{"debt drains, then flat", []float64{80e3, 80e3, 80e3, 80e3, 80e3, 80e3}, []int64{4e6, 2e6, 0, 0, 0, 0}, true, 5, "steady over seconds 3-5"},
		{"debt flat, not zero", []float64{50e3, 50e3, 50e3, 50e3}, []int64{9e6, 9.1e6, 9e6, 9e6}, true, 3, "steady over seconds 1-3"},
		{"too short", []float64{80e3, 80e3}, nil, false, 0, "fewer than the 3-second window"},
		{"noise within tolerance", []float64{80e3, 82e3, 79e3, 81e3}, []int64{0, 0, 0, 0}, true, 3, "steady over seconds 1-3"},
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
			// The evidence window is never empty when there were
			// samples: a short warm-up's seconds are all of it.
			if want := min(len(tt.ops), 3); len(st.LastWindow) != want {
				t.Errorf("last window of %d samples, want %d", len(st.LastWindow), want)
			}
		})
	}
}

// pebble's second backlog: level 0 files piling up while throughput and
// the byte debt look flat is not steady; the same files drained is.
func TestFindSteadyLevel0(t *testing.T) {
	flat := []float64{50e3, 50e3, 50e3, 50e3}
	debt := []int64{1e6, 1e6, 1e6, 1e6}
	grow := samples(flat, debt)
	for i := range grow {
		grow[i].L0Files = int64(2 + 3*i)
	}
	st := FindSteady(grow, 3, 0.05)
	if st.Reached || !strings.Contains(st.Evidence, "level 0 grew from 5 to 11 files") {
		t.Errorf("L0 growing: reached %v, evidence %q; want not reached, naming level 0", st.Reached, st.Evidence)
	}
	if len(st.LastWindow) != 3 || st.LastWindow[2].Second != 4 {
		t.Errorf("evidence window %+v, want seconds 2-4", st.LastWindow)
	}
	drained := samples(flat, debt)
	for i := range drained {
		drained[i].L0Files = 0
	}
	if st := FindSteady(drained, 3, 0.05); !st.Reached || st.AtSecond != 3 {
		t.Errorf("L0 empty: %+v, want reached at second 3", st)
	}
}

// A real -until-steady run: the warm-up's seconds are in warmup_timeline
// marked "warmup", the measured ones marked "measured", the verdict is
// consistent with its own evidence, and the warm-up's ops are not counted
// as measured. A tolerance no run can meet gives a run that reports it
// did not reach steady state, after the whole -max-warmup, and says why.
func TestUntilSteadyRun(t *testing.T) {
	for _, tt := range []struct {
		name      string
		tolerance float64
		mustFail  bool
	}{
		{"generous", 0.5, false},
		{"unreachable", 1e-12, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := runConfig{engine: "kv", sync: "none", workload: "overwrite", dist: "uniform",
				threads: 1, ops: 500, maxUnits: 1 << 20, exactCap: DefaultExactCap, valueSize: 100, keys: 2000, dir: t.TempDir(),
				untilSteady: true, maxWarmup: 400 * time.Millisecond, steadyTolerance: tt.tolerance, tick: 20 * time.Millisecond}
			var warmEvents int
			cfg.progress = func(p Progress) {
				if p.Phase == PhaseWarmup {
					warmEvents++
				}
			}
			r, err := runOne(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			st := r.SteadyState
			if st == nil {
				t.Fatal("no steady_state in a -until-steady run")
			}
			if r.Ops != 500 {
				t.Errorf("measured %d ops, want the 500 asked for (the warm-up's %d are not counted)", r.Ops, st.WarmupOps)
			}
			if len(r.WarmupTimeline) == 0 || warmEvents != len(r.WarmupTimeline) {
				t.Errorf("%d warm-up points and %d warm-up progress events, want one event per point and at least one", len(r.WarmupTimeline), warmEvents)
			}
			for _, p := range r.WarmupTimeline {
				if p.Phase != PhaseWarmup {
					t.Errorf("warm-up point %+v not marked %q", p, PhaseWarmup)
				}
			}
			for _, p := range r.Timeline {
				if p.Phase != PhaseMeasured {
					t.Errorf("measured point %+v not marked %q", p, PhaseMeasured)
				}
			}
			if len(st.LastWindow) > 0 && st.LastWindow[0].Debt < 0 {
				t.Errorf("kv's window %+v has no compaction debt; kv reports it", st.LastWindow)
			}
			switch {
			case st.Reached:
				if tt.mustFail {
					t.Fatalf("reached steady state with tolerance %g: %+v", tt.tolerance, st)
				}
				if st.Spread > st.Tolerance || st.AtSecond != len(r.WarmupTimeline) || len(st.LastWindow) != SteadyWindow {
					t.Errorf("reached at second %d with spread %v (tolerance %v) over %d samples, after %d warm-up points: inconsistent",
						st.AtSecond, st.Spread, st.Tolerance, len(st.LastWindow), len(r.WarmupTimeline))
				}
			default:
				if !strings.Contains(st.Evidence, "not steady within") || !strings.Contains(st.Evidence, "varied by") {
					t.Errorf("evidence %q, want what the last window failed", st.Evidence)
				}
				if st.WarmupSeconds < cfg.maxWarmup.Seconds() {
					t.Errorf("gave up after %.3f s, before -max-warmup %v", st.WarmupSeconds, cfg.maxWarmup)
				}
			}
			var buf strings.Builder
			if err := Write(&buf, "table", r); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(buf.String(), "steady state") {
				t.Errorf("table has no steady state line:\n%s", buf.String())
			}
			js, _ := json.Marshal(r)
			for _, k := range []string{`"steady_state"`, `"warmup_timeline"`, `"phase":"warmup"`, `"phase":"measured"`} {
				if !strings.Contains(string(js), k) {
					t.Errorf("JSON result has no %s", k)
				}
			}
		})
	}
}

// The flags: -until-steady replaces -warmup, the other two need it, and
// the canonical line round-trips.
func TestUntilSteadyFlags(t *testing.T) {
	for _, tt := range []struct{ line, want string }{
		{"bench -until-steady -warmup 10", "-until-steady and -warmup 10: give one or the other"},
		{"bench -max-warmup 10s", "-max-warmup 10s: applies with -until-steady only"},
		{"bench -steady-tolerance 3", "-steady-tolerance 3: applies with -until-steady only"},
		{"bench -until-steady -steady-tolerance 90", "-steady-tolerance 90: must be a percentage between 0.1 and 50"},
		{"bench -until-steady -max-warmup 11m", "-max-warmup 11m: must be a duration between 100ms and 10m0s"},
		{"bench -until-steady -dishonest-no-warmup", "-until-steady and -dishonest-no-warmup"},
	} {
		if _, err := ParseSpec(tt.line, DefaultLimits()); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParseSpec(%q) = %v, want an error saying %q", tt.line, err, tt.want)
		}
	}
	s, err := ParseSpec("bench -engine kv,null -workload overwrite -duration 5s -until-steady -max-warmup 30s -steady-tolerance 3", DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	want := "-until-steady -max-warmup 30s -steady-tolerance 3"
	if got := s.String(); !strings.Contains(got, want) || strings.Contains(got, " -warmup ") {
		t.Errorf("canonical line %q, want it to carry %q and no -warmup", got, want)
	}
	if s.Warmup != 0 || !s.UntilSteady || s.MaxWarmup != 30*time.Second || s.SteadyTolerance != 3 {
		t.Errorf("spec %+v", s)
	}
	if s2, err := ParseSpec(s.String(), DefaultLimits()); err != nil || s2.String() != s.String() {
		t.Errorf("canonical line does not round-trip: %v %v", err, s2)
	}
}
