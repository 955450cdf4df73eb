package lessons_test

// Lesson 9's claims about the cart script ("Your workload, as a
// script"), checked on the results of its cart cell.

import (
	"math"
	"slices"
	"strings"
	"testing"
)

// cartOrder is the engine of each result of the cart cell's line: the
// floor (null) first, then kv, pebble and sqlite, in three mirrored
// rounds. The cart quizzes read their medians at these indices.
var cartOrder = []string{"null", "kv", "pebble", "sqlite", "sqlite", "pebble", "kv", "null", "null", "kv", "pebble", "sqlite"}

// Lesson 9, "Your workload, as a script": the rounds run in mirrored
// order; every engine runs exactly the same units and primitive ops (the
// script's random draws are seeded alike), the floor's ranges find
// nothing, so its ops equal its units; a unit is a little over one op
// and a quarter (1.15 to 1.45: the run is seeded, so this is a count,
// not a timing);
// and the floor runs at least twice the units per second of the fastest
// engine (medians of the three rounds, judged on the median of three
// runs of the cell when the first misses).
func TestCartScriptClaims(t *testing.T) {
	l := lessonByPrefix(t, "09-")
	sec := section(t, l, "The workload families")
	i := strings.Index(sec, "### Your workload, as a script")
	if i < 0 {
		t.Fatal("lesson 9 has no subsection \"Your workload, as a script\"")
	}
	body := flat(sec[i:])
	for _, want := range []string{"exactly the same `units` and the same primitive `ops`", "at least twice as many units per second as the fastest engine",
		"its ops equal its units", "a little over one op and a quarter", "then `sqlite`, `pebble`, `kv`, `null`"} {
		if !strings.Contains(body, want) {
			t.Errorf("lesson 9's script section does not say %q", want)
		}
	}
	rs := cellResults(t, "09-", "cart")
	lines, _ := rs[0].([]any)
	var got []string
	for _, r := range lines {
		e, _ := r.(map[string]any)["engine"].(string)
		got = append(got, e)
	}
	if !slices.Equal(got, cartOrder) {
		t.Fatalf("cart: engines in the order %v, want %v (the quizzes read kv, pebble and sqlite at those indices)", got, cartOrder)
	}
	units, ops := num(t, lines[1], "units"), num(t, lines[1], "ops")
	for i, r := range lines {
		u, o := num(t, r, "units"), num(t, r, "ops")
		switch {
		case u != units:
			t.Errorf("cart line %d (%s): %v units, kv ran %v; the lesson says every engine runs the same units", i, cartOrder[i], u, units)
		case cartOrder[i] == "null" && o != u:
			t.Errorf("cart line %d (null): %v ops in %v units; the lesson says the floor's ranges find nothing, so its ops equal its units", i, o, u)
		case cartOrder[i] != "null" && o != ops:
			t.Errorf("cart line %d (%s): %v ops, kv did %v; the lesson says kv, pebble and sqlite do the same ops", i, cartOrder[i], o, ops)
		}
	}
	if per := ops / units; per < 1.15 || per > 1.45 {
		t.Errorf("cart: %.3f primitive ops per unit; the lesson says a little over one and a quarter", per)
	}
	floorOverFastest := func(rs []any) []float64 {
		lines, _ := rs[0].([]any)
		med := func(idx ...int) float64 {
			var v []float64
			for _, i := range idx {
				v = append(v, num(t, lines[i], "wu_per_sec"))
			}
			slices.Sort(v)
			return v[len(v)/2]
		}
		fastest := math.Max(med(1, 6, 9), math.Max(med(2, 5, 10), med(3, 4, 11)))
		return []float64{med(0, 7, 8) / math.Max(fastest, 1)}
	}
	x := medianOfRuns(t, "09-", "cart", floorOverFastest, func(x float64) bool { return x >= 2 })[0]
	t.Logf("cart: the floor runs %.2f times the fastest engine's wu/s", x)
	if x < 2 {
		t.Errorf("cart: the floor's wu/s is %.2f times the fastest engine's; the lesson says at least twice", x)
	}
}
