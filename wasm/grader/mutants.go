package grader

import (
	"fmt"
	"math"
	"reflect"
	"strconv"

	"kvlab/gohost"
	"kvlab/harness/calc"
)

// mutant is a Percentile with one classic mistake in it.
type mutant struct {
	name        string
	description string
	fn          func(sorted []int64, p float64) int64
	diagnosis   string // when a student's answer matches this mutant's
	catchHint   string // when a student's table lets it survive
}

// mutants are the broken versions exercise percentile-tests runs a
// student's table against. Each differs from calc.Percentile in one way.
// float-rank comes first: where its answer and another mutant's agree (the
// float trap's 8 for p14 of 1..50 is also what forgetting the -1 reads
// there), a student's wrong answer is diagnosed as the float trap.
var mutants = []mutant{
	{
		name:        "float-rank",
		description: "computes the rank in floating point: ceil(p/100 × n) with a plain ceiling",
		fn: func(s []int64, p float64) int64 {
			return pick(s, int(math.Ceil(clampP(p)/100*float64(len(s))))-1, true)
		},
		diagnosis: "that is the float trap: in float64, p/100 × n lands a hair above a whole rank here, and the plain ceiling takes the next one; compute the rank exactly (p in millionths, then integers)",
		catchHint: "add a row where float64 misses a whole rank, e.g. 1..50 at p14: 0.14 × 50 is 7.000000000000001 in float64 (want 7)",
	},
	{
		name:        "floor",
		description: "rounds the rank down: floor instead of ceil",
		fn: func(s []int64, p float64) int64 {
			return pick(s, int(exactFloorRank(clampP(p), len(s)))-1, true)
		},
		diagnosis: "that is what rounding the rank down gives: rank = ceil(p/100 × n) rounds up",
		catchHint: "add a row where p/100 × n is not a whole number, e.g. 1..10 at p91 (want 10)",
	},
	{
		name:        "no-clamp",
		description: "does not clamp the index to [0, n-1]",
		fn: func(s []int64, p float64) int64 {
			return pick(s, int(rawRank(p, len(s)))-1, false)
		},
		diagnosis: "the index must be clamped to [0, n-1]",
		catchHint: "add a row with p = 0: rank 0 would read index -1",
	},
	{
		name:        "no-minus-one",
		description: "reads sorted[rank] instead of sorted[rank-1]",
		fn: func(s []int64, p float64) int64 {
			return pick(s, int(calc.Rank(clampP(p), int64(len(s)))), true)
		},
		diagnosis: "one position too high: ranks count from 1 and indexes from 0, so read sorted[rank-1]",
		catchHint: "add a row whose answer is not the last element, e.g. 1..10 at p50 (want 5)",
	},
	{
		name:        "interpolate",
		description: "interpolates linearly between the two nearest values",
		fn: func(s []int64, p float64) int64 {
			n := len(s)
			if n == 0 {
				return 0
			}
			pos := clampP(p) / 100 * float64(n-1)
			lo := int(math.Floor(pos))
			hi := min(lo+1, n-1)
			return s[lo] + int64((pos-float64(lo))*float64(s[hi]-s[lo]))
		},
		diagnosis: "nearest rank never interpolates: the answer is always one of the values in the slice",
		catchHint: "add a row with a wide gap between neighbours, e.g. [1 100] at p50 (want 1)",
	},
	{
		name:        "mean",
		description: "returns the mean, whatever p is",
		fn: func(s []int64, p float64) int64 {
			if len(s) == 0 {
				return 0
			}
			var sum int64
			for _, v := range s {
				sum += v
			}
			return sum / int64(len(s))
		},
		diagnosis: "that is the mean of the slice: a percentile reads one position of the sorted slice",
		catchHint: "add a row on skewed data, where the mean is not the percentile, e.g. [1 2 3 4 100] at p50 (want 3)",
	},
}

// exactFloorRank is floor(p/100 × n), exactly, the way calc.Rank takes
// the ceiling.
func exactFloorRank(p float64, n int) int64 {
	return int64(math.Round(p*1e6)) * int64(n) / 1e8
}

// rawRank is ceil(p/100 × n) exactly, as calc.Rank computes it, but
// without clamping p to [0, 100]: for the no-clamp mutant.
func rawRank(p float64, n int) int64 {
	x := int64(math.Round(p*1e6)) * int64(n)
	if x <= 0 {
		return x / 1e8 // truncation toward zero is the ceiling here
	}
	return (x + 1e8 - 1) / 1e8
}

func clampP(p float64) float64 {
	if math.IsNaN(p) || p < 0 {
		return 0
	}
	return math.Min(p, 100)
}

// pick returns s[i], optionally clamping i; an empty s gives 0.
func pick(s []int64, i int, clamp bool) int64 {
	if len(s) == 0 {
		return 0
	}
	if clamp {
		i = min(max(i, 0), len(s)-1)
	}
	return s[i]
}

const maxRows, maxRowLen = 200, 100000

var percentileTestsExercise = &Exercise{
	Name:  "percentile-tests",
	Title: "Write the tests that catch broken percentiles",
	Instructions: `Fill ` + "`Cases`" + ` with rows: a sorted input, a percentile p, and the value ` + "`Percentile(sorted, p)`" + ` must return.

Your rows run against the correct nearest-rank Percentile and against six broken ones: one computes the rank in floating point with a plain ceiling (the float trap of lesson 2), one uses floor instead of ceil, one does not clamp the index, one forgets the -1, one interpolates, one returns the mean. You pass when every row holds for the correct version and every broken version fails at least one row.

The results show which broken versions your table let through. Then try the smallest table that still catches all six.`,
	Stub: `package main

// Cases are test rows for Percentile(Sorted, P) == Want.
var Cases = []struct {
	Sorted []int64
	P      float64
	Want   int64
}{
	{[]int64{1, 2, 3, 4, 5}, 100, 5},
	// add rows here
}
`,
	Solution: `package main

// Cases are test rows for Percentile(Sorted, P) == Want.
var Cases = []struct {
	Sorted []int64
	P      float64
	Want   int64
}{
	{[]int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 91, 10}, // floor gives 9
	{[]int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 0, 1},   // no clamp reads index -1
	{[]int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 50, 5},  // without the -1: 6
	{[]int64{1, 100}, 50, 1},                          // interpolation: 50
	{[]int64{1, 2, 3, 4, 100}, 50, 3},                 // the mean: 22
	{seq(1, 50), 14, 7},                               // float64: 14/100*50 is 7.000000000000001, ceil 8
}

// seq returns lo, lo+1, ..., hi.
func seq(lo, hi int64) []int64 {
	var s []int64
	for v := lo; v <= hi; v++ {
		s = append(s, v)
	}
	return s
}
`,
	grade: gradePercentileTests,
}

// row is one of the student's test rows.
type row struct {
	sorted []int64
	p      float64
	want   int64
}

func gradePercentileTests(p *program) Result {
	rows, ce := studentRows(p)
	if ce != nil {
		return Result{Error: ce}
	}
	return checkRows(rows)
}

// checkRows runs rows against calc.Percentile and every mutant.
func checkRows(rows []row) Result {
	var r Result
	valid := make([]bool, len(rows))
	for i, rw := range rows {
		c := Case{
			Input: fmtSlice(rw.sorted) + ", p=" + fmtP(rw.p),
			Want:  strconv.FormatInt(rw.want, 10),
		}
		if !sortedAsc(rw.sorted) {
			c.Got = "-"
			c.Hint = "this input is not sorted ascending; Percentile expects sorted input"
		} else {
			got := calc.Percentile(rw.sorted, rw.p)
			c.Got = strconv.FormatInt(got, 10)
			c.Pass = got == rw.want
			if !c.Pass {
				c.Hint = "the correct Percentile gives " + c.Got + ": " + workedPercentile(rw.sorted, rw.p, got)
			}
		}
		valid[i] = c.Pass
		r.Cases = append(r.Cases, c)
	}
	if len(rows) == 0 {
		r.Notes = append(r.Notes, "Cases has no rows yet: add some.")
	}
	for _, m := range mutants {
		res := Mutant{Name: m.name, Description: m.description}
		for i, rw := range rows {
			if !valid[i] {
				continue
			}
			got, err := callPercentile(m.fn, rw.sorted, rw.p)
			if err != nil || got != strconv.FormatInt(rw.want, 10) {
				res.CaughtBy = append(res.CaughtBy, i+1)
			}
		}
		res.Caught = len(res.CaughtBy) > 0
		if !res.Caught {
			res.Hint = m.catchHint
		}
		r.Mutants = append(r.Mutants, res)
	}
	r.Passed = allPass(r.Cases)
	for _, m := range r.Mutants {
		r.Passed = r.Passed && m.Caught
	}
	return r
}

func sortedAsc(s []int64) bool {
	for i := 1; i < len(s); i++ {
		if s[i] < s[i-1] {
			return false
		}
	}
	return true
}

// studentRows reads the student's Cases through reflection. Field types
// are taken leniently: any integer slice, any number for P and Want.
func studentRows(p *program) ([]row, *gohost.CodeError) {
	const shape = "var Cases = []struct{ Sorted []int64; P float64; Want int64 }{...}"
	v, ok := p.Lookup("Cases")
	if !ok {
		return nil, &gohost.CodeError{Msg: "your code must define " + shape}
	}
	if v.Kind() != reflect.Slice && v.Kind() != reflect.Array {
		return nil, &gohost.CodeError{Msg: fmt.Sprintf("Cases has type %s; the exercise needs %s", gohost.TypeString(v), shape)}
	}
	if v.Len() > maxRows {
		return nil, &gohost.CodeError{Msg: fmt.Sprintf("Cases has %d rows; at most %d are allowed", v.Len(), maxRows)}
	}
	var rows []row
	for i := 0; i < v.Len(); i++ {
		e := v.Index(i)
		if e.Kind() == reflect.Pointer || e.Kind() == reflect.Interface {
			e = e.Elem()
		}
		if e.Kind() != reflect.Struct {
			return nil, &gohost.CodeError{Msg: fmt.Sprintf("row %d of Cases is a %s, not a struct; the exercise needs %s", i+1, gohost.TypeString(e), shape)}
		}
		var rw row
		sorted := e.FieldByName("Sorted")
		if !sorted.IsValid() || sorted.Kind() != reflect.Slice || !isInt(sorted.Type().Elem().Kind()) {
			return nil, &gohost.CodeError{Msg: "each row needs a field Sorted []int64; the exercise needs " + shape}
		}
		if sorted.Len() > maxRowLen {
			return nil, &gohost.CodeError{Msg: fmt.Sprintf("row %d: Sorted has %d values; at most %d are allowed", i+1, sorted.Len(), maxRowLen)}
		}
		if !sorted.IsNil() {
			rw.sorted = make([]int64, sorted.Len())
			for j := range rw.sorted {
				rw.sorted[j] = sorted.Index(j).Int()
			}
		}
		pf := e.FieldByName("P")
		switch {
		case pf.IsValid() && (pf.Kind() == reflect.Float64 || pf.Kind() == reflect.Float32):
			rw.p = pf.Float()
		case pf.IsValid() && isInt(pf.Kind()):
			rw.p = float64(pf.Int())
		default:
			return nil, &gohost.CodeError{Msg: "each row needs a field P float64; the exercise needs " + shape}
		}
		wf := e.FieldByName("Want")
		if !wf.IsValid() || !isInt(wf.Kind()) {
			return nil, &gohost.CodeError{Msg: "each row needs a field Want int64; the exercise needs " + shape}
		}
		rw.want = wf.Int()
		rows = append(rows, rw)
	}
	return rows, nil
}

func isInt(k reflect.Kind) bool {
	switch k {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return true
	}
	return false
}
