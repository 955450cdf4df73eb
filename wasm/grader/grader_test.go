package grader

import (
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"kvlab/harness/calc"
)

// mustRun runs src as the exercise name, failing t if it does not build
// and run.
func mustRun(t *testing.T, name, src string) Result {
	t.Helper()
	r := Run(name, src)
	if r.Error != nil {
		t.Fatalf("%s: error %v", name, r.Error)
	}
	return r
}

func TestNames(t *testing.T) {
	got := Names()
	want := []string{"percentile", "percentile-tests", "mean-vs-tail", "batch-model", "durable-ack", "torn-tail", "atomic-replace"}
	if !slices.Equal(got, want) {
		t.Fatalf("Names() = %v, want %v", got, want)
	}
	if _, err := Lookup("nope"); err == nil || !strings.Contains(err.Error(), "allowed percentile, percentile-tests") {
		t.Errorf("Lookup(nope) error = %v, want one naming the allowed exercises", err)
	}
}

// TestSolutionsPassStubsFail runs every exercise's model solution and its
// starting stub: the solution must pass every case, the stub must compile
// and fail at least one.
func TestSolutionsPassStubsFail(t *testing.T) {
	for _, name := range Names() {
		e, _ := Lookup(name)
		t.Run(name+"/solution", func(t *testing.T) {
			r := mustRun(t, name, e.Solution)
			if !r.Passed {
				t.Errorf("solution did not pass: %s\n%+v", r.Summary(), r.Cases)
			}
		})
		t.Run(name+"/stub", func(t *testing.T) {
			r := mustRun(t, name, e.Stub)
			if r.Passed {
				t.Errorf("stub passed; want failures")
			}
		})
	}
}

func TestPercentileCasesComeFromCalc(t *testing.T) {
	e, _ := Lookup("percentile")
	r := Run("percentile", e.Solution)
	if got, want := len(r.Cases), len(calc.PercentileCases); got != want {
		t.Fatalf("got %d cases, want %d (calc.PercentileCases)", got, want)
	}
	for i, c := range calc.PercentileCases {
		if got, want := r.Cases[i].Want, strconvI(c.Want); got != want {
			t.Errorf("case %d want column = %s, want %s", i, got, want)
		}
	}
}

func strconvI(v int64) string { return strconv.FormatInt(v, 10) }

// offByOne is a Percentile that forgets the -1 on the rank, shared with
// the Node test of the wasm worker (wasm/wasmtest).
var offByOne = mustRead("testdata/offbyone.go.txt")

func mustRead(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func TestOffByOneFailsWithGotWant(t *testing.T) {
	r := mustRun(t, "percentile", offByOne)
	if r.Passed {
		t.Fatal("off-by-one Percentile passed")
	}
	c := r.Cases[0] // p50 of 1..100
	if c.Input != "1..100, p=50" || c.Want != "50" || c.Got != "51" || c.Pass {
		t.Errorf("first case = %+v, want input 1..100, p=50, want 50, got 51, fail", c)
	}
	if !strings.Contains(c.Hint, "rank-1") {
		t.Errorf("hint %q does not mention rank-1", c.Hint)
	}
	// p100 is right even off by one, because of the clamp.
	if !r.Cases[3].Pass {
		t.Errorf("p100 case failed: %+v", r.Cases[3])
	}
}

func TestPercentileHints(t *testing.T) {
	tests := []struct {
		name, body string
		caseIdx    int // into calc.PercentileCases
		wantGot    string
		wantHint   string
	}{
		{"floor", "rank := int(math.Floor(p * float64(n) / 100))\n\treturn sorted[min(max(rank-1, 0), n-1)]", 8, "9", "rounding the rank down"},
		{"no clamp", "rank := int(math.Ceil(p * float64(n) / 100))\n\treturn sorted[rank-1]", 7, "panic: index out of range", "clamp the index"},
		{"nil func", "var f func() int64\n\t_ = math.Ceil\n\treturn f()", 0, "panic: call of a nil func", "your Percentile panicked; the answer is 50"},
		{"mean", "var s int64\n\tfor _, v := range sorted {\n\t\ts += v\n\t}\n\t_ = math.Ceil\n\treturn s / int64(n)", 2, "50", "mean"},
		{"float trap", "rank := int(math.Ceil(p / 100 * float64(n)))\n\treturn sorted[min(max(rank-1, 0), n-1)]", caseIndex("p14 of 1..50: the float trap"), "8", "float trap"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := "package main\n\nimport \"math\"\n\nfunc Percentile(sorted []int64, p float64) int64 {\n\tn := len(sorted)\n\tif n == 0 {\n\t\treturn 0\n\t}\n\t" + tt.body + "\n}\n"
			r := mustRun(t, "percentile", src)
			c := r.Cases[tt.caseIdx]
			if c.Pass || c.Got != tt.wantGot || !strings.Contains(c.Hint, tt.wantHint) {
				t.Errorf("case %d = %+v; want got %q and a hint containing %q", tt.caseIdx, c, tt.wantGot, tt.wantHint)
			}
		})
	}
}

func TestCodeErrors(t *testing.T) {
	tests := []struct {
		name      string
		src       string
		line, col int
		msg       string
	}{
		{"syntax", "package main\n\nfunc Percentile(sorted []int64, p float64) int64 {\n\treturn 1 +\n}\n", 5, 1, "syntax error"},
		{"syntax without package clause", "func Percentile(sorted []int64, p float64) int64 {\n\treturn 1 +\n}\n", 3, 1, "syntax error"},
		{"undefined", "package main\n\nfunc Percentile(sorted []int64, p float64) int64 {\n\treturn rank\n}\n", 4, 9, "undefined: rank"},
		{"undefined without package clause", "func Percentile(sorted []int64, p float64) int64 {\n\treturn rank\n}\n", 2, 9, "undefined: rank"},
		{"type", "package main\n\nfunc Percentile(sorted []int64, p float64) int64 {\n\treturn \"x\"\n}\n", 4, 9, "cannot use"},
		{"range over int variable", "package main\n\nfunc Percentile(sorted []int64, p float64) int64 {\n\tn := len(sorted)\n\tvar s int64\n\tfor i := range n {\n\t\ts = sorted[i]\n\t}\n\treturn s\n}\n", 6, 2, "range over an int is not supported here; write for i := 0; i < n; i++"},
		{"range over int literal", "package main\n\nfunc Percentile(sorted []int64, p float64) int64 {\n\tfor i := range 10 {\n\t\t_ = i\n\t}\n\treturn 0\n}\n", 4, 2, "range over an int is not supported here"},
		{"import not allowed", "package main\n\nimport \"os\"\n\nfunc Percentile(sorted []int64, p float64) int64 {\n\tos.Exit(1)\n\treturn 0\n}\n", 3, 8, `import "os" is not available in these exercises; allowed: fmt, hash/crc32, kvfs, math, slices, sort, time`},
		{"slices function not available", "package main\n\nimport \"slices\"\n\nfunc Percentile(sorted []int64, p float64) int64 {\n\ti, _ := slices.BinarySearch(sorted, 3)\n\treturn int64(i)\n}\n", 6, 10, "slices"},
		{"missing function", "package main\n\nfunc percentile(sorted []int64, p float64) int64 { return 0 }\n", 0, 0, "your code must define func Percentile(sorted []int64, p float64) int64"},
		{"wrong signature", "package main\n\nfunc Percentile(sorted []int, p float64) int { return 0 }\n", 0, 0, "Percentile has type func([]int, float64) int; the exercise needs"},
		{"empty", "  \n", 0, 0, "the editor is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Run("percentile", tt.src)
			if r.Error == nil {
				t.Fatalf("no error; result %s", r.Summary())
			}
			e := r.Error
			if e.Line != tt.line || e.Col != tt.col || !strings.Contains(e.Msg, tt.msg) || strings.Contains(e.Msg, "xslice") {
				t.Errorf("got %d:%d %q, want %d:%d containing %q", e.Line, e.Col, e.Msg, tt.line, tt.col, tt.msg)
			}
		})
	}
}

func TestMinMaxPrelude(t *testing.T) {
	tests := []struct{ name, src string }{
		{"builtin-style min and max", percentileExercise.Solution},
		{"float min", "package main\n\nimport \"math\"\n\nfunc Percentile(sorted []int64, p float64) int64 {\n\tn := len(sorted)\n\tif n == 0 {\n\t\treturn 0\n\t}\n\tp = max(min(p, 100.0), 0)\n\ti := int((int64(math.Round(p*1000000))*int64(n) + 99999999) / 100000000) - 1\n\treturn sorted[max(i, 0)]\n}\n"},
		{"untyped constant first", "package main\n\nimport \"math\"\n\nfunc Percentile(sorted []int64, p float64) int64 {\n\tn := len(sorted)\n\tif n == 0 {\n\t\treturn 0\n\t}\n\tp = max(0, min(100, p))\n\tvar lo int64 = 0\n\t_ = max(-1, lo, 2)\n\ti := int((int64(math.Round(p*1000000))*int64(n) + 99999999) / 100000000) - 1\n\treturn sorted[max(0, i)]\n}\n"},
		{"slices on []int64", "package main\n\nimport (\n\t\"math\"\n\t\"slices\"\n)\n\nfunc Percentile(sorted []int64, p float64) int64 {\n\tn := len(sorted)\n\tif n == 0 {\n\t\treturn 0\n\t}\n\ts := slices.Clone(sorted)\n\tslices.Sort(s)\n\ti := int((int64(math.Round(p*1000000))*int64(n) + 99999999) / 100000000) - 1\n\treturn s[min(max(i, 0), n-1)]\n}\n"},
		{"student's own min", "package main\n\nimport \"math\"\n\nfunc min(a, b int) int {\n\tif a < b {\n\t\treturn a\n\t}\n\treturn b\n}\n\nfunc Percentile(sorted []int64, p float64) int64 {\n\tn := len(sorted)\n\tif n == 0 {\n\t\treturn 0\n\t}\n\ti := int((int64(math.Round(p*1000000))*int64(n) + 99999999) / 100000000) - 1\n\treturn sorted[min(max(i, 0), n-1)]\n}\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := mustRun(t, "percentile", tt.src)
			if !r.Passed {
				t.Fatalf("did not pass: %s", r.Summary())
			}
		})
	}
}

// rowsFrom turns calc cases into student rows.
func rowsFrom(cs []calc.PercentileCase) []row {
	var rows []row
	for _, c := range cs {
		rows = append(rows, row{sorted: c.In, p: c.P, want: c.Want})
	}
	return rows
}

func TestFullTableCatchesEveryMutant(t *testing.T) {
	r := checkRows(rowsFrom(calc.PercentileCases))
	if !r.Passed {
		t.Errorf("full table did not pass: %s", r.Summary())
	}
	for _, m := range r.Mutants {
		if !m.Caught {
			t.Errorf("mutant %s survived the full calc table", m.Name)
		}
	}
	if got, want := len(r.Mutants), 6; got != want {
		t.Errorf("got %d mutants, want %d", got, want)
	}
}

// TestEachMutantIsBroken checks the mutants are really wrong: each one
// must fail at least one case of the shared table on its own.
func TestEachMutantIsBroken(t *testing.T) {
	for _, m := range mutants {
		wrong := 0
		for _, c := range calc.PercentileCases {
			got, err := callPercentile(m.fn, c.In, c.P)
			if err != nil || got != strconvI(c.Want) {
				wrong++
			}
		}
		if wrong == 0 {
			t.Errorf("mutant %s passes every calc case", m.name)
		}
	}
}

func TestWeakTableLetsMutantsSurvive(t *testing.T) {
	// The course table alone: 1..100 at p50, p95, p99, p100, empty, one element.
	var weak []calc.PercentileCase
	for _, c := range calc.PercentileCases {
		if c.Input == "1..100" || c.Input == "[]" || c.Input == "[7]" {
			weak = append(weak, c)
		}
	}
	r := checkRows(rowsFrom(weak))
	if r.Passed {
		t.Fatal("weak table passed; want survivors")
	}
	var survived []string
	for _, m := range r.Mutants {
		if !m.Caught {
			survived = append(survived, m.Name)
			if m.Hint == "" {
				t.Errorf("survivor %s has no hint", m.Name)
			}
		}
	}
	for _, want := range []string{"floor", "no-clamp", "interpolate"} {
		if !slices.Contains(survived, want) {
			t.Errorf("survivors %v, want %s among them", survived, want)
		}
	}
}

func TestPercentileTestsExercise(t *testing.T) {
	tests := []struct {
		name      string
		rows      string
		passed    bool
		survivors []string
		badRow    int // 1-based row expected to fail against the correct version; 0 none
	}{
		{"one weak row", "{[]int64{1, 2, 3, 4, 5}, 100, 5},", false, []string{"floor", "no-clamp", "interpolate"}, 0},
		{"wrong want", "{[]int64{1, 2, 3, 4, 5}, 50, 2},", false, nil, 1},
		{"unsorted", "{[]int64{5, 1}, 50, 1},", false, nil, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := "package main\n\nvar Cases = []struct {\n\tSorted []int64\n\tP      float64\n\tWant   int64\n}{\n\t" + tt.rows + "\n}\n"
			r := mustRun(t, "percentile-tests", src)
			if r.Passed != tt.passed {
				t.Errorf("passed = %v, want %v", r.Passed, tt.passed)
			}
			if tt.badRow > 0 && (r.Cases[tt.badRow-1].Pass || r.Cases[tt.badRow-1].Hint == "") {
				t.Errorf("row %d = %+v, want a failure with a hint", tt.badRow, r.Cases[tt.badRow-1])
			}
			for _, name := range tt.survivors {
				for _, m := range r.Mutants {
					if m.Name == name && m.Caught {
						t.Errorf("mutant %s caught by rows %v, want it to survive", name, m.CaughtBy)
					}
				}
			}
		})
	}
	r := Run("percentile-tests", "package main\n\nvar Cases = 3\n")
	if r.Error == nil || !strings.Contains(r.Error.Msg, "Cases has type int") {
		t.Errorf("Cases = 3: error %v, want one naming the type", r.Error)
	}
}

func TestMeanVsTailHints(t *testing.T) {
	unsorted := `package main

func Summarize(samples []int64) (mean, p50, p99, max int64) {
	n := len(samples)
	if n == 0 {
		return
	}
	for _, v := range samples {
		mean += v
		if v > max {
			max = v
		}
	}
	return mean / int64(n), samples[(n+1)/2-1], samples[(99*n+99)/100-1], max
}
`
	r := mustRun(t, "mean-vs-tail", unsorted)
	c := r.Cases[3] // [900 100 500 300 700]
	if c.Pass || !strings.Contains(c.Hint, "sort a copy") {
		t.Errorf("unsorted case = %+v, want a failure telling to sort", c)
	}
	if !r.Cases[0].Pass {
		t.Errorf("99 x 2 ms case = %+v, want pass (all fast values equal)", r.Cases[0])
	}
	if len(r.Notes) == 0 || !strings.Contains(r.Notes[0], "4980 µs") {
		t.Errorf("notes %q, want the 4980 µs mean explained", r.Notes)
	}
}

func TestBatchModelHints(t *testing.T) {
	tests := []struct{ name, expr, hint string }{
		{"no division by n", "1 / (tWrite.Seconds() + tFsync.Seconds())", "shared by N Puts"},
		{"nanoseconds", "1 / (float64(tWrite) + float64(tFsync)/float64(n))", "time.Duration counts nanoseconds"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := "package main\n\nimport \"time\"\n\nfunc Throughput(n int, tWrite, tFsync time.Duration) float64 {\n\treturn " + tt.expr + "\n}\n\nfunc P99OnSlowPath(n int) bool { return n < 100 }\n"
			r := mustRun(t, "batch-model", src)
			if c := r.Cases[1]; c.Pass || !strings.Contains(c.Hint, tt.hint) {
				t.Errorf("case %+v, want a failure with hint containing %q", c, tt.hint)
			}
			// n < 100 gets the fork at 100 wrong.
			for _, c := range r.Cases {
				if c.Input == "P99OnSlowPath(100)" && (c.Pass || c.Got != "false" || c.Want != "true") {
					t.Errorf("fork case %+v, want got false, want true", c)
				}
			}
		})
	}
}

func TestPrintOutputCaptured(t *testing.T) {
	src := "package main\n\nimport \"fmt\"\n\nfunc Percentile(sorted []int64, p float64) int64 {\n\tfmt.Println(\"n =\", len(sorted))\n\treturn 0\n}\n"
	r := Run("percentile", src)
	if !strings.Contains(r.Output, "n = 100") {
		t.Errorf("output %q, want it to contain the printed line", r.Output)
	}
}
