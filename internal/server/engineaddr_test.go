package server

import (
	"io"
	"strings"
	"testing"
	"time"

	_ "kvlab/harness/peers" // registers resp:// and postgres://
	"kvlab/internal/silentport"
)

// A server that serves others (here: a run token on loopback) refuses a
// line naming an address its instructor did not list, before anything
// connects; a listed address is run. Before, any loopback port was
// allowed: a reader could scan the machine or reach its database.
func TestServeOthersRefusesUnlistedAddress(t *testing.T) {
	addr, accepted := silentport.Listen(t)
	for _, tt := range []struct {
		name, engine string
		allowed      []string
		refused      bool
	}{
		{"resp unlisted", "resp://" + addr, nil, true},
		{"resp another listed", "resp://" + addr, []string{"resp://127.0.0.1:1"}, true},
		{"resp listed", "resp://" + addr, []string{"resp://" + addr}, false},
		{"postgres unlisted", "postgres://kvlab@" + addr + "/kvlab", nil, true},
		{"postgres other user listed", "postgres://postgres@" + addr + "/kvlab", []string{"postgres://kvlab@" + addr + "/kvlab"}, true},
		{"postgres listed", "postgresql://kvlab@" + addr + "/kvlab", []string{"postgres://kvlab@" + addr + "/kvlab"}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			before := accepted.Load()
			s := newServer(t, func(c *Config) {
				c.Addr, c.Token = "127.0.0.1:8080", "tok"
				c.Budget.Addresses.Allowed = tt.allowed
				c.Budget.MaxCellTime = time.Second
			})
			ts := startServer(t, s)
			c := dial(t, ts, "?token=tok", nil)
			c.run("a", "bench -engine "+tt.engine+" -ops 10")
			ms := c.until("a", "done")
			var errMsg string
			for _, m := range ms {
				if m.str("type") == "error" {
					errMsg = m.str("message")
				}
			}
			refused := strings.Contains(errMsg, "instructor listed")
			if refused != tt.refused {
				t.Fatalf("error = %q; want refused=%v", errMsg, tt.refused)
			}
			if got := accepted.Load() - before; tt.refused && got != 0 {
				t.Errorf("a refused line made %d connections to %s", got, addr)
			} else if !tt.refused && got == 0 {
				t.Errorf("the listed address was never reached (error %q)", errMsg)
			}
		})
	}
}

// -allow-engine takes addresses, repeated or comma-separated, and refuses
// what is not one.
func TestAllowEngineFlag(t *testing.T) {
	f, _, ok := parseServe([]string{"-allow-engine", "resp://127.0.0.1:6380, postgresql://kv@DB.example/lab", "-allow-engine", "resp://[::1]:7000"}, io.Discard)
	if !ok {
		t.Fatal("parseServe refused good -allow-engine values")
	}
	want := []string{"resp://127.0.0.1:6380", "postgres://kv@db.example:5432/lab", "resp://[::1]:7000"}
	if got := f.cfg.Budget.Addresses.Allowed; strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("allowed = %v, want %v", got, want)
	}
	for _, bad := range []string{"kv", "postgres://u:secret@h/db", "resp://h", "postgres://u@h/db?host=/tmp"} {
		var out strings.Builder
		if _, _, ok := parseServe([]string{"-allow-engine", bad}, &out); ok || !strings.Contains(out.String(), "-allow-engine") {
			t.Errorf("-allow-engine %s: ok=%v, stderr %q; want it refused naming the flag", bad, ok, out.String())
		}
	}
}
