package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// TestDecodeResultRoundTripsEveryKind: every kind's JSON decodes back into the value Write
// prints, and prints the same table.
func TestDecodeResultRoundTripsEveryKind(t *testing.T) {
	for _, line := range []string{
		"bench -engine null -ops 200",
		"bench -engine null -ops 200 -repeat 2",
		"model -sync batch:64 -t-write 1us -t-fsync 200us",
		"crash -sync always -trials 1 -power",
	} {
		t.Run(line, func(t *testing.T) {
			raw, err := Exec(context.Background(), line, Env{Dir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			v, err := DecodeResult(raw)
			if err != nil {
				t.Fatal(err)
			}
			again, _ := json.Marshal(v)
			if !bytes.Equal(again, raw) {
				t.Errorf("decoded and encoded again:\n%s\nwant\n%s", again, raw)
			}
			var table strings.Builder
			if err := Write(&table, "table", v); err != nil {
				t.Errorf("Write of the decoded %T: %v", v, err)
			}
		})
	}
	for _, bad := range []string{``, `{"kind":"nope"}`, `[{"kind":"probe"}]`, `{`} {
		if _, err := DecodeResult(json.RawMessage(bad)); err == nil {
			t.Errorf("DecodeResult(%s): no error", bad)
		}
	}
}
