package lessons_test

import (
	"math"
	"strings"
	"testing"
)

// Lesson 6's knee. The text says one writer pays a whole flush per Put
// (its rate is about 1 ÷ (T_fsync + T_write)); that the curve rises
// nearly in proportion to the writers below the knee n* ≈ T_fsync ÷
// T_write and flattens beyond it; that the sweep goes to 256 writers to
// show it; and that knee-threads, "predict n*", is graded on the knee of
// the reader's own curve, read from the 256-thread row past it: its mean
// fdatasync times its ops/s, T_fsync ÷ T_write over the same seconds (the
// highest row over the 1-thread row divides a flush and a Put timed
// seconds apart, and a shared disk's drift between them lands in it).
func TestGroupCommitKnee(t *testing.T) {
	l := lessonByPrefix(t, "06-")
	body := flat(string(l.Body))
	for _, want := range []string{"n* = (T_fsync + T_write) ÷ T_write ≈ T_fsync ÷ T_write", "-threads 1,2,4,8,16,32,64,128,256", "straight line"} {
		if !strings.Contains(body, flat(want)) {
			t.Errorf("lesson 6 does not say %q", want)
		}
	}
	q := quizByID(t, l, "knee-threads")
	if !q.Predict || q.Reason {
		t.Errorf("knee-threads: predict %v, reason %v; it is a prediction of the reader's disk", q.Predict, q.Reason)
	}
	// The answer on a made-up curve whose ceiling is reached at 64
	// writers and dips after, its flush slower in the first row than in
	// the last: the last row's mean fdatasync (1 ms) times its ops/s
	// (28,000), not the ceiling over the 1-thread rate (30).
	threads := []float64{1, 2, 4, 8, 16, 32, 64, 128, 256}
	ops := []float64{1000, 1990, 3900, 7600, 14000, 24000, 30000, 29000, 28000}
	fsync := []float64{2e6, 1e6, 1e6, 1e6, 1e6, 1e6, 1e6, 1e6, 1e6}
	var sweep []any
	for i, n := range threads {
		sweep = append(sweep, synthetic("threads", n, "ops_per_sec", ops[i], "fsync_mean_ns", fsync[i]))
	}
	if got, want := answer(t, q, []any{sweep}), 28.0; math.Abs(got-want) > 1e-9 {
		t.Errorf("knee-threads on a made-up curve: got %v, want the 256-thread row's 1 ms mean fdatasync × its 28,000 ops/s = %v", got, want)
	}

	// The relations, on the reader's curve, each judged on the median of
	// three runs when the first misses (medianOfRuns): one value per
	// relation and row, ok when ≥ 1.
	const rows = 9
	margins := func(rs []any) []float64 {
		curve := rs[0].([]any)
		if len(curve) != rows {
			t.Fatalf("curve: %d rows, want %d", len(curve), rows)
		}
		x := make([]float64, rows)
		n := make([]float64, rows)
		top := 0.0
		for i, r := range curve {
			x[i], n[i] = num(t, r, "ops_per_sec"), num(t, r, "threads")
			top = max(top, x[i])
		}
		// The knee as the lesson reads it: the last row's T_fsync ÷
		// T_write.
		knee := num(t, curve[rows-1], "fsync_mean_ns") * x[rows-1] / 1e9
		out := make([]float64, 0, 1+2*rows)
		// One writer: a flush per Put, so ops/s × T_fsync is a little
		// under 1 (T_write and the loop's own time are the rest).
		one := x[0] * num(t, curve[0], "fsync_mean_ns") / 1e9
		out = append(out, min(one/0.5, 1.05/one))
		for i := range rows {
			// Well below the knee (n ≤ n*/4, where the formula gives
			// 0.8 n) the speed-up is at least n/4; well beyond it (n ≥
			// 2n*, where it gives at most 1.2 per doubling) doubling
			// the writers less than doubles the rate. The margins are
			// wide: at load 33 one sweep's rows went 6.8k, 4.1k, 6.0k,
			// 71k ops/s from 16 to 128 writers.
			below, beyond := 1.0, 1.0
			if n[i] > 1 && n[i] <= knee/4 {
				below = (x[i] / max(x[0], 1)) / (n[i] / 4)
			}
			if i > 0 && n[i] >= 2*knee && n[i] == 2*n[i-1] {
				beyond = 2 / (x[i] / max(x[i-1], 1))
			}
			out = append(out, below, beyond)
		}
		t.Logf("knee %.1f writers (ceiling %.0f ops/s, 1 thread %.0f ops/s, 1-thread ops/s × mean fdatasync %.2f)", knee, top, x[0], one)
		return out
	}
	holds := func(v float64) bool { return v >= 1 }
	got := medianOfRuns(t, "06-", "curve", margins, holds)
	if !holds(got[0]) {
		t.Errorf("one writer: ops/s × mean fdatasync is outside 0.5–1.05 (margin %.2f, median of 3 runs); the lesson says one writer pays a whole flush per Put", got[0])
	}
	for i := range rows {
		if b := got[1+2*i]; !holds(b) {
			t.Errorf("row %d, below the knee: speed-up %.2f of a quarter of the writers (median of 3 runs); the lesson says the curve rises nearly in proportion there", i, b)
		}
		if b := got[2+2*i]; !holds(b) {
			t.Errorf("row %d, beyond twice the knee: doubling the writers doubled the rate (margin %.2f, median of 3 runs); the lesson says the curve is flat there", i, b)
		}
	}
}

// Lesson 10's knee from utilization. The text states the mean time in
// the store under Poisson arrivals (Pollaczek–Khinchine), its M/M/1 form
// 1 ÷ (1 − utilization), and that poisson-knee is graded on the first
// line of the reader's run whose time in the store (corrected mean less
// the generator's mean lateness) passes twice its mean service time. On
// the run: the formula with c = 0 is the least a Poisson queue waits, so
// every line below saturation waits at least (with a margin) that much,
// which evenly spaced arrivals at the same utilization need not.
func TestPoissonKnee(t *testing.T) {
	l := lessonByPrefix(t, "10-")
	body := flat(string(l.Body))
	for _, want := range []string{"S × (1 + utilization × (1 + c²) / (2 × (1 − utilization)))", "S ÷ (1 − utilization)", "-arrivals poisson", "0.5 ÷ S"} {
		if !strings.Contains(body, flat(want)) {
			t.Errorf("lesson 10 does not say %q", want)
		}
	}
	q := quizByID(t, l, "poisson-knee")
	if !q.Predict || q.Reason {
		t.Errorf("poisson-knee: predict %v, reason %v; it is a prediction of the reader's disk", q.Predict, q.Reason)
	}
	_, c := cellByID(t, "10-", "poisson")
	for i, line := range c.Lines {
		if !strings.Contains(line, "-arrivals poisson") {
			t.Errorf("poisson line %d %q: not Poisson arrivals", i, line)
		}
	}
	// Made-up lines: the third is the first whose time in the store
	// (mean 900 less lag 100) passes twice its service time (350); the
	// second's passes it only with the lag counted.
	rate := 125.0
	mk := func(mean, lag, service float64) any {
		defer func() { rate *= 2 }()
		return synthetic("rate", rate, "latency.put.mean_ns", mean, "pacer_lag.mean_ns", lag, "latency_uncorrected.put.mean_ns", service)
	}
	rs := []any{mk(400, 50, 300), mk(800, 300, 300), mk(900, 100, 350), mk(5000, 0, 300), mk(9000, 0, 300), mk(9000, 0, 300), mk(9000, 0, 300)}
	if got := answer(t, q, rs); got != 500 {
		t.Errorf("poisson-knee on made-up lines: got %v, want 500 (the rate of the first line past twice its service time, net of the pacer lag)", got)
	}
	// No line past the knee: the answer is beyond the sweep, twice its
	// last rate, as the question says.
	rate = 125
	var calm []any
	for range 7 {
		calm = append(calm, mk(400, 0, 300))
	}
	if got := answer(t, q, calm); got != 16000 {
		t.Errorf("poisson-knee with no line past the knee: got %v, want 16000, the answer the question names", got)
	}
	if !strings.Contains(q.Question, "16000") {
		t.Errorf("poisson-knee's question does not name the answer for no knee (16000): %q", q.Question)
	}

	margins := func(rs []any) []float64 {
		var out []float64
		for _, r := range rs {
			u := num(t, r, "utilization")
			inStore := (num(t, r, "latency.put.mean_ns") - num(t, r, "pacer_lag.mean_ns")) / max(num(t, r, "latency_uncorrected.put.mean_ns"), 1)
			m := 1.0
			if u >= 0.1 && u <= 0.9 {
				least := 1 + 0.3*u/(1-u) // the c = 0 wait, 0.5 u/(1−u), with a margin
				m = inStore / least
			}
			t.Logf("utilization %.2f: time in the store %.2f × the service time (M/M/1 %.2f)", u, inStore, 1/max(1-u, 0.01))
			out = append(out, m)
		}
		return out
	}
	holds := func(v float64) bool { return v >= 1 }
	for i, m := range medianOfRuns(t, "10-", "poisson", margins, holds) {
		if !holds(m) {
			t.Errorf("poisson line %d: time in the store is %.2f of the least a Poisson queue waits at its utilization (median of 3 runs); the lesson says random arrivals queue at least that much", i, m)
		}
	}
}
