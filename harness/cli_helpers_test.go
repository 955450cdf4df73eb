package harness

import (
	"context"
	"encoding/json"
	"io"
)

// Exec parses line and runs it, as kvlab/harness/harnesstest.Exec does
// for other packages' tests.
func Exec(ctx context.Context, line string, env Env) (json.RawMessage, error) {
	if env.Limits == (Limits{}) {
		env.Limits = DefaultLimits()
	}
	s, err := ParseSpec(line, env.Limits)
	if err != nil {
		return nil, err
	}
	return ExecSpec(ctx, s, env)
}

// Check parses and validates one line (optionally prefixed "labserver ")
// without running it, for the tests of the grammar's errors.
func Check(line string, lim Limits) error {
	_, err := ParseSpec(line, lim)
	return err
}

// RunCLI is RunCLIRecorded with nothing recorded.
func RunCLI(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return RunCLIRecorded(ctx, args, stdout, stderr, nil)
}
