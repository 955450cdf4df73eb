package liveclass

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"kvlab/internal/archive"
	"kvlab/internal/classroom"
	"kvlab/internal/grade"
	"kvlab/internal/quiz"
	"kvlab/internal/server/run"
	"kvlab/internal/server/runq"
	"kvlab/internal/server/web"
)

// The presenter's runs. The presenter uses the server's run websocket,
// /ws, with "room" (and "poll") on a run message; the server asks
// PresenterRun whether the reader may run for that room, and the Run it
// gets back becomes the job's sink (Attach: run.Fanout): every message of the run is
// encoded once and goes to the presenter and, the same bytes, to every
// follower.

type roomRunMsg struct {
	Type   string `json:"type"` // "room_run"
	ID     string `json:"id"`
	CellID string `json:"cell_id"`
	Cell   string `json:"cell"`
}

// Run is a presenter's run in a room: the job's sink. It is safe for
// concurrent use (its fields never change after PresenterRun).
type Run struct {
	rs    *Rooms
	out   run.Sink // the presenter's socket
	room  *classroom.Room
	poll  *classroom.Poll // nil unless the run measures a poll
	m     run.Msg
	quizQ string // the poll's quiz
}

// PresenterRun checks a run message's "room" and "poll" for the reader
// at addr whose messages go to out: the room is open, the reader is its
// presenter (a follower never is), and the poll is open to measuring.
// nil, nil for a run outside a room.
func (rs *Rooms) PresenterRun(m run.Msg, addr string, follower bool, out run.Sink) (*Run, error) {
	if m.Room == "" && m.Poll == "" {
		return nil, nil
	}
	if follower {
		return nil, errors.New("a follower cannot run for the room: only the presenter's runs are shown to the room")
	}
	if m.Room == "" {
		return nil, errors.New(`poll: a run that measures a poll must name its room ("room":"XXXXX-XXXXX")`)
	}
	room := rs.Open(m.Room)
	if room == nil {
		return nil, errors.New(rs.noRoom(m.Room))
	}
	if _, why := rs.cfg.Guard.PresenterError(addr, room, "room "+classroom.FormatCode(room.Code), m.Presenter); why != "" {
		return nil, errors.New(why)
	}
	rr := &Run{rs: rs, out: out, room: room, m: m}
	room.Lock()
	if m.Poll != "" {
		p := room.Poll(m.Poll)
		var err error
		switch {
		case p == nil:
			err = fmt.Errorf("poll: room %s has no poll %q", classroom.FormatCode(room.Code), m.Poll)
		case p.State != classroom.PollOpen:
			err = fmt.Errorf("poll %s (%s) is %s: its measurement already started; open a new poll for the quiz to measure again", p.Key, p.Quiz, p.State)
		}
		if err != nil {
			room.Unlock()
			return nil, err
		}
		q, _, err := rs.pollQuiz(room, p.Quiz)
		if err == nil && m.CellID != "" && m.CellID != q.Cell {
			err = fmt.Errorf("poll %s measures cell %s, not %s", p.Key, q.Cell, m.CellID)
		}
		if err != nil {
			room.Unlock()
			return nil, err
		}
		rr.poll, rr.quizQ = p, q.ID
	}
	room.Unlock()
	rs.touchUnlocked(context.Background(), room)
	return rr, nil
}

// Attach makes j's messages go to the room, a refusal included, and
// queues it as the presenter's: followers first hear room_run; a poll's
// predictions close now, before j is queued. A nil rr does nothing.
func (rr *Run) Attach(j *runq.Job) {
	if rr == nil {
		return
	}
	j.Out, j.Refused, j.Class = rr, rr.refused, runq.Presenter
	rr.rs.broadcast(rr.room, roomRunMsg{Type: "room_run", ID: rr.m.ID, CellID: rr.m.CellID, Cell: rr.m.Cell})
	if rr.poll == nil {
		return
	}
	rr.room.Lock()
	rr.poll.StartMeasuring(time.Now().UTC())
	ap := pollRecord(rr.poll)
	rr.room.Unlock()
	rr.rs.storePoll(rr.poll, ap) // not under the room's lock (PresenterRun)
	// Ballots accepted before the poll closed are stored before the run
	// is queued (at most one group commit away).
	rr.poll.Pending.Wait()
	rr.room.Lock()
	v := rr.poll.View()
	rr.room.Unlock()
	rr.rs.broadcast(rr.room, pollMsg{Type: "poll", Poll: v})
	rr.rs.life.spawn(func() { rr.measured(j) })
}

// refused tells the presenter and every follower (they heard room_run)
// why the queue refused the run (done follows, to the same audience); a
// poll it was to measure opens again, since nothing was measured, and
// the room hears the poll's new state.
func (rr *Run) refused(err error) {
	msg := "the run queue refused this run: " + err.Error()
	if rr.poll == nil {
		rr.Send(runq.ErrorMsg{Type: "error", ID: rr.m.ID, Message: msg})
		return
	}
	rr.room.Lock()
	reopened := rr.poll.Reopen()
	if reopened {
		rr.rs.savePoll(rr.poll)
		msg += fmt.Sprintf("; poll %s is open again: predictions are taken until the presenter measures again", rr.poll.Key)
	}
	v := rr.poll.View()
	rr.room.Unlock()
	rr.Send(runq.ErrorMsg{Type: "error", ID: rr.m.ID, Message: msg})
	rr.rs.broadcast(rr.room, pollMsg{Type: "poll", Poll: v})
}

// Send implements runq.Sink: one encoding for the presenter and the room.
func (rr *Run) Send(v any) {
	b := web.MustMarshal(v)
	_, progress := v.(runq.ProgressMsg)
	rr.out.SendBytes(b, progress)
	rr.rs.broadcastBytes(rr.room, b)
}

// measured waits for the poll's run and, when it gave its results,
// evaluates the quiz's answer on them and closes the poll. A failed or
// cancelled run leaves the poll measuring.
func (rr *Run) measured(j *runq.Job) {
	<-j.Done()
	if j.Err() != nil || len(j.Results()) != len(j.Lines) {
		return
	}
	q, _, err := rr.rs.pollQuiz(rr.room, rr.quizQ)
	var v float64
	var busy string
	if err == nil {
		v, busy, err = quizAnswer(q, j.Results())
	}
	if err != nil {
		rr.rs.cfg.Log.Printf("room %s: poll %s: %v", classroom.FormatCode(rr.room.Code), rr.poll.Key, err)
		return
	}
	var runID int64
	if n := len(j.RunIDs()); n > 0 {
		runID = j.RunIDs()[n-1]
	}
	rr.room.Lock()
	rr.poll.Finish(v, runID, busy)
	rr.rs.savePoll(rr.poll)
	view := rr.poll.View()
	rr.room.Unlock()
	rr.rs.broadcast(rr.room, pollMsg{Type: "poll", Poll: view})
}

// pollRecord is p's progress as the archive keeps it. REQUIRES: its room
// locked.
func pollRecord(p *classroom.Poll) *archive.Poll {
	return &archive.Poll{ID: p.ArchID, MeasureStarted: p.MeasureStarted, Measured: p.Measured, RunID: p.RunID, Busy: p.Busy}
}

// savePoll stores p's progress. REQUIRES: its room locked.
func (rs *Rooms) savePoll(p *classroom.Poll) { rs.storePoll(p, pollRecord(p)) }

// storePoll stores ap, p's progress as pollRecord took it.
func (rs *Rooms) storePoll(p *classroom.Poll, ap *archive.Poll) {
	if err := rs.cfg.Archive.UpdatePoll(context.Background(), ap); err != nil {
		rs.cfg.Log.Printf("poll %s: %v", p.Key, err)
	}
}

// quizAnswer is q's answer on a run's results (grade.Measure: the figure
// POST /api/quiz would grade against) and why the run was made on a
// machine too busy to judge predictions by, "" when it was not.
func quizAnswer(q *quiz.Quiz, results []json.RawMessage) (v float64, busy string, err error) {
	fb, busy, err := grade.Measure(q, [][]json.RawMessage{results})
	return fb.WantNum, busy, err
}
