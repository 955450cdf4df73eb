package harness

import (
	"bytes"
	"math"
	"strings"
	"testing"
)

// A bench line's own batch model is fed by the run itself: its
// "prediction" restates the run's throughput (an identity), so the result
// marks it bookkeeping and the table does not call it a prediction.
func TestRunFedModelIsBookkeeping(t *testing.T) {
	rv := execAs[BenchResult](t, "bench -engine kv -sync batch:16 -workload fillrandom -ops 2000")
	r := &rv
	m := r.Model
	if m == nil || !m.Bookkeeping || m.TFsyncSource != "run" || !strings.HasPrefix(m.TWriteSource, "run") {
		t.Fatalf("model %+v, want bookkeeping from the run's own T_write and T_fsync", m)
	}
	// The identity it is: within a few percent of the run's own rate.
	if d := math.Abs(m.PredictedOpsPerSec/r.OpsPerSec - 1); d > 0.1 {
		t.Logf("run-fed figure %.0f against measured %.0f (%.1f%% apart)", m.PredictedOpsPerSec, r.OpsPerSec, 100*d)
	}
	var b bytes.Buffer
	if err := Write(&b, "table", r); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if !strings.Contains(out, "bookkeeping: batch:16") || strings.Contains(out, "model: batch:16 predicts") {
		t.Fatalf("table:\n%s\nwant a bookkeeping line, not a prediction", out)
	}
}
