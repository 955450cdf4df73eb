package server

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"kvlab/internal/browsertest"
	"kvlab/internal/labproc"
)

// buildLabserver builds the labserver binary, as e2e/ does, and returns its path.
func buildLabserver(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return labproc.Build(t, root)
}

// A server killed with SIGKILL in the middle of a run leaves its run
// directory; the next start removes it and says so. Before, nothing ever
// removed it.
func TestKilledServerLeavesNothingBehind(t *testing.T) {
	bin := buildLabserver(t)
	data := t.TempDir()
	runs := filepath.Join(data, "runs")
	p := labproc.Start(t, bin, data, time.Minute)
	c := dial(t, &httptest.Server{URL: strings.TrimSuffix(p.URL, "/")}, "", nil)
	// -sync always: a steady write rate that stays under the byte cap for
	// the whole 20 s (under none the write buffer reaches it within a second).
	c.run("big", "bench -engine kv -sync always -workload fillrandom -duration 20s -value-size 4096")
	c.until("big", "progress") // writing for a second now
	ents, _ := os.ReadDir(runs)
	if len(ents) == 0 {
		t.Fatal("no run directory under runs/ while a run is going on")
	}
	size := dirSize(runs)
	p.Cmd.Process.Signal(syscall.SIGKILL)
	<-p.Exited
	if ents, _ := os.ReadDir(runs); len(ents) == 0 {
		t.Fatal("the run directory vanished with the killed server: the test shows nothing")
	}
	stderr := labproc.Start(t, bin, data, time.Minute).Stderr
	if ents, _ := os.ReadDir(runs); len(ents) != 0 {
		t.Errorf("after the next start, runs/ holds %d entries, want none", len(ents))
	}
	if !strings.Contains(stderr.String(), "left by a labserver that is no longer running") {
		t.Errorf("the next start's log says %q, want it to name the removed directory", stderr.String())
	}
	t.Logf("the killed server left %d bytes under runs/; the next start removed them", size)
}

// Two servers may share a data directory: a server starting removes what
// dead servers left, never a live one's run directory.
func TestStartKeepsLiveServersRuns(t *testing.T) {
	data := t.TempDir()
	a := newServer(t, func(c *Config) { c.DataDir = data })
	ts := startServer(t, a)
	c := dial(t, ts, "", nil)
	c.run("long", longRun)
	c.until("long", "started")
	live, _ := filepath.Glob(filepath.Join(data, "runs", "run-*"))
	if len(live) != 1 {
		t.Fatalf("got run directories %v, want the running one", live)
	}
	dead := filepath.Join(data, "runs", "run-99999999.1-3") // no lock: its owner is gone
	if err := os.MkdirAll(filepath.Join(dead, "kvlab-kv-1"), 0o755); err != nil {
		t.Fatal(err)
	}
	var log browsertest.Buffer
	b := newServer(t, func(c *Config) { c.DataDir = data; c.Log = &log })
	if _, err := os.Stat(live[0]); err != nil {
		t.Errorf("the live server's run directory: %v, want it kept", err)
	}
	if _, err := os.Stat(dead); !os.IsNotExist(err) {
		t.Errorf("the dead server's run directory: got %v, want it removed", err)
	}
	if !strings.Contains(log.String(), "removed "+dead) {
		t.Errorf("the log says %q, want it to name %s", log.String(), dead)
	}
	c.send(map[string]string{"type": "cancel", "id": "long"})
	c.until("long", "done")
	b.Close()
	a.Close()
	if ents, _ := os.ReadDir(filepath.Join(data, "locks")); len(ents) != 0 {
		t.Errorf("after both servers closed, locks/ holds %d files, want none", len(ents))
	}
}
