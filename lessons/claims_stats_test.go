package lessons_test

// Lesson 9's statistics: what the U test can tell from n runs a side, how
// often it finds a change of a given size, and what the order of the runs
// does to a before/after comparison when the machine drifts.

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"golang.org/x/perf/benchmath"

	"kvlab/internal/archive"
)

// uTestP is benchmath's two-sided U test p-value, as benchstat and
// labserver compare compute it.
func uTestP(a, b []float64) float64 {
	th := benchmath.DefaultThresholds
	th.CompareAlpha = 0.05
	return benchmath.AssumeNothing.Compare(benchmath.NewSample(a, &th), benchmath.NewSample(b, &th)).P
}

// swapped is two groups of six that do not overlap but for k pairs that
// go the wrong way (k <= 6): before's fastest run moved past the slowest
// k of after's.
func swapped(k int) (before, after []float64) {
	for i := range 6 {
		before = append(before, float64(i))
		after = append(after, float64(6+i))
	}
	before[5] = 6 + float64(k) - 0.5
	return before, after
}

// Six a side: separated, p = 0.0022; up to 5 of the 36 pairs the wrong
// way round and p is still at most 0.05, 6 and it is not. And the power
// the text quotes: how often six a side find a change of 1, 2 and 3
// standard deviations between runs that scatter normally (4000 trials
// each, a fixed seed).
func TestChapter9Power(t *testing.T) {
	body := flat(string(lessonByPrefix(t, "09-").Body))
	b0, a0 := swapped(0)
	if want := fmt.Sprintf("six a side give p = %.4f", uTestP(b0, a0)); !strings.Contains(body, want) {
		t.Errorf("lesson 9 does not say %q", want)
	}
	b5, a5 := b0[:5], a0[:5]
	if want := fmt.Sprintf("five a side give p = %.4f", uTestP(b5, a5)); !strings.Contains(body, want) {
		t.Errorf("lesson 9 does not say %q", want)
	}
	most := -1
	for k := 0; k <= 6; k++ {
		b, a := swapped(k)
		if uTestP(b, a) <= 0.05 {
			most = k
		}
	}
	if want := fmt.Sprintf("up to %d of the 36 and p is still at most 0.05, %d and it is not", most, most+1); !strings.Contains(body, want) {
		t.Errorf("lesson 9 does not say %q", want)
	}
	rng := rand.New(rand.NewPCG(9, 9))
	power := func(shift float64) float64 {
		const trials = 4000
		found := 0
		for range trials {
			before, after := make([]float64, 6), make([]float64, 6)
			for i := range 6 {
				before[i], after[i] = rng.NormFloat64(), shift+rng.NormFloat64()
			}
			if uTestP(before, after) <= 0.05 {
				found++
			}
		}
		return float64(found) / trials
	}
	for _, c := range []struct {
		shift    float64
		text     string
		lo, hi   float64
		measured float64
	}{
		{shift: 1, text: "a change of 1σ, give a significant verdict in 3 tries of 10", lo: 0.25, hi: 0.35},
		{shift: 2, text: "a change of 2σ in 8 of 10", lo: 0.75, hi: 0.85},
		{shift: 3, text: "of 3σ in 99 of 100", lo: 0.985, hi: 0.995},
	} {
		p := power(c.shift)
		t.Logf("power of six a side at %vσ: %.3f", c.shift, p)
		if p < c.lo || p >= c.hi {
			t.Errorf("six a side find a %vσ change in %.3f of trials; the lesson says %q", c.shift, p, c.text)
		}
		if !strings.Contains(body, c.text) {
			t.Errorf("lesson 9 does not say %q", c.text)
		}
	}
}

// The orders of an A/A test under a linear drift, through the lesson's
// own quiz answers: on a timeline whose ops/s fall by the same step every
// second, the mirrored order (ABBAABBA) gives B ÷ A = 1 exactly, the
// alternating one (ABABABAB) is off by one step and the block one
// (AAAABBBB) by four, whatever the level and the step.
func TestInterleavingCancelsLinearDrift(t *testing.T) {
	l := lessonByPrefix(t, "09-")
	body := flat(string(l.Body))
	for _, want := range []string{"cancels exactly; ABAB leaves one step of it", "AAAABBBB leaves four"} {
		if !strings.Contains(body, want) {
			t.Errorf("lesson 9 does not say %q", want)
		}
	}
	block, mirrored := quizByID(t, l, "drift-block"), quizByID(t, l, "drift-mirrored")
	for _, c := range []struct{ start, step float64 }{{50000, 4167}, {30000, 100}, {1000, -50}, {800000, 0}} {
		level := func(i float64) float64 { return c.start - c.step*i }
		var tl []any
		for i := range 8 {
			tl = append(tl, map[string]any{"second": float64(i + 1), "ops_per_sec": level(float64(i))})
		}
		rs := []any{map[string]any{"timeline": tl}}
		// Medians of four: the mean of the middle two seconds of each side.
		wantBlock := level(5.5) / level(1.5) // B = seconds 5-8 (4.5..7.5 → 5.5), A = 1-4
		if got := answer(t, block, rs); math.Abs(got-wantBlock) > 1e-9 {
			t.Errorf("start %v, step %v: drift-block gives %v, want %v (four steps of drift)", c.start, c.step, got, wantBlock)
		}
		if got := answer(t, mirrored, rs); math.Abs(got-1) > 1e-9 {
			t.Errorf("start %v, step %v: drift-mirrored gives %v, want exactly 1", c.start, c.step, got)
		}
		// ABAB: A = seconds 1,3,5,7 (indices 0,2,4,6, median at 3), B one later.
		v, err := mustShowABAB(t, mirrored, rs)
		if err != nil {
			t.Fatal(err)
		}
		if want := level(4) / level(3); math.Abs(v-want) > 1e-3*math.Abs(want) {
			t.Errorf("start %v, step %v: the ABAB ratio shown is %v, want %v (one step)", c.start, c.step, v, want)
		}
	}
}

// mustShowABAB reads the ABABABAB ratio from drift-mirrored's show line.
func mustShowABAB(t *testing.T, q interface {
	ShowText([]any) (string, error)
}, rs []any) (float64, error) {
	t.Helper()
	s, err := q.ShowText(rs)
	if err != nil {
		return 0, err
	}
	const tag = "ABABABAB (A = seconds 1, 3, 5, 7): B ÷ A = "
	i := strings.Index(s, tag)
	if i < 0 {
		return 0, fmt.Errorf("drift-mirrored's show line has no %q: %q", tag, s)
	}
	var v float64
	if _, err := fmt.Sscanf(strings.TrimRight(s[i+len(tag):], ";"), "%g", &v); err != nil {
		return 0, fmt.Errorf("drift-mirrored's show line: %q: %v", s[i:], err)
	}
	return v, nil
}

// On the drift-order cell's own run: the block order finds a change in a
// line compared with itself (B at most 0.85 of A: the store's drift over
// four seconds is 1/3 of its start), the mirrored order does not (within
// the quiz's 15% of 1). Median of three runs when the first misses.
func TestDriftOrderOnTheCell(t *testing.T) {
	l := lessonByPrefix(t, "09-")
	block, mirrored := quizByID(t, l, "drift-block"), quizByID(t, l, "drift-mirrored")
	b := medianOfRuns(t, "09-", "drift-order", func(rs []any) []float64 { return []float64{answer(t, block, rs)} },
		func(v float64) bool { return v <= 0.85 })[0]
	m := medianOfRuns(t, "09-", "drift-order", func(rs []any) []float64 { return []float64{answer(t, mirrored, rs)} },
		func(v float64) bool { return math.Abs(v-1) <= 0.15 })[0]
	t.Logf("drift-order: AAAABBBB B÷A = %.3f, ABBAABBA B÷A = %.3f", b, m)
	if b > 0.85 {
		t.Errorf("drift-order: the block order's B÷A is %.3f; the lesson says the drift makes B clearly slower (≤ 0.85)", b)
	}
	if math.Abs(m-1) > 0.15 {
		t.Errorf("drift-order: the mirrored order's B÷A is %.3f; the lesson says close to 1 (within 15%%)", m)
	}
	if math.Abs(math.Log(m)) >= math.Abs(math.Log(b)) {
		t.Errorf("drift-order: the mirrored order (%.3f) is no closer to 1 than the block (%.3f)", m, b)
	}
	// The U test on the seconds themselves: the block order looks like a
	// change, the mirrored one less so.
	rs := cellResults(t, "09-", "drift-order")
	sec := func(idx ...int) []float64 {
		var v []float64
		for _, i := range idx {
			v = append(v, num(t, rs[0], fmt.Sprintf("timeline.%d.ops_per_sec", i)))
		}
		return v
	}
	pBlock, pMirrored := uTestP(sec(0, 1, 2, 3), sec(4, 5, 6, 7)), uTestP(sec(0, 3, 4, 7), sec(1, 2, 5, 6))
	t.Logf("drift-order: U test p, AAAABBBB %.3f, ABBAABBA %.3f", pBlock, pMirrored)
	if pBlock >= pMirrored {
		t.Errorf("drift-order: the U test's p is %.3f for the block order and %.3f for the mirrored one; the lesson says the block order looks like a change", pBlock, pMirrored)
	}
}

// The sample-size cell compared as the text says: its two -repeat 5
// lines, each one run, give compare a verdict on ops/s; their first three
// runs a side give "too few runs".
func TestSampleSizeCellCompares(t *testing.T) {
	rs := cellResults(t, "09-", "sample-size")
	run := func(id int64, v any) archive.Run {
		raw, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return archive.Run{ID: id, Kind: "bench", Result: raw}
	}
	first3 := func(v any) any { return v.([]any)[:3] }
	for _, c := range []struct {
		name       string
		a, b       any
		wantTooFew bool
	}{
		{"five a side", rs[0], rs[1], false},
		{"three a side", first3(rs[0]), first3(rs[1]), true},
	} {
		cmp, err := archive.Compare([]archive.Run{run(1, c.a)}, []archive.Run{run(2, c.b)})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		ops := cmp.Metrics[0]
		t.Logf("%s: ops/s %v → %v, p = %.4f, %s", c.name, ops.A.Values, ops.B.Values, ops.P, ops.Verdict)
		if ops.TooFew != c.wantTooFew {
			t.Errorf("%s: compare's ops/s verdict is %q (p = %.4f); the lesson says %s", c.name, ops.Verdict, ops.P,
				map[bool]string{true: `"too few runs"`, false: "a verdict"}[c.wantTooFew])
		}
	}
}
