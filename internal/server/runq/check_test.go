package runq

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"

	"kvlab/harness"
	_ "kvlab/harness/peers" // registers resp:// and postgres://
)

// TestCellEngineHosts checks that a server for its owner alone lets a
// cell name a server on this machine only, every address of a host name
// checked, unless the address was listed.
func TestCellEngineHosts(t *testing.T) {
	old := resolveHost
	resolveHost = func(ctx context.Context, host string) ([]net.IPAddr, error) {
		switch host {
		case "localhost":
			return []net.IPAddr{{IP: net.ParseIP("127.0.0.1")}, {IP: net.ParseIP("::1")}}, nil
		case "both.example":
			return []net.IPAddr{{IP: net.ParseIP("127.0.0.1")}, {IP: net.ParseIP("192.0.2.7")}}, nil
		case "lo.example":
			return []net.IPAddr{{IP: net.ParseIP("127.0.0.2")}}, nil
		}
		return nil, errors.New("no such host")
	}
	t.Cleanup(func() { resolveHost = old })
	listed := Addresses{Allowed: []string{"postgres://u@db.example.com:5432/x"}}
	tests := []struct {
		line  string
		addrs Addresses
		err   string // "" for allowed
	}{
		{"bench -engine resp://127.0.0.1:6380 -ops 10", Addresses{}, ""},
		{"bench -engine resp://localhost:6380 -ops 10", Addresses{}, ""},
		{"bench -engine resp://lo.example:6380 -ops 10", Addresses{}, ""},
		{"bench -engine resp://[::1]:6380 -ops 10", Addresses{}, ""},
		{"bench -engine postgres://postgres@127.0.0.1:5432/db -ops 10", Addresses{}, ""},
		{"bench -engine kv -ops 10", Addresses{}, ""},
		{"bench -engine resp://10.0.0.5:6379 -ops 10", Addresses{}, "connects only to servers on this machine"},
		{"bench -engine resp://both.example:6379 -ops 10", Addresses{}, "resolves to 192.0.2.7"},
		{"bench -engine resp://nowhere.example:6379 -ops 10", Addresses{}, "could not be resolved"},
		{"bench -engine kv,postgres://u@db.example.com:5432/x -ops 10", Addresses{}, "connects only to servers on this machine"},
		{"bench -engine kv,postgres://u@db.example.com:5432/x -ops 10", listed, ""},
		{"bench -engine kv,postgresql://u@DB.example.com/x -ops 10", listed, ""},
	}
	for _, tt := range tests {
		b := DefaultBudget()
		b.Addresses = tt.addrs
		_, _, _, err := CheckCell(tt.line, 0, harness.DefaultLimits(), b, 5)
		if tt.err == "" && err != nil {
			t.Errorf("CheckCell(%q): %v, want it allowed", tt.line, err)
		}
		if tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("CheckCell(%q) error = %v, want one containing %q", tt.line, err, tt.err)
		}
	}
}

// TestServesOthersAllowsListedAddressesOnly: a server that serves others
// refuses every address its instructor did not list, loopback ones too
// (a reader could otherwise scan the machine's ports or reach its
// database), and keeps the throwaway engines.
func TestServesOthersAllowsListedAddressesOnly(t *testing.T) {
	allowed, err := ParseAllowedEngines("resp://127.0.0.1:6380, postgresql://kv@127.0.0.1/lab")
	if err != nil {
		t.Fatal(err)
	}
	b := DefaultBudget()
	b.Addresses = Addresses{ServesOthers: true, Allowed: allowed}
	tests := []struct{ engine, err string }{
		{"resp://127.0.0.1:6380", ""},
		{"resp://127.0.0.1:6380?conns=4", ""},
		{"postgres://kv@127.0.0.1:5432/lab", ""},
		{"postgres://kv@127.0.0.1/lab", ""},
		{"resp://127.0.0.1:6381", "only the servers its instructor listed: resp://127.0.0.1:6380, postgres://kv@127.0.0.1:5432/lab"},
		{"resp://localhost:6380", "only the servers its instructor listed"},
		{"postgres://postgres@127.0.0.1:5432/lab", "only the servers its instructor listed"},
		{"postgres://kv@127.0.0.1:5432/other", "only the servers its instructor listed"},
		{"redis", ""}, {"postgres", ""}, {"kvserver", ""}, {"kv", ""},
	}
	for _, tt := range tests {
		_, _, _, err := CheckCell("bench -engine "+tt.engine+" -ops 10", 0, harness.DefaultLimits(), b, 5)
		if tt.err == "" && err != nil {
			t.Errorf("%s: %v, want it allowed", tt.engine, err)
		}
		if tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("%s: error = %v, want one containing %q", tt.engine, err, tt.err)
		}
	}
	b.Addresses.Allowed = nil
	if _, _, _, err := CheckCell("bench -engine resp://127.0.0.1:6380 -ops 10", 0, harness.DefaultLimits(), b, 5); err == nil || !strings.Contains(err.Error(), "none are listed") {
		t.Errorf("no address listed: error = %v, want it refused saying none are listed", err)
	}
	for _, bad := range []string{"", "kv", "resp://127.0.0.1", "postgres://u:pw@127.0.0.1/db", "postgres://u@127.0.0.1/db?host=x"} {
		if _, err := ParseAllowedEngines(bad); err == nil {
			t.Errorf("ParseAllowedEngines(%q) = nil error, want it refused", bad)
		}
	}
}
