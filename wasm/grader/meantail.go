package grader

import (
	"fmt"
	"reflect"
	"slices"

	"kvlab/gohost"
	"kvlab/harness/calc"
)

const summarizeSig = "func Summarize(samples []int64) (mean, p50, p99, max int64)"

var meanVsTailExercise = &Exercise{
	Name:  "mean-vs-tail",
	Title: "Mean vs tail: one slow request in a hundred",
	Instructions: `Implement ` + "`" + summarizeSig + "`" + `. The samples are latencies in microseconds, in the order they were measured (not sorted).

Return the mean (sum / count, integer division is fine), the nearest-rank p50 and p99 (` + "`rank = ceil(p/100 × n)`, index `rank-1`" + `; p is a whole number here, so compute the rank in integers, ` + "`(p*n + 99) / 100`" + `, which is that ceiling exactly: lesson 2 shows what a float64 ceiling gets wrong) and the largest sample. No samples: all zeros.

The first case is the one from the chapter: 99 requests of 2 ms and one of 300 ms. Look at what each of the four numbers says about it.

Sort a copy before reading positions: ` + "`slices.Clone`" + ` and ` + "`slices.Sort`" + ` (import "slices"), or ` + "`sort.Slice`" + `. ` + "`min`/`max`" + ` are available.`,
	Stub: `package main

// Summarize returns the mean, p50, p99 and max of samples (unsorted).
func Summarize(samples []int64) (mean, p50, p99, max int64) {
	return 0, 0, 0, 0
}
`,
	Solution: `package main

import "slices"

// Summarize returns the mean, p50, p99 and max of samples (unsorted).
func Summarize(samples []int64) (mean, p50, p99, max int64) {
	n := len(samples)
	if n == 0 {
		return 0, 0, 0, 0
	}
	sorted := slices.Clone(samples) // the caller's order is left alone
	slices.Sort(sorted)
	var sum int64
	for _, v := range sorted {
		sum += v
	}
	at := func(p int) int64 {
		rank := (p*n + 99) / 100 // ceil(p/100 × n) in integers: no float trap
		if rank < 1 {
			rank = 1
		}
		return sorted[rank-1]
	}
	return sum / int64(n), at(50), at(99), sorted[n-1]
}
`,
	grade: gradeMeanVsTail,
}

// tailSet is one input of the mean-vs-tail exercise.
type tailSet struct {
	label   string
	samples []int64
}

// samplesWith returns n samples of fast µs with slow µs at the given
// positions: measurement order, deliberately not sorted.
func samplesWith(n int, fast, slow int64, at ...int) []int64 {
	s := make([]int64, n)
	for i := range s {
		s[i] = fast
	}
	for _, i := range at {
		s[i] = slow
	}
	return s
}

var tailSets = []tailSet{
	{"99 x 2000 µs, 1 x 300000 µs", samplesWith(100, 2000, 300000, 37)},
	{"98 x 2000 µs, 2 x 300000 µs", samplesWith(100, 2000, 300000, 12, 71)},
	{"100 x 2000 µs", samplesWith(100, 2000, 0)},
	{"[900 100 500 300 700] µs", []int64{900, 100, 500, 300, 700}},
	{"[5] µs", []int64{5}},
	{"no samples", nil},
}

// summary is the reference answer, built from calc.Percentile.
func summary(samples []int64) [4]int64 {
	if len(samples) == 0 {
		return [4]int64{}
	}
	s := slices.Clone(samples)
	slices.Sort(s)
	var sum int64
	for _, v := range s {
		sum += v
	}
	return [4]int64{sum / int64(len(s)), calc.Percentile(s, 50), calc.Percentile(s, 99), s[len(s)-1]}
}

func fmtSummary(v [4]int64) string {
	// No-break spaces keep each name with its number when a cell wraps.
	return fmt.Sprintf("mean\u00a0%d, p50\u00a0%d, p99\u00a0%d, max\u00a0%d", v[0], v[1], v[2], v[3])
}

func gradeMeanVsTail(p *program) Result {
	fn, ce := p.Function("Summarize", (func([]int64) (int64, int64, int64, int64))(nil), summarizeSig)
	if ce != nil {
		return Result{Error: ce}
	}
	var r Result
	for _, ts := range tailSets {
		want := summary(ts.samples)
		c := Case{Input: ts.label, Want: fmtSummary(want)}
		out, err := gohost.Call(fn, reflect.ValueOf(clone(ts.samples)))
		if err != nil {
			c.Got = err.Error()
			switch {
			case len(ts.samples) == 0:
				c.Hint = "with no samples return zeros before dividing or indexing"
			case isIndexPanic(err):
				c.Hint = "an index is outside the slice: rank = ceil(p/100 × n) is 1-based, read sorted[rank-1]"
			default:
				c.Hint = "Summarize panicked"
			}
		} else {
			var got [4]int64
			for i := range got {
				got[i] = out[i].Int()
			}
			c.Got = fmtSummary(got)
			c.Pass = got == want
			if !c.Pass {
				c.Hint = tailHint(ts.samples, got, want)
			}
		}
		r.Cases = append(r.Cases, c)
	}
	r.Passed = allPass(r.Cases)
	first := summary(tailSets[0].samples)
	second := summary(tailSets[1].samples)
	r.Notes = []string{
		fmt.Sprintf("One slow request in a hundred: the mean is %d µs, about 5 ms, a latency no request had. Ninety-nine took 2 ms and one took 300 ms.", first[0]),
		fmt.Sprintf("The p99 is %d µs: with one slow request in a hundred, the slow one sits above the 99th rank, and only the max (%d µs) shows it.", first[2], first[3]),
		fmt.Sprintf("With two slow requests in a hundred the p99 jumps to %d µs, while the mean moves only to %d µs. A percentile tells you how many users waited; the mean blends them away.", second[2], second[0]),
	}
	return r
}

// tailHint names the first of the four numbers that is wrong and the
// likely reason.
func tailHint(samples []int64, got, want [4]int64) string {
	switch {
	case got[0] != want[0]:
		return fmt.Sprintf("the mean is the sum of all %d samples divided by %d", len(samples), len(samples))
	case got[3] != want[3]:
		return "max is the largest sample, wherever it is in the input"
	case !slices.IsSorted(samples) && (got[1] != want[1] || got[2] != want[2]) &&
		got[1] == calc.Percentile(samples, 50) && got[2] == calc.Percentile(samples, 99):
		// calc.Percentile on the unsorted input reads the same positions.
		return "positions only mean something in sorted order: sort a copy of the samples first"
	case got[1] != want[1]:
		return "p50: rank = ceil(50/100 × n) = (50*n + 99) / 100 in integers, read sorted[rank-1]"
	default:
		return "p99: rank = ceil(99/100 × n) = (99*n + 99) / 100 in integers, read sorted[rank-1]"
	}
}
