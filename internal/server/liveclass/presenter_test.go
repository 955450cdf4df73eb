package liveclass

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"kvlab/internal/archive"
	"kvlab/internal/quiz"
	"kvlab/internal/server/run"
	"kvlab/internal/server/runq"
	"kvlab/internal/server/web"
)

// A poll is measured by the quiz's own Evaluate, as POST /api/quiz
// grades: an answer that is not a finite number is refused instead of
// closing the poll on +Inf, which its JSON could not carry. A run whose
// conditions say the machine was busy gives the figure and says why.
func TestPollAnswerIsQuizEvaluate(t *testing.T) {
	e, err := quiz.ParseExpr("$0.x * 10")
	if err != nil {
		t.Fatal(err)
	}
	q := &quiz.Quiz{ID: "big", Answer: e}
	if v, busy, err := quizAnswer(q, []json.RawMessage{json.RawMessage(`{"kind":"bench","x":2,"cpu":{"idle_busy_fraction":0.05}}`)}); err != nil || v != 20 || busy != "" {
		t.Errorf("x=2 on a quiet machine: got %v, %q, %v; want 20 and no busy reason", v, busy, err)
	}
	// The same run with other programs on the processors: the poll still
	// gets the figure, and why it judges no prediction.
	if v, busy, err := quizAnswer(q, []json.RawMessage{json.RawMessage(`{"kind":"bench","x":2,"cpu":{"idle_busy_fraction":0.4}}`)}); err != nil || v != 20 || !strings.Contains(busy, "40% of the processors") {
		t.Errorf("x=2 on a busy machine: got %v, %q, %v; want 20 and why it was busy", v, busy, err)
	}
	if v, _, err := quizAnswer(q, []json.RawMessage{json.RawMessage(`{"x":1.7e308}`)}); err == nil || !strings.Contains(err.Error(), "not a finite number") {
		t.Errorf("x=1.7e308: got %v, %v; want the error that the answer is not a finite number", v, err)
	}
}

// bytesSink is a presenter's socket that keeps what it is sent.
type bytesSink struct {
	mu  sync.Mutex // guards got
	got [][]byte
}

func (b *bytesSink) Send(v any) { b.SendBytes(web.MustMarshal(v), false) }
func (b *bytesSink) SendBytes(p []byte, _ bool) {
	b.mu.Lock()
	b.got = append(b.got, p)
	b.mu.Unlock()
}

// TestPresenterRun: only the room's presenter runs for the room; the
// run's sink sends each message, encoded once, to the presenter and the
// same bytes to every follower, who first hears room_run.
func TestPresenterRun(t *testing.T) {
	r := newRig(t, nil)
	code, secret := r.open(t)
	f := r.join(t, code)
	out := &bytesSink{}
	m := run.Msg{Type: "run", ID: "c1", Cell: "bench -engine null -ops 10", CellID: "always-run", Room: code}
	if rr, err := r.rs.PresenterRun(run.Msg{Type: "run", ID: "x"}, "127.0.0.1", false, out); rr != nil || err != nil {
		t.Errorf("a run outside a room: %v, %v; want nil, nil", rr, err)
	}
	if _, err := r.rs.PresenterRun(m, "127.0.0.1", true, out); err == nil || !strings.Contains(err.Error(), "a follower cannot run for the room") {
		t.Errorf("a follower's run for the room: %v, want refused", err)
	}
	m.Presenter = "wrong"
	if _, err := r.rs.PresenterRun(m, "10.0.0.9", false, out); err == nil {
		t.Errorf("a run with a wrong presenter secret was accepted")
	}
	m.Presenter = secret
	rr, err := r.rs.PresenterRun(m, "10.0.0.9", false, out)
	if err != nil || rr == nil {
		t.Fatalf("the presenter's run: %v, %v", rr, err)
	}
	j := runq.NewJob(t.Context())
	rr.Attach(j)
	if j.Out != rr || j.Class != runq.Presenter {
		t.Errorf("after Attach the job's sink is %T, class %v; want the room's run, presenter", j.Out, j.Class)
	}
	if h := f.nextOf("room_run"); h["id"] != "c1" || h["cell_id"] != "always-run" {
		t.Errorf("the follower heard %v, want room_run for c1", h)
	}
	rr.Send(runq.StartedMsg{Type: "started", ID: "c1", Spec: m.Cell})
	var heard []byte
	for !bytes.Contains(heard, []byte(`"type":"started"`)) { // the room's own updates may come between
		f.conn.SetReadDeadline(time.Now().Add(30 * time.Second))
		if _, heard, err = f.conn.ReadMessage(); err != nil {
			t.Fatal(err)
		}
	}
	out.mu.Lock()
	defer out.mu.Unlock()
	if len(out.got) != 1 || !bytes.Equal(out.got[0], heard) {
		t.Errorf("the presenter got %q, the follower %q: want the same one message", out.got, heard)
	}
}

// raceArchive runs between once, before the first room write it stores
// after between is set (a write between makes goes straight through).
type raceArchive struct {
	archive.Archive
	between func()
	ran     atomic.Bool
}

func (a *raceArchive) UpdateRoom(ctx context.Context, ar *archive.Room) error {
	if a.between != nil && a.ran.CompareAndSwap(false, true) {
		a.between()
	}
	return a.Archive.UpdateRoom(ctx, ar)
}

// TestPresenterRunKeepsNewerState: a presenter's run stores the room's
// new expiry outside the room's lock; a presenter action that changes
// the room while that write waits (here: a section change that lands
// first) is not overwritten by the run's older state.
func TestPresenterRunKeepsNewerState(t *testing.T) {
	var ra *raceArchive
	r := newRig(t, func(c *Config) {
		ra = &raceArchive{Archive: c.Archive}
		c.Archive = ra
	})
	code, secret := r.open(t)
	ra.between = func() {
		if st, m := r.call(t, "POST", "/api/rooms/"+code+"/section", map[string]any{"presenter": secret, "section": 1}); st != 200 {
			t.Errorf("section change: %d %v", st, m)
		}
	}
	m := run.Msg{Type: "run", ID: "c1", Cell: "bench -engine null -ops 10", Room: code, Presenter: secret}
	if _, err := r.rs.PresenterRun(m, "10.0.0.9", false, &bytesSink{}); err != nil {
		t.Fatal(err)
	}
	open, err := r.arch.OpenRooms(context.Background(), time.Now())
	if err != nil || len(open) != 1 {
		t.Fatalf("OpenRooms: %v, %v", open, err)
	}
	if open[0].Section != 1 {
		t.Errorf("stored section %d after the run, want 1: the run's older state landed last", open[0].Section)
	}
}
