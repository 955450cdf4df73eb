package harness

import (
	"context"
	"testing"
)

// Building the key table stops when the run's context ends: ten million
// keys take seconds to write out on a loaded machine, longer than a
// cell's remaining budget may be.
func TestBuildKeyTableStopsWithTheRun(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := buildKeyTable(ctx, maxKeys); err != context.Canceled {
		t.Errorf("buildKeyTable with a cancelled context = %v, want context.Canceled", err)
	}
	kt, err := buildKeyTable(context.Background(), 3)
	if err != nil || string(kt.key(2)) != string(newKeyTable(3).key(2)) {
		t.Errorf("buildKeyTable(3) = %q, %v; want newKeyTable's keys", kt.key(2), err)
	}
}

// newKeyTable is buildKeyTable without a run's context, for the tests.
func newKeyTable(n int) keyTable {
	t, _ := buildKeyTable(context.Background(), n)
	return t
}
