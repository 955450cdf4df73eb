package harness

import (
	"context"
	"io"
)

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
