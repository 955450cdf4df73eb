package calc

import (
	"encoding/json"
	"os"
	"testing"
)

// durationCase is one row of harness/testdata/durations.json: a duration
// in nanoseconds and how it prints. The page's fmtNs (static/dom.js) is
// tested against the same file, so every place kvlab prints a latency
// (tables, quizzes' show lines, /compare, the page) rounds it the same way.
type durationCase struct {
	Ns   float64 `json:"ns"`
	Text string  `json:"text"`
	Why  string  `json:"why"`
}

func TestFormatNsTable(t *testing.T) {
	b, err := os.ReadFile("../testdata/durations.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []durationCase
	if err := json.Unmarshal(b, &cases); err != nil {
		t.Fatalf("testdata/durations.json: %v", err)
	}
	for _, c := range cases {
		if got := FormatNs(c.Ns); got != c.Text {
			t.Errorf("calc.FormatNs(%v): got %q, want %q %s", c.Ns, got, c.Text, c.Why)
		}
	}
}
