package grader

import (
	"errors"
	"fmt"
	"strings"

	"kvlab/gohost"
)

// Exercise is one in-browser exercise. Everything the page shows comes
// from here; the page itself holds no exercise text.
type Exercise struct {
	Name  string `json:"name"`  // the word after ```exercise in a lesson
	Title string `json:"title"` // a short heading
	// Instructions are paragraphs separated by blank lines; `code` spans
	// are the only markup.
	Instructions string `json:"instructions"`
	Stub         string `json:"stub"`     // the starting code in the editor
	Solution     string `json:"solution"` // a model answer, shown on request after an attempt
	// LimitMs is how long the page lets one Run take before it stops the
	// interpreter (0: the page's default, 2 s). The crash exercises reopen
	// the student's store at every crash point and get longer.
	LimitMs int `json:"limit_ms,omitempty"`
	// Measure says the exercise's code is a store (Open, Put, Get) that
	// can also be measured on the real disk, -engine mine: the page
	// offers "Measure on this disk" under the editor.
	Measure bool `json:"measure,omitempty"`

	grade   func(p *program) Result
	prelude gohost.Prelude // what grade calls the student's code through, if anything
}

// Case is one row of a results table.
type Case struct {
	Input string `json:"input"` // the arguments, as a student would write them
	Want  string `json:"want"`
	Got   string `json:"got"`
	Pass  bool   `json:"pass"`
	Hint  string `json:"hint,omitempty"` // one line, only on failures
	Note  string `json:"note,omitempty"` // why the case is in the table, shown always
	// Timeline, on a failing row of a crash exercise, is what the store
	// did to the disk in the (shrunk) failing case, with the power cut
	// and the line of the student's code to blame.
	Timeline *Timeline `json:"timeline,omitempty"`
}

// Mutant reports how a student's test table fared against one broken
// Percentile (exercise percentile-tests).
type Mutant struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Caught      bool   `json:"caught"`
	CaughtBy    []int  `json:"caught_by,omitempty"` // 1-based rows that failed it
	Hint        string `json:"hint,omitempty"`      // how to catch it, when it survived
}

// Result is the outcome of one Run.
type Result struct {
	Exercise string            `json:"exercise"`
	Passed   bool              `json:"passed"`
	Error    *gohost.CodeError `json:"error,omitempty"` // set when no case could run
	Cases    []Case            `json:"cases,omitempty"`
	Mutants  []Mutant          `json:"mutants,omitempty"`
	Notes    []string          `json:"notes,omitempty"`  // what the numbers mean, shown under the table
	Output   string            `json:"output,omitempty"` // what the code printed
}

// Summary is one line saying how the run went.
func (r Result) Summary() string {
	if r.Error != nil {
		return r.Error.Error()
	}
	pass := 0
	for _, c := range r.Cases {
		if c.Pass {
			pass++
		}
	}
	s := fmt.Sprintf("%d of %d cases pass", pass, len(r.Cases))
	if len(r.Mutants) > 0 {
		caught := 0
		for _, m := range r.Mutants {
			if m.Caught {
				caught++
			}
		}
		s += fmt.Sprintf("; %d of %d broken versions caught", caught, len(r.Mutants))
	}
	return s
}

// exercises in the order a course meets them.
var exercises = []*Exercise{percentileExercise, percentileTestsExercise, meanVsTailExercise, batchModelExercise, durableAckExercise, tornTailExercise, atomicReplaceExercise}

// Names lists the exercise names a lesson may use.
func Names() []string {
	var s []string
	for _, e := range exercises {
		s = append(s, e.Name)
	}
	return s
}

// Lookup returns the exercise called name.
func Lookup(name string) (Exercise, error) {
	for _, e := range exercises {
		if e.Name == name {
			return *e, nil
		}
	}
	return Exercise{}, fmt.Errorf("grader: unknown exercise %q: allowed %s", name, strings.Join(Names(), ", "))
}

// Run evaluates src as a solution to the named exercise and runs its cases.
// It never panics on bad student code; a problem with the code is in
// Result.Error. A loop that never ends makes Run never return: the caller
// (the Web Worker's owner) enforces the time limit.
func Run(name, src string) Result {
	gohost.ResetOutput()
	e, err := Lookup(name)
	if err != nil {
		return Result{Exercise: name, Error: &gohost.CodeError{Msg: err.Error()}}
	}
	gradeSeed, gradeSeedGiven = seedOf(src)
	r := func() Result {
		p, ce := load(src, e.prelude)
		if ce != nil {
			return Result{Error: ce}
		}
		return e.grade(p)
	}()
	r.Exercise = name
	r.Output = gohost.Output()
	if len(r.Output) > maxOutput {
		r.Output = r.Output[:maxOutput] + "\n… (output cut at 4 KB)"
	}
	gohost.ResetOutput()
	return r
}

// maxOutput caps how much printed output a Result carries.
const maxOutput = 4 << 10

// program is a student's source loaded for one grading: the host's
// Program, and what the crash exercises' Opens of it did, by the
// fingerprint of the disk (opencache.go).
type program struct {
	*gohost.Program
	cache openCache
}

// load loads src with pre (gohost.Load) for one grading.
func load(src string, pre gohost.Prelude) (*program, *gohost.CodeError) {
	p, ce := gohost.Load(src, pre)
	if ce != nil {
		return nil, ce
	}
	return &program{Program: p}, nil
}

// isIndexPanic reports whether err is an index-out-of-range panic of the
// student's code.
func isIndexPanic(err error) bool {
	var pe *gohost.PanicError
	return errors.As(err, &pe) && pe.Msg == "index out of range"
}

// allPass reports whether every case passed and there was at least one.
func allPass(cs []Case) bool {
	for _, c := range cs {
		if !c.Pass {
			return false
		}
	}
	return len(cs) > 0
}
