package grader

import "testing"

// TestTornTailStubFailsEveryCheck: the starting code passes the workload
// and the empty disk, and nothing that needs the tail handled.
func TestTornTailStubFailsEveryCheck(t *testing.T) {
	r := mustRun(t, "torn-tail", tornTailExercise.Stub)
	for _, c := range r.Cases[3:] {
		if c.Pass {
			t.Errorf("stub passes %q: %s", c.Input, c.Got)
		}
	}
}
