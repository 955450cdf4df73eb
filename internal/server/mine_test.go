package server

import (
	"encoding/json"
	"strings"
	"testing"

	_ "kvlab/harness/mine" // registers -engine mine and mine-null
	"kvlab/wasm/grader"
)

// durableAckSolution is the store the Measure button sends once the
// durable-ack exercise is solved.
func durableAckSolution(t *testing.T) string {
	t.Helper()
	e, err := grader.Lookup("durable-ack")
	if err != nil {
		t.Fatal(err)
	}
	return e.Solution
}

// On a server of its own (loopback, no token) a run message's source
// runs natively, on the server's disk: one fdatasync per Put.
func TestWSMineRunsTheSource(t *testing.T) {
	s := newServer(t, func(c *Config) { c.Addr = "127.0.0.1:8080" })
	ts := startServer(t, s)
	c := dial(t, ts, "", nil)
	c.send(map[string]string{"type": "run", "id": "m", "cell": "bench -engine mine -workload fillrandom -ops 100\nbench -engine mine-null -workload fillrandom -ops 100", "source": durableAckSolution(t)})
	ms := c.until("m", "done")
	if got := types(ms); got != "queued started result started result done" {
		t.Fatalf("got %q, want queued, two lines' started and result, done", got)
	}
	for i, want := range []int64{100, 0} {
		var res struct {
			Engine      string `json:"engine"`
			Sync        string `json:"sync"`
			Interpreted bool   `json:"interpreted"`
			Fsyncs      int64  `json:"fsyncs"`
		}
		b, _ := json.Marshal(ms[2+2*i]["result"])
		if err := json.Unmarshal(b, &res); err != nil {
			t.Fatal(err)
		}
		if res.Fsyncs != want || !res.Interpreted || res.Sync != "own" {
			t.Errorf("%s: %d fsyncs, sync %q, interpreted %v; want %d, own, true", res.Engine, res.Fsyncs, res.Sync, res.Interpreted, want)
		}
	}
	checkNoRunDirs(t, s.cfg.DataDir)
}

// Anywhere a server serves others, a reader's code is refused before it
// is queued, with why.
func TestWSMineRefused(t *testing.T) {
	src := durableAckSolution(t)
	tests := []struct {
		name  string
		mod   func(*Config)
		query string
		msg   map[string]string
		want  string
	}{
		{"beyond loopback", func(c *Config) { c.Addr, c.Token = "192.0.2.1:8080", "tok" }, "?token=tok",
			map[string]string{"cell": "bench -engine mine -ops 100", "source": src}, "listens on 192.0.2.1:8080, beyond this machine"},
		{"beyond loopback, no source", func(c *Config) { c.Addr, c.Token = "192.0.2.1:8080", "tok" }, "?token=tok",
			map[string]string{"cell": "bench -engine kv -ops 10\nbench -engine mine-null -ops 100"}, "beyond this machine"},
		{"a token on loopback", func(c *Config) { c.Addr, c.Token = "127.0.0.1:8080", "tok" }, "?token=tok",
			map[string]string{"cell": "bench -engine mine -ops 100", "source": src}, "this server has a token"},
		{"a source with no line to run it", func(c *Config) { c.Addr = "127.0.0.1:8080" }, "",
			map[string]string{"cell": "bench -engine kv -ops 100", "source": src}, "only a line with -engine mine"},
		{"a source too long", func(c *Config) { c.Addr = "127.0.0.1:8080" }, "",
			map[string]string{"cell": "bench -engine mine -ops 100", "source": strings.Repeat("/", 33<<10)}, "must be at most"},
		{"-src on a line", func(c *Config) { c.Addr = "127.0.0.1:8080" }, "",
			map[string]string{"cell": "bench -engine mine -src /etc/passwd -ops 100", "source": src}, "cannot read a file of the machine it runs on"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newServer(t, tt.mod)
			ts := startServer(t, s)
			c := dial(t, ts, tt.query, nil)
			m := map[string]string{"type": "run", "id": "m"}
			for k, v := range tt.msg {
				m[k] = v
			}
			c.send(m)
			ms := c.until("m", "done")
			var errs []string
			for _, m := range ms {
				if m.str("type") == "error" {
					errs = append(errs, m.str("message"))
				}
				if m.str("type") == "result" {
					t.Errorf("a result came back: %v", m["result"])
				}
			}
			if len(errs) == 0 || !strings.Contains(errs[0], tt.want) {
				t.Errorf("errors %q, want the first containing %q", errs, tt.want)
			}
		})
	}
}
