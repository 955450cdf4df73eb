package grader

import (
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"

	"kvlab/gohost"
	"kvlab/harness/calc"
)

// percentileSig is the signature the course uses everywhere.
const percentileSig = "func Percentile(sorted []int64, p float64) int64"

var percentileExercise = &Exercise{
	Name:  "percentile",
	Title: "Write Percentile (nearest rank)",
	Instructions: `Implement ` + "`" + percentileSig + "`" + `.

Nearest rank: ` + "`rank = ceil(p/100 × n)`" + `, and the answer is ` + "`sorted[rank-1]`" + `, with the index clamped to ` + "`[0, n-1]`" + `. An empty slice gives 0. The input is already sorted ascending.

Compute the rank exactly. In ` + "`float64`" + ` every way of writing the product lands a hair above a whole rank for some inputs (` + "`14/100*50`" + ` is ` + "`7.000000000000001`" + `, ` + "`64.4*250/100`" + ` is ` + "`161.00000000000003`" + `), and a plain ` + "`math.Ceil`" + ` then takes the next rank. Read p as a whole number of millionths of a percent and finish in integers:

` + "```" + `
pm   := int64(math.Round(p * 1000000))          // p in millionths (clamp p to [0, 100] first)
rank := (pm*int64(n) + 99999999) / 100000000    // ceil(pm × n / 10^8), exactly
` + "```" + `

The tests are the harness's own table: the course cases (1..100 at p50, p95, p99, p100, an empty slice, one element), the ones a careful reader checks by hand (p = 0, p just above a rank boundary, 1..10 at p91, p outside 0..100), and three float traps, each with a note that says what float64 gets wrong.

Available: ` + "`math`" + ` (import it for ` + "`math.Round`" + `), ` + "`slices`" + ` (on ` + "`[]int64`" + `), ` + "`sort`, `fmt`, `time`" + `, and ` + "`min`/`max`" + `.`,
	Stub: `package main

// Percentile returns the nearest-rank p-th percentile of sorted.
func Percentile(sorted []int64, p float64) int64 {
	// rank = ceil(p/100 * n), computed exactly (see the instructions);
	// answer sorted[rank-1], index clamped to [0, n-1]
	return 0
}
`,
	Solution: percentileSolution,
	grade:    gradePercentile,
}

// percentileSolution is the reference Solution: the exact rank of
// calc.Rank, in the form the instructions give. TestRankAgreesWithExactOracle
// checks the two against exact rational arithmetic.
const percentileSolution = `package main

import "math"

// Percentile returns the nearest-rank p-th percentile of sorted.
func Percentile(sorted []int64, p float64) int64 {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	if p < 0 {
		p = 0
	}
	if p > 100 {
		p = 100
	}
	// rank = ceil(p/100 * n), exactly: p in millionths, then integers.
	pm := int64(math.Round(p * 1000000))
	rank := int((pm*int64(n) + 99999999) / 100000000)
	i := min(max(rank-1, 0), n-1)
	return sorted[i]
}
`

func gradePercentile(p *program) Result {
	fn, ce := p.Function("Percentile", (func([]int64, float64) int64)(nil), percentileSig)
	if ce != nil {
		return Result{Error: ce}
	}
	f := fn.Interface().(func([]int64, float64) int64)
	var r Result
	for _, c := range calc.PercentileCases {
		got, err := callPercentile(f, c.In, c.P)
		row := Case{
			Input: c.Input + ", p=" + fmtP(c.P),
			Want:  strconv.FormatInt(c.Want, 10),
			Got:   got,
		}
		row.Pass = err == nil && got == row.Want
		row.Note = c.Note
		if !row.Pass {
			row.Hint = percentileHint(c.In, c.P, c.Want, got, err)
		}
		r.Cases = append(r.Cases, row)
	}
	r.Passed = allPass(r.Cases)
	return r
}

// callPercentile calls a Percentile on a copy of in, so an implementation
// that writes to its input cannot spoil the next case. A panic comes back
// as the error and as got.
func callPercentile(f func([]int64, float64) int64, in []int64, p float64) (got string, err error) {
	out, err := gohost.Call(reflect.ValueOf(f), reflect.ValueOf(clone(in)), reflect.ValueOf(p))
	if err != nil {
		return err.Error(), err
	}
	return strconv.FormatInt(out[0].Int(), 10), nil
}

func clone(in []int64) []int64 {
	if in == nil {
		return nil
	}
	return append([]int64(nil), in...)
}

// percentileHint explains a wrong answer in one line: by recognising which
// classic mistake gives the same number, or else by working the case.
func percentileHint(in []int64, p float64, want int64, got string, err error) string {
	if err != nil {
		switch {
		case !isIndexPanic(err):
			return "your Percentile panicked; the answer is " + strconv.FormatInt(want, 10)
		case len(in) == 0:
			return "an empty slice has nothing to index: return 0 before computing a rank"
		}
		return "p=" + fmtP(p) + " gives an index outside the slice: clamp the index to [0, n-1]"
	}
	for _, m := range mutants {
		if m.name == "no-clamp" {
			continue
		}
		if mg, merr := callPercentile(m.fn, in, p); merr == nil && mg == got && mg != strconv.FormatInt(want, 10) {
			return m.diagnosis
		}
	}
	return workedPercentile(in, p, want)
}

// workedPercentile shows the arithmetic that gives want.
func workedPercentile(in []int64, p float64, want int64) string {
	n := len(in)
	if n == 0 {
		return "an empty slice gives 0"
	}
	cp := math.Min(math.Max(p, 0), 100)
	rank := int(calc.Rank(cp, int64(n)))
	idx := min(max(rank-1, 0), n-1)
	s := ""
	if cp != p {
		s = fmt.Sprintf("p is clamped to %s; ", fmtP(cp))
	}
	return s + fmt.Sprintf("rank = ceil(%s/100 × %d) = %d exactly, index %d (clamped to [0, %d]) holds %d",
		fmtP(cp), n, rank, idx, n-1, want)
}

// fmtP writes a percentile the shortest way that reads back exactly.
func fmtP(p float64) string { return strconv.FormatFloat(p, 'g', -1, 64) }

// fmtSlice writes a sorted input compactly: "[]", "[1 2 3]", "1..100",
// "980 x 100, 20 x 9000".
func fmtSlice(s []int64) string {
	n := len(s)
	if n == 0 {
		return "[]"
	}
	if n > 3 {
		consecutive := true
		for i := 1; i < n; i++ {
			if s[i] != s[i-1]+1 {
				consecutive = false
				break
			}
		}
		if consecutive {
			return fmt.Sprintf("%d..%d", s[0], s[n-1])
		}
	}
	// Runs of equal values.
	var runs []string
	long := false
	for i := 0; i < n; {
		j := i
		for j < n && s[j] == s[i] {
			j++
		}
		if j-i >= 3 {
			long = true
		}
		runs = append(runs, fmt.Sprintf("%d x %d", j-i, s[i]))
		i = j
	}
	if long && len(runs) <= 4 {
		return strings.Join(runs, ", ")
	}
	const show = 12
	var b strings.Builder
	b.WriteByte('[')
	for i, v := range s {
		if i == show {
			fmt.Fprintf(&b, " … (%d values)", n)
			break
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(strconv.FormatInt(v, 10))
	}
	b.WriteByte(']')
	return b.String()
}
