package runspage

import (
	"testing"

	"kvlab/internal/archive"
)

// Where a run came from, as /runs says it: a run of an exercise's
// "Measure on this disk" names the exercise (or, archived before the
// page said which, that it was one), never "a cell".
func TestWhereFrom(t *testing.T) {
	tests := []struct {
		run  archive.Run
		want string
	}{
		{archive.Run{Source: "cell", Lesson: "07-crash-consistency", Cell: "exercise-durable-ack", Spec: "bench -engine mine -workload fillrandom -ops 2000"}, "07-crash-consistency · exercise durable-ack (Measure on this disk)"},
		{archive.Run{Source: "cell", Spec: "bench -engine mine -workload fillrandom -ops 2000"}, "an exercise's Measure on this disk"},
		{archive.Run{Source: "cell", Spec: "bench -engine mine-null -workload fillrandom -ops 2000"}, "an exercise's Measure on this disk"},
		{archive.Run{Source: "cell", Lesson: "01-mean-hides-the-tail", Cell: "always-run"}, "01-mean-hides-the-tail · always-run"},
		{archive.Run{Source: "cell", Spec: "bench -engine kv"}, "a cell"},
		{archive.Run{Source: "quiz", Lesson: "l", Quiz: "q"}, "l · quiz q"},
		{archive.Run{Source: "cli"}, "command line"},
	}
	for _, tt := range tests {
		if got := whereFrom(&tt.run); got != tt.want {
			t.Errorf("%+v: %q, want %q", tt.run, got, tt.want)
		}
	}
}
