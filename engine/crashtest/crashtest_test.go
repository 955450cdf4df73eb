package crashtest

import (
	"context"
	"os"
	"testing"

	"kvlab/engine"
)

func TestMain(m *testing.M) {
	MaybeRunChild()
	os.Exit(m.Run())
}

func TestValueRoundTrip(t *testing.T) {
	w := workload{Seed: 7, ValueSize: 128, Keys: 10}
	for _, c := range []struct {
		wr int
		j  int64
	}{{0, 0}, {3, 12345}, {15, 1 << 40}} {
		v := valueFor(w, c.wr, c.j)
		j, ok := parseValue(v, c.wr)
		if !ok || j != c.j {
			t.Errorf("parseValue(valueFor(%d, %d)): got %d, %v; want %d, true", c.wr, c.j, j, ok, c.j)
		}
		if _, ok := parseValue(v, c.wr+1); ok {
			t.Errorf("value of writer %d parsed as writer %d's", c.wr, c.wr+1)
		}
		if n := len(v); n < w.ValueSize/2 || n > w.ValueSize*3/2 {
			t.Errorf("value length %d, want %d..%d", n, w.ValueSize/2, w.ValueSize*3/2)
		}
	}
}

// TestRunBothKinds runs a few trials of each kind and checks the report
// adds up.
func TestRunBothKinds(t *testing.T) {
	for _, power := range []bool{false, true} {
		rep, err := Run(context.Background(), Config{
			Sync: engine.SyncPolicy{Mode: engine.SyncGroup}, Trials: 3, Power: power, Dir: t.TempDir(), Seed: 5,
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Trials) != 3 || !rep.OK() || rep.Sync != "group" || rep.Power != power {
			t.Errorf("power=%v: got %+v, want 3 clean trials of group", power, rep)
		}
		var sum int64
		for _, tr := range rep.Trials {
			sum += tr.Recovered
		}
		if sum != rep.Recovered {
			t.Errorf("power=%v: recovered sums to %d, report says %d", power, sum, rep.Recovered)
		}
	}
}

func TestRunErrors(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Run(ctx, Config{Trials: 2, Power: true}, nil); err == nil {
		t.Error("Run with a cancelled context: got nil error")
	}
	if _, err := Run(context.Background(), Config{Trials: -1}, nil); err == nil {
		t.Error("Run with Trials -1: got nil error")
	}
	if _, err := Run(context.Background(), Config{Sync: engine.SyncPolicy{Mode: engine.SyncBatch}}, nil); err == nil {
		t.Error("Run with batch:0: got nil error")
	}
}
