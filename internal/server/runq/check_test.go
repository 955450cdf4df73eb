package runq

import (
	"strings"
	"testing"

	"kvlab/harness"
	_ "kvlab/harness/peers" // registers resp:// and postgres://
)

// TestCellEngineHosts checks that a cell may name a server on this
// machine only.
func TestCellEngineHosts(t *testing.T) {
	tests := []struct {
		line string
		err  string // "" for allowed
	}{
		{"bench -engine resp://127.0.0.1:6380 -ops 10", ""},
		{"bench -engine resp://localhost:6380 -ops 10", ""},
		{"bench -engine resp://[::1]:6380 -ops 10", ""},
		{"bench -engine postgres://postgres@127.0.0.1:5432/db -ops 10", ""},
		{"bench -engine kv -ops 10", ""},
		{"bench -engine resp://10.0.0.5:6379 -ops 10", "connects only to servers on this machine"},
		{"bench -engine kv,postgres://u@db.example.com:5432/x -ops 10", "connects only to servers on this machine"},
	}
	for _, tt := range tests {
		_, _, _, err := CheckCell(tt.line, 0, harness.DefaultLimits(), DefaultBudget(), 5)
		if tt.err == "" && err != nil {
			t.Errorf("CheckCell(%q): %v, want it allowed", tt.line, err)
		}
		if tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("CheckCell(%q) error = %v, want one containing %q", tt.line, err, tt.err)
		}
	}
}
