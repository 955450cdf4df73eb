// Package harnesstest is test support for the packages that run harness
// lines: it runs a line from its text, as the command line and a lesson
// cell spell it (Exec), scales a line's size budgets down for a shorter
// run (ScaleLine, scale.go), and puts the kv engine on a simulated disk
// (SimulateDisk, disk.go). The server and the command line parse a line
// first and run the Spec they checked (harness.ParseSpec,
// harness.ExecOutput); a test has nothing to check in between.
package harnesstest

import (
	"context"
	"encoding/json"

	"kvlab/harness"
)

// Exec runs one line: bench | sweep | probe | model | crash. It returns
// exactly what `-format json` prints for that line: a JSON object, or an
// array for sweep, -repeat and -engine a,b. A cancelled bench or sweep
// returns what it measured, each cut-short run marked "cancelled". Zero
// env.Limits means harness.DefaultLimits.
func Exec(ctx context.Context, line string, env harness.Env) (json.RawMessage, error) {
	if env.Limits == (harness.Limits{}) {
		env.Limits = harness.DefaultLimits()
	}
	s, err := harness.ParseSpec(line, env.Limits)
	if err != nil {
		return nil, err
	}
	o, err := harness.ExecOutput(ctx, s, env)
	return o.JSON, err
}
