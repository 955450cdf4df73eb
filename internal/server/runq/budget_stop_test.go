package runq

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"kvlab/harness"
	"kvlab/internal/browsertest"
	"kvlab/internal/localserver"
	"kvlab/internal/silentport"
)

// stamped keeps when each job's first line started and the messages of
// each job. It is safe for concurrent use.
type stamped struct {
	mu      sync.Mutex // guards started and errs
	started map[string]time.Time
	errs    map[string]string
}

func (s *stamped) Send(v any) {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	switch m := v.(type) {
	case StartedMsg:
		if _, ok := s.started[m.ID]; !ok {
			s.started[m.ID] = now
		}
	case ErrorMsg:
		s.errs[m.ID] += m.Message
	}
}

// enterableDir is a fresh directory every user can enter, removed when the
// test ends: as root the throwaway PostgreSQL cluster runs as nobody, and
// t.TempDir's parent is private.
func enterableDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "kvlab-runq-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(d, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// Every command that can run long obeys the cell's time budget: run past
// a short -max-cell-time, it is stopped, and the cell queued behind it
// starts within 1 s of the budget. Before, a silent resp:// server held
// the one run queue for as long as it stayed silent, probe -methods -ops
// 1000000 prepared its regions for half a minute, and crash -fail-sync
// ran on past its budget.
func TestLongCommandsStopAtTheBudget(t *testing.T) {
	silent := silentAddr(t)
	tests := []struct {
		line   string
		budget time.Duration
		needs  string // a program the line starts, or ""
	}{
		{"bench -engine resp://" + silent + " -ops 10", time.Second, ""},
		{"bench -engine resp://" + silent + "?conns=4 -ops 10", time.Second, ""},
		{"bench -engine postgres://kvlab@" + silent + "/kvlab -ops 10", time.Second, ""},
		{"probe -methods -ops 1000000", time.Second, ""},
		{"crash -sync always -fail-sync 100000", time.Second, ""},
		{"crash -sync always -power -points", 20 * time.Millisecond, ""},
		// Seeding: a readrandom line fills the store before its clock
		// starts (drift's 50,000 Puts a second, on no disk: 4 s here).
		{"bench -engine drift -workload readrandom -keys 200000 -ops 10", time.Second, ""},
		// The throwaway servers: initdb, or the wait for the server to
		// answer, stops with the budget.
		{"bench -engine postgres -ops 10", 300 * time.Millisecond, "postgres"},
		{"bench -engine redis -ops 10", 5 * time.Millisecond, "redis-server"},
	}
	for _, tt := range tests {
		t.Run(strings.Fields(tt.line)[0]+" "+tt.line[strings.Index(tt.line, " ")+1:], func(t *testing.T) {
			switch tt.needs {
			case "postgres":
				if localserver.PostgresBinDir() == "" {
					browsertest.Missing(t, "PostgreSQL's server binaries are not installed")
				}
			case "redis-server":
				if _, err := exec.LookPath("redis-server"); err != nil {
					browsertest.Missing(t, "redis-server is not installed")
				}
			}
			b := DefaultBudget()
			b.MaxCellTime = tt.budget
			r := New(Config{RunsDir: filepath.Join(enterableDir(t), "runs"), Name: "t", Limits: harness.DefaultLimits(), Budget: b,
				MaxWaiting: 4, Archive: &memArchive{}, Version: "test", HostID: "test"})
			t.Cleanup(r.Close)
			out := &stamped{started: map[string]time.Time{}, errs: map[string]string{}}
			submit := func(id, line string) *Job {
				specs, _, err := CheckLines([]string{line}, 0, harness.DefaultLimits(), b)
				if err != nil {
					t.Fatal(err)
				}
				j := NewJob(context.Background())
				j.ID, j.Class, j.Out, j.Lines, j.Specs, j.From = id, Cell, out, []string{line}, specs, Origin{Source: "cell"}
				if err := r.Submit(j); err != nil {
					t.Fatal(err)
				}
				return j
			}
			long := submit("long", tt.line)
			next := submit("next", "bench -engine null -ops 10")
			select {
			case <-next.Done():
			case <-time.After(60 * time.Second):
				t.Fatal("the next cell had not finished 60 s later")
			}
			<-long.Done()
			out.mu.Lock()
			defer out.mu.Unlock()
			if !strings.Contains(out.errs["long"], "time budget") {
				t.Errorf("the long line ended with %q, want it stopped by its time budget", out.errs["long"])
			}
			gap := out.started["next"].Sub(out.started["long"])
			t.Logf("the next cell started %v after the long one, budget %v: %v past it", gap, tt.budget, gap-tt.budget)
			if gap > tt.budget+time.Second {
				t.Errorf("the next cell started %v after the long one began, budget %v: want within 1 s of the budget", gap, tt.budget)
			}
		})
	}
}

// silentAddr is a loopback address that accepts and never answers.
func silentAddr(t *testing.T) string {
	addr, _ := silentport.Listen(t)
	return addr
}
