package lessons_test

import (
	"testing"

	"kvlab/internal/server"
)

func TestZZProbeMethods(t *testing.T) {
	for i := 0; i < 2; i++ {
		rs, err := execLines(t, []string{"probe -methods -ops 300 -duration 200ms"}, 1, server.DefaultLimits())
		if err != nil {
			t.Fatal(err)
		}
		for k, m := range rs[0].(map[string]any)["methods"].([]any) {
			r := m.(map[string]any)
			t.Logf("%d %v %v %v: p50 %v mean %v n %v refused %v", k, r["method"], r["placement"], r["write_size"], r["p50_ns"], r["mean_ns"], r["iterations"], r["refused"])
		}
	}
}
