package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"kvlab/internal/archive"
	"kvlab/internal/labproc"
)

// Nothing acknowledged is lost: a real labserver process is killed with
// SIGKILL while it runs cells, three times over, and restarted on the same
// -data each time. Every run whose result message carried a run_id is in
// the archive afterwards, and the database opens clean (nothing moved
// aside as corrupt).
func TestSIGKILLKeepsAcknowledgedRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills a real labserver")
	}
	bin := buildLabserver(t)
	data := t.TempDir()
	var acked []int64
	for round := 1; round <= 3; round++ {
		p := labproc.Start(t, bin, data, time.Minute)
		// Runs from earlier rounds survived the kill.
		for _, id := range acked {
			if code := getStatus(t, fmt.Sprintf("%sruns/%d.json", p.URL, id)); code != 200 {
				t.Fatalf("round %d: run %d was acknowledged before the last SIGKILL but GET /runs/%d.json says %d", round, id, id, code)
			}
		}
		got := runUntilKilled(t, p, 15*round)
		acked = append(acked, got...)
		t.Logf("round %d: %d runs acknowledged before SIGKILL (%d in all)", round, len(got), len(acked))
		if strings.Contains(p.Stderr.String(), "corrupt") || strings.Contains(p.Stderr.String(), "moved aside") {
			t.Errorf("round %d: the archive was not clean on start:\n%s", round, p.Stderr)
		}
	}
	// The database, opened directly, is clean and holds every acknowledged run.
	var logged strings.Builder
	a, err := archive.Open(context.Background(), "", data, func(f string, args ...any) { fmt.Fprintf(&logged, f+"\n", args...) })
	if err != nil {
		t.Fatalf("opening the archive after the kills: %v", err)
	}
	defer a.Close()
	if strings.Contains(logged.String(), "corrupt") || strings.Contains(logged.String(), "moved") {
		t.Errorf("opening the archive logged %q, want a clean open", logged.String())
	}
	for _, id := range acked {
		r, err := a.Get(context.Background(), id)
		if err != nil {
			t.Errorf("run %d was acknowledged but is not in the archive: %v", id, err)
			continue
		}
		if !json.Valid(r.Result) || r.Source != "cell" || r.Cell != "kill-cell" {
			t.Errorf("run %d: source %q cell %q result valid %v, want the cell's run whole", id, r.Source, r.Cell, json.Valid(r.Result))
		}
	}
	ents, _ := filepath.Glob(filepath.Join(data, archive.FileName+"*corrupt*"))
	if len(ents) != 0 {
		t.Errorf("found %v: a database was moved aside as corrupt", ents)
	}
}

func getStatus(t *testing.T, url string) int {
	t.Helper()
	r, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	r.Body.Close()
	return r.StatusCode
}

// runUntilKilled keeps three cells queued on p until at least want runs
// have been acknowledged (result with run_id), then SIGKILLs p as soon as
// the next line starts, mid-run. It returns the acknowledged run ids.
func runUntilKilled(t *testing.T, p *labproc.Proc, want int) []int64 {
	t.Helper()
	u := "ws" + strings.TrimPrefix(p.URL, "http") + "ws"
	ws, _, err := websocket.DefaultDialer.Dial(u, nil)
	if err != nil {
		t.Fatalf("dial %s: %v", u, err)
	}
	defer ws.Close()
	const cell = "bench -engine null -ops 3000\nbench -engine kv -sync always -ops 200\nprobe -ops 20"
	n := 0
	send := func() {
		n++
		ws.WriteJSON(map[string]any{"type": "run", "id": fmt.Sprintf("k%d", n), "cell": cell, "lesson": "01-fixture", "cell_id": "kill-cell", "browser": "kill-test"})
	}
	for range 3 {
		send()
	}
	var acked []int64
	killed := false
	for {
		ws.SetReadDeadline(time.Now().Add(2 * time.Minute))
		_, b, err := ws.ReadMessage()
		if err != nil {
			if !killed {
				t.Fatalf("the websocket failed before the kill: %v\n%s", err, p.Stderr)
			}
			break
		}
		var m struct {
			Type  string `json:"type"`
			RunID int64  `json:"run_id"`
		}
		json.Unmarshal(b, &m)
		switch {
		case m.Type == "result" && m.RunID > 0:
			acked = append(acked, m.RunID)
		case m.Type == "done" && !killed:
			send()
		case m.Type == "started" && len(acked) >= want && !killed:
			if err := p.Cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			killed = true
		}
	}
	select {
	case <-p.Exited:
	case <-time.After(30 * time.Second):
		t.Fatal("labserver did not exit after SIGKILL")
	}
	return acked
}
