package server

import (
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Attacks a student with a script could make on a room's server, each
// reproduced from issue 14; every test here failed before the limit it
// pins existed.

// A cell whose spec alone shows it is over the budget is refused before
// it queues, with the flag, the computed total and the allowed maximum.
func TestCellBudgetRefusedUpFront(t *testing.T) {
	s := newServer(t, nil)
	ts := startServer(t, s)
	c := dial(t, ts, "", nil)
	tests := []struct {
		name, cell string
		want       []string
	}{
		{"duplicate engines", "bench -engine null,null,null,null -repeat 5 -duration 2s -rate 1",
			[]string{"-engine null,null,null,null: null is named twice"}},
		{"runs per line", "sweep -engine null,kv -threads 1,2,3,4,5,6,7,8,9,10,11,12 -repeat 2 -ops 10",
			[]string{"-max-line-runs", "makes 48 runs", "allows 32 per line"}},
		{"runs per cell", strings.Repeat("sweep -engine null,kv -threads 1,2,4,8 -repeat 3 -ops 10\n", 3),
			[]string{"-max-cell-runs", "makes 72 runs", "allows 64 per cell"}},
		{"time per cell", "bench -engine null,kv -repeat 5 -duration 20s",
			[]string{"-max-cell-time", "at least 3m20s", "allows 3m0s"}},
		{"time from -rate", "bench -engine null -ops 100000 -rate 100",
			[]string{"-max-cell-time", "at least 16m40s"}},
		{"memory", "bench -engine kv -sync none -workload readrandom -keys 10000000 -value-size 0 -ops 1",
			[]string{"-max-memory", "GiB", "-keys 10000000", "allows 1.0 GiB"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c.run(tt.name, tt.cell)
			m := c.next()
			for _, w := range tt.want {
				if m.str("type") != "error" || !strings.Contains(m.str("message"), w) {
					t.Fatalf("got %v, want an error containing %q", m, w)
				}
			}
			if d := c.next(); d.str("type") != "done" {
				t.Fatalf("got %v, want done", d)
			}
		})
	}
	if n := queueLen(s); n != 0 {
		t.Errorf("got %d runs queued, want none", n)
	}
}

// A cell that fits on paper but runs long is stopped when its time
// budget is spent, and the preload of a read workload counts: before,
// preload ignored every cap (a 10M-key preload held the runner 34 s
// for -ops 1).
func TestCellTimeBudgetEnforced(t *testing.T) {
	tests := []struct {
		name, cell string
	}{
		{"closed loop", "bench -engine kv -sync always -ops 200000"},
		{"preload", "bench -engine kv -sync none -workload readrandom -keys 2000000 -value-size 0 -ops 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newServer(t, func(c *Config) { c.Budget.MaxCellTime = 500 * time.Millisecond })
			ts := startServer(t, s)
			c := dial(t, ts, "", nil)
			c.run("x", tt.cell)
			c.until("x", "started")
			t0 := time.Now()
			ms := c.until("x", "done")
			held := time.Since(t0)
			var msgs []string
			for _, m := range ms {
				if m.str("type") == "error" {
					msgs = append(msgs, m.str("message"))
				}
			}
			if len(msgs) != 1 || !strings.Contains(msgs[0], "-max-cell-time 500ms") {
				t.Errorf("got errors %q, want one saying the -max-cell-time 500ms budget was spent", msgs)
			}
			if ms[len(ms)-1]["cancelled"] == true {
				t.Errorf("got a cancelled done, want a plain one after the error")
			}
			t.Logf("%s: the runner was held %v with a 500ms budget", tt.cell, held.Round(time.Millisecond))
			checkNoRunDirs(t, s.cfg.DataDir)
		})
	}
}

// POST /api/quiz refuses what it does not grade from: unknown fields are
// refused as the websocket refuses them, and "results" (numbers sent by
// the client) outright, however many; run ids are capped at a cell's
// lines times a repeat: quiz's rounds.
func TestQuizRefusesWhatItDoesNotRead(t *testing.T) {
	s := newServer(t, nil)
	ts := startServer(t, s)
	one := `{"latency":{"put":{"count":500,"p50_ns":10,"p99_ns":50}},"ops_per_sec":1}`
	tests := []quizRefusal{
		{"unknown field", `{"lesson":"01-fixture","quiz":"tail","answer":"5","extra":1}`, 400, `unknown field "extra"`},
		{"results", `{"lesson":"01-fixture","quiz":"tail","answer":"5","results":[` + one + `,` + one + `]}`, 400, "not from numbers sent with the answer"},
		{"more results than any cell has lines", `{"results":[` + strings.TrimSuffix(strings.Repeat(one+",", 17), ",") + `],"lesson":"01-fixture","quiz":"tail","answer":"5"}`, 400, "not from numbers sent with the answer"},
		{"results first", `{"results":[` + one + `],"lesson":"01-fixture","quiz":"tail","answer":"5"}`, 400, "not from numbers sent with the answer"},
		{"a body cut off after its results", `{"lesson":"01-fixture","quiz":"tail","answer":"5","results":[` + one + `,{"this is not JSON`, 400, "malformed request"},
		{"a prediction", `{"lesson":"01-fixture","quiz":"tail","answer":"5","prediction":true,"browser":"b1","run_ids":[]}`, 422, "run the cell first"},
		{"a prediction that is not a bool", `{"lesson":"01-fixture","quiz":"tail","answer":"5","prediction":"yes"}`, 400, "prediction:"},
		{"more run ids than any cell has lines and rounds", `{"lesson":"01-fixture","quiz":"tail","answer":"5","run_ids":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,32,33,34,35,36,37,38,39,40,41,42,43,44,45,46,47,48,49,50,51,52,53,54,55,56,57,58,59,60,61,62,63,64,65,66,67,68,69,70,71,72,73,74,75,76,77,78,79,80,81]}`, 400, "run_ids: 81 ids; at most 80 (a cell's lines, 5 runs each)"},
		{"run ids not numbers", `{"lesson":"01-fixture","quiz":"tail","answer":"5","run_ids":"1,2"}`, 400, "run_ids: want an array of run ids"},
	}
	checkQuizRefusals(t, ts, tests)
}

// In room mode a probe result carries no hostname, no absolute path and
// no PID; on the user's own loopback server it keeps them.
func TestProbeRedactedInRoom(t *testing.T) {
	host, _ := os.Hostname()
	for _, tt := range []struct {
		name string
		mod  func(*Config)
		hide bool
	}{
		{"loopback", nil, false},
		{"room", func(c *Config) { c.Addr = "0.0.0.0:0"; c.Token = "tok" }, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := newServer(t, tt.mod)
			ts := startServer(t, s)
			c := dial(t, ts, "?token=tok", nil)
			c.run("p", "probe -ops 20 -duration 50ms")
			var res map[string]any
			for _, m := range c.until("p", "done") {
				if m.str("type") == "result" {
					res, _ = m["result"].(map[string]any)
				}
			}
			if res == nil || res["fs"] == nil || res["cores"] == nil {
				t.Fatalf("got result %v, want a probe with the conditions (fs, cores)", res)
			}
			raw, _ := json.Marshal(res)
			leaks := []string{`"host"`, `"dir"`, s.cfg.DataDir, strconv.Itoa(os.Getpid())}
			if host != "" {
				leaks = append(leaks, `"`+host+`"`)
			}
			for _, leak := range leaks {
				if got := strings.Contains(string(raw), leak); got == tt.hide {
					t.Errorf("result contains %q: %v, want %v", leak, got, !tt.hide)
				}
			}
		})
	}
}
