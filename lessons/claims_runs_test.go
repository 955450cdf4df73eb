package lessons_test

// Claims about how long a cell's runs last and what each run's own
// figures show, checked on the cells' results.

import "testing"

// Lesson 8's headline-ratio divides the in-memory reads' ops/s by the
// durable writes': a read line over in milliseconds made that ratio move
// from 36 to 287 between runs at a steady p50. The chapter itself calls
// such runs too short, so the read line runs a full second.
func TestTwoNumbersReadsRunASecond(t *testing.T) {
	rs := cellResults(t, "08-", "two-numbers")
	if w := num(t, rs[0], "wall_seconds"); w < 0.9 {
		t.Errorf("two-numbers: the readrandom line ran %.3f s; the lesson says a full second", w)
	}
}
