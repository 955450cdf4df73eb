package harness

import (
	"context"
	"errors"
)

// crashLine runs a crash line. Wired to kvlab/engine/crashtest.
func crashLine(ctx context.Context, s *Spec, dir string, env Env) (any, error) {
	return nil, errors.New("crash: not available in this build")
}
