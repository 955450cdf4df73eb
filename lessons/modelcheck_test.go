package lessons_test

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	"kvlab/harness/calc"
	"kvlab/internal/server"
)

// The model predicted, then measured (make bench): for batch:N, N = 1,
// 16, 256 and 1024, a model line (T_fsync from the probe's flush, T_write
// from write-only kv runs and the probe's zero-fill: nothing from the run
// it predicts) and the bench line it predicts run in mirrored rounds, and
// the measured throughput over the prediction is taken round by round.
// The check passes where the median paired ratio is within 20 % of 1, or
// where 1 lies within the rounds' paired spread (a busy machine: the
// prediction is as good as the machine lets anything be).
//
// The model predicts the steady state, in which the engine zero-fills a
// megabyte of segment ahead for every megabyte of records
// (harness/model_inputs.go), so each bench line writes several megabytes
// where that share counts (40,000 Puts at N = 256 and 1024, six
// zero-fills; 4,000 Puts paid none and ran faster than any steady state).
// At N = 1 and 16 a Put's share of a zero-fill is 0.1–3 % of its share of
// a commit, and shorter lines do.
var modelCheck = flag.Int("model-check", 0, "rounds of the model-against-bench check (make bench); 0 skips it")

func TestModelPredictsBatch(t *testing.T) {
	if *modelCheck < 2 {
		t.Skip("the model check runs with -model-check N, N >= 2 (make bench)")
	}
	lim := server.DefaultLimits()
	var report, inputs strings.Builder
	for _, n := range []int{1, 16, 256, 1024} {
		ops := map[int]int{1: 1000, 16: 8000, 256: 40000, 1024: 40000}[n]
		lines := []string{fmt.Sprintf("model -sync batch:%d", n), fmt.Sprintf("bench -engine kv -sync batch:%d -workload fillrandom -ops %d", n, ops)}
		var measured, predicted []float64
		for r := 1; r <= *modelCheck; r++ {
			rs, err := execRound(t, lines, 1, lim, r)
			if err != nil {
				t.Fatal(err)
			}
			predicted = append(predicted, num(t, rs[0], "predicted_ops_per_sec"))
			measured = append(measured, num(t, rs[1], "ops_per_sec"))
			fills, _ := lookup(rs[1], "fsyncs_by_cause.prealloc")
			fmt.Fprintf(&inputs, "batch:%-5d round %d: model T_put %.0f ns + zero-fill share %.0f ns (one fill %.1f ms), T_fsync %.0f µs; bench T_write %.0f ns (zero-fills included, %.0f of them), mean commit fdatasync %.0f µs\n",
				n, r, num(t, rs[0], "t_put_ns"), num(t, rs[0], "t_fill_share_ns"), num(t, rs[0], "t_fill_ns")/1e6, num(t, rs[0], "t_fsync_ns")/1e3,
				num(t, rs[1], "model.t_write_ns"), fills, num(t, rs[1], "fsync_mean_ns")/1e3)
		}
		p, err := calc.PairRatios(measured, predicted)
		if err != nil {
			t.Fatal(err)
		}
		ok := p.Ratio >= 0.8 && p.Ratio <= 1.25 || p.Low <= 1 && 1 <= p.High
		fmt.Fprintf(&report, "batch:%-5d measured/predicted median %.2f (rounds %.2f–%.2f) ok=%v\n", n, p.Ratio, p.Low, p.High, ok)
		if !ok {
			t.Errorf("batch:%d: measured/predicted %.2f (rounds %.2f–%.2f): the model misses by more than 20 %% and more than the rounds' spread", n, p.Ratio, p.Low, p.High)
		}
	}
	load, _ := os.ReadFile("/proc/loadavg")
	t.Logf("model against bench, %d mirrored rounds, load %s\n%s\ninputs, round by round:\n%s", *modelCheck, strings.TrimSpace(string(load)), report.String(), inputs.String())
}
