package quiz

import (
	"strings"
	"testing"
)

// bench is a bench result's decoded JSON with its idle baseline's
// conditions: other programs' share of the processors, and what another
// program wrote and flushed to the disk in 200 ms.
func bench(ops, otherCPU, otherBytes, otherFlushes float64) map[string]any {
	return map[string]any{"kind": "bench", "ops_per_sec": ops, "cpu": map[string]any{"cores": 2.0, "idle_ms": 200.0, "idle_busy_fraction": otherCPU},
		"device_io": map[string]any{"idle_ms": 200.0, "idle_write_bytes": otherBytes, "idle_flush_requests": otherFlushes}}
}

// A prediction measured on a busy machine (other programs holding a quarter of
// the processors, or streaming writes or flushes to the disk, in the idle
// time just before a run) is neither right nor wrong, even when it is
// exactly the measured value, and the reply says what the runs'
// conditions showed; on a quiet machine, or beside a journal's single
// commit, the verdict stands.
func TestBusyMachineGradesNoPrediction(t *testing.T) {
	q, err := Parse("id: q\nquestion: ?\ncell: c\npredict: yes\nanswer: $0.ops_per_sec\ntolerance: 10%\n")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		rounds [][]any
		busy   string // what the reply names ("" when graded)
	}{
		{"quiet", [][]any{{bench(1000, 0.02, 0, 0)}}, ""},
		{"a journal's commit", [][]any{{bench(1000, 0.05, 64<<10, 1)}}, ""},
		{"others just under a quarter of the processors", [][]any{{bench(1000, 0.24, 0, 0)}}, ""},
		{"others at a quarter of the processors", [][]any{{bench(1000, 0.25, 0, 0)}}, "other programs held up to 25% of the processors just before 1 of 1 runs"},
		{"another program streaming writes", [][]any{{bench(1000, 0.05, 1<<20, 0)}}, "writing to the disk just before 1 of 1 runs (up to 5.2 MB/s and 0 flushes/s)"},
		{"another program flushing", [][]any{{bench(1000, 0.05, 0, 2)}}, "(up to 0.0 MB/s and 10 flushes/s)"},
		{"one busy round of three", [][]any{{bench(1000, 0, 0, 0)}, {bench(1010, 0.95, 0, 0)}, {bench(990, 0, 0, 0)}}, "up to 95% of the processors just before 1 of 3 runs"},
		{"a busy line of two", [][]any{{bench(1000, 0, 0, 0), []any{bench(1000, 0, 0, 0), bench(1000, 0, 0, 7)}}}, "just before 1 of 3 runs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			graded, err := CheckRepeated(q, tc.rounds, "1000")
			if err != nil || !graded.Correct {
				t.Fatalf("graded %+v (%v), want right before the rule", graded, err)
			}
			fb := DeclineIfBusy(graded, tc.rounds...)
			switch {
			case tc.busy == "" && (!fb.Correct || fb.TooNoisy || fb.Busy != ""):
				t.Errorf("correct %v too_noisy %v busy %q, want graded right", fb.Correct, fb.TooNoisy, fb.Busy)
			case tc.busy != "" && (fb.Correct || !fb.TooNoisy || !strings.Contains(fb.Busy, tc.busy)):
				t.Errorf("correct %v too_noisy %v busy %q, want not graded, naming %q", fb.Correct, fb.TooNoisy, fb.Busy, tc.busy)
			}
		})
	}
}

// Only bench results and probe lines carry conditions: a model's result,
// or a probe without them (a bench run's own), is not counted as a run,
// busy or not.
func TestBusyCountsBenchResults(t *testing.T) {
	probe := map[string]any{"kind": "probe", "cpu": map[string]any{"cores": 2.0, "idle_busy_fraction": 1.0}}
	if why := Busy([]any{probe}); why != "" {
		t.Errorf("a probe result: %q, want nothing", why)
	}
	if why := Busy([]any{probe, bench(1, 1, 0, 0)}); !strings.Contains(why, "1 of 1 runs") {
		t.Errorf("a probe and a busy bench: %q, want 1 of 1 runs", why)
	}
}

// A probe line (probe -methods, which cheapest-sync grades) carries its
// conditions too: the processors' under cpu_use (its cpu is the model's
// name), the disk's under device_io.
func TestBusyReadsAProbeLine(t *testing.T) {
	probe := func(otherCPU, otherBytes float64) map[string]any {
		return map[string]any{"kind": "probe", "cpu": "AMD EPYC", "cpu_use": map[string]any{"idle_ms": 200.0, "idle_busy_fraction": otherCPU},
			"device_io": map[string]any{"idle_ms": 200.0, "idle_write_bytes": otherBytes, "idle_flush_requests": 0.0}}
	}
	for _, tc := range []struct {
		name  string
		probe map[string]any
		want  string
	}{
		{"quiet", probe(0.02, 0), ""},
		{"processors held", probe(0.9, 0), "other programs held up to 90% of the processors just before 1 of 1 runs"},
		{"a writer on the disk", probe(0, 4<<20), "another program was writing to the disk just before 1 of 1 runs"},
		{"no conditions (a model line)", map[string]any{"kind": "model", "cpu_use": map[string]any{"idle_busy_fraction": 0.9}}, ""},
	} {
		if got := Busy([]any{tc.probe}); (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: Busy %q, want %q", tc.name, got, tc.want)
		}
	}
}
