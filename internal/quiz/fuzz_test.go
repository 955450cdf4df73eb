package quiz

import (
	"encoding/json"
	"testing"
)

// FuzzExpr checks that no expression text makes the parser or the
// evaluator panic; errors are fine.
func FuzzExpr(f *testing.F) {
	for _, s := range []string{
		"$0.latency.put.p99_ns / $0.latency.put.p50_ns",
		`if($0.model.p99_path == "slow", 2, 1)`,
		"$1[-1].ops_per_sec > 2 * $1[0].ops_per_sec && 1",
		"min(abs(-1), sqrt(log10(100)))",
		"len($1) + -(!0)",
		"$", "$0[", "((((", "1e", "'", "$0.a[-99]",
	} {
		f.Add(s)
	}
	var res []any
	json.Unmarshal([]byte(`[{"latency":{"put":{"p50_ns":2,"p99_ns":8}},"model":{"p99_path":"slow"}},[{"ops_per_sec":1},{"ops_per_sec":3}]]`), &res)
	f.Fuzz(func(t *testing.T, s string) {
		e, err := ParseExpr(s)
		if err != nil {
			return
		}
		e.Eval(res)
		e.maxLine()
	})
}
