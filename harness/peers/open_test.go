package peers

import (
	"testing"

	"kvlab/harness"
)

// openStore opens the registered engine name in dir through the harness's
// registry, exactly as a run opens it, failing the test on error.
func openStore(t *testing.T, name, dir, policy string) harness.Store {
	t.Helper()
	s, err := harness.OpenEngine(name, dir, policy)
	if err != nil {
		t.Fatalf("open %s -sync %s: %v", name, policy, err)
	}
	return s
}
