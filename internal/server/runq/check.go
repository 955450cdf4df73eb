package runq

import (
	"errors"
	"fmt"

	"kvlab/harness"
	"kvlab/internal/lesson"
)

// MaxRounds caps a job's Repeat: the page's "repeat 5x" asks for 5.
const MaxRounds = 10

// CheckCell splits a cell into run lines and checks them with
// CheckLines, run rounds times. It returns the lines and their specs;
// bad is the 0-based line at fault, or -1.
func CheckCell(cell string, rounds int, lim harness.Limits, b Budget, maxLines int) (lines []string, specs []*harness.Spec, bad int, err error) {
	lines = lesson.CellLines(cell)
	if len(lines) == 0 {
		return nil, nil, -1, fmt.Errorf("the cell has no run-spec lines (lines starting with # are comments); try: bench -engine kv -sync always -ops 2000")
	}
	if len(lines) > maxLines {
		return nil, nil, -1, fmt.Errorf("the cell has %d run-spec lines; the limit is %d", len(lines), maxLines)
	}
	specs, bad, err = CheckLines(lines, rounds, lim, b)
	if err != nil {
		return nil, nil, bad, err
	}
	return lines, specs, -1, nil
}

// CheckLines checks a job's lines before it queues, as its run would:
// each line against the limits (parsed once: the specs it returns are
// what the job runs and records), then all of them, run rounds times (0
// or 1: once), against the budget. The error names the line at fault,
// 1-based, with its text ("line 2 (bench ...): why"), or says what of the
// whole is over; bad is the 0-based line, or -1.
func CheckLines(lines []string, rounds int, lim harness.Limits, b Budget) (specs []*harness.Spec, bad int, err error) {
	specs = make([]*harness.Spec, len(lines))
	for i, l := range lines {
		if specs[i], err = checkLine(l, lim, b.Addresses); err != nil {
			return nil, i, lineError(i, l, err)
		}
	}
	if bad, err = b.check(specs, rounds); err != nil {
		if bad >= 0 {
			return nil, bad, lineError(bad, lines[bad], err)
		}
		return nil, -1, err
	}
	return specs, -1, nil
}

// lineError names line i (1-based i+1) and its text once, then says what
// is wrong with it.
func lineError(i int, line string, err error) error {
	return fmt.Errorf("line %d (%s): %v", i+1, line, err)
}

// checkLine parses one run line and checks it against the limits and
// what the server allows (its engines named by an address among it:
// addresses.go). The error says what is wrong and what is allowed, but
// not which line: the caller names it.
func checkLine(line string, lim harness.Limits, addrs Addresses) (*harness.Spec, error) {
	spec, err := harness.ParseSpec(line, lim)
	if err != nil {
		return nil, err
	}
	if spec.Dir != "" {
		return nil, errors.New("-dir is not allowed here: the server runs every line in a fresh directory under its -data folder")
	}
	if spec.Keep {
		return nil, errors.New("-keep is not allowed here: the server removes every run's directory")
	}
	for _, e := range spec.Engines {
		if err := checkEngineAddress(e, addrs); err != nil {
			return nil, err
		}
	}
	return spec, nil
}
