package runspage

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"testing"
	"time"

	"kvlab/internal/archive"
)

// A field with a tab, a line break or a double quote stays one field on
// one row, and reads back as it was written: the row has as many fields
// as the header, and the spec and lesson come back unchanged.
func TestRunTSVQuotesFields(t *testing.T) {
	spec := "bench -engine kv\t-sync \"always\"\n-ops 10"
	res, _ := json.Marshal(map[string]any{"kind": "bench", "spec": spec, "engine": "kv", "ops": 10,
		"latency": map[string]any{"put": map[string]any{"p99_ns": 900000}}})
	r := &archive.Run{ID: 7, Started: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC), Source: "cell",
		Lesson: "01-a\tb", Cell: "c1", Kind: "bench", Spec: spec, Result: res}
	var b bytes.Buffer
	if err := writeRunTSV(&b, r); err != nil {
		t.Fatal(err)
	}
	rd := csv.NewReader(&b)
	rd.Comma = '\t'
	rows, err := rd.ReadAll()
	if err != nil {
		t.Fatalf("reading the TSV back: %v\n%s", err, b.String())
	}
	if len(rows) != 2 || len(rows[1]) != len(tsvColumns) {
		t.Fatalf("got %d rows (%v), want a header and one row of %d fields", len(rows), rows, len(tsvColumns))
	}
	col := map[string]string{}
	for i, h := range rows[0] {
		col[h] = rows[1][i]
	}
	if col["spec"] != spec || col["lesson"] != r.Lesson || col["p99_ns"] != "900000" || col["run_id"] != "7" {
		t.Errorf("read back spec %q lesson %q p99 %q id %q, want %q, %q, 900000, 7", col["spec"], col["lesson"], col["p99_ns"], col["run_id"], spec, r.Lesson)
	}
}
