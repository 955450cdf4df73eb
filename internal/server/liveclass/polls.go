package liveclass

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"kvlab/internal/archive"
	"kvlab/internal/classroom"
	"kvlab/internal/quiz"
	"kvlab/internal/server/guard"
	"kvlab/internal/server/run"
	"kvlab/internal/server/web"
)

// Polls: the presenter opens one on a numeric quiz with a cell:, the
// class predicts, and the presenter's run of the cell measures it
// (presenter.go). Updates go to the room at most every pollUpdateEvery.

type pollRequest struct {
	presenterFields
	Quiz string `json:"quiz"`
}

// pollQuiz finds a quiz of the room's lesson that a poll can measure:
// numeric, with a cell: to run.
func (rs *Rooms) pollQuiz(room *classroom.Room, id string) (*quiz.Quiz, int, error) {
	l, err := rs.cfg.Lesson(room.Lesson)
	if err != nil {
		return nil, http.StatusInternalServerError, err
	}
	if l == nil {
		return nil, http.StatusNotFound, fmt.Errorf("the room's lesson %s is no longer served", room.Lesson)
	}
	q := l.Quiz(id)
	switch {
	case q == nil:
		return nil, http.StatusNotFound, fmt.Errorf("quiz: lesson %s has no quiz %q", l.Slug, id)
	case q.Cell == "" || q.Choices != nil:
		return nil, http.StatusBadRequest, fmt.Errorf("quiz %s: a poll needs a numeric quiz with a cell: (the measurement); this one has none", id)
	}
	return q, 0, nil
}

func (rs roomHTTP) handlePollOpen(w http.ResponseWriter, r *http.Request) {
	var req pollRequest
	room := rs.presenterAction(w, r, &req, &req.Presenter, `{"presenter":"...","quiz":"always-vs-batch"}`)
	if room == nil {
		return
	}
	q, code, err := rs.pollQuiz(room, req.Quiz)
	if err != nil {
		web.JSONError(w, code, err.Error())
		return
	}
	room.Lock()
	if p := room.OpenPollFor(q.ID); p != nil {
		v := p.View()
		room.Unlock()
		web.WriteJSON(w, http.StatusOK, v)
		return
	}
	p := classroom.NewPoll(fmt.Sprintf("p%d", len(room.Polls)+1), q.ID, q.Question, q.Unit, time.Now().UTC())
	ap := &archive.Poll{Room: room.ID, Key: p.Key, Quiz: q.ID, Opened: p.Opened}
	if _, err := rs.cfg.Archive.AddPoll(r.Context(), ap); err != nil {
		room.Unlock()
		web.JSONError(w, http.StatusInternalServerError, "storing the poll: "+err.Error())
		return
	}
	p.ArchID = ap.ID
	room.Polls = append(room.Polls, p)
	rs.touch(r.Context(), room)
	v := p.View()
	room.Unlock()
	rs.broadcast(room, pollMsg{Type: "poll", Poll: v})
	web.WriteJSON(w, http.StatusCreated, v)
}

type predictRoomRequest struct {
	Browser string `json:"browser"`
	Value   string `json:"value"`
}

type predictRoomReply struct {
	Poll  classroom.PollView `json:"poll"`
	Yours float64            `json:"yours"`
}

func (rs roomHTTP) handlePollPredict(w http.ResponseWriter, r *http.Request) {
	if !rs.accessOK(w, r) {
		return
	}
	if !rs.writeAllowed(w, r, "room ballot") {
		return
	}
	var req predictRoomRequest
	if !web.DecodeBody(w, r, rs.cfg.Writes.MaxBytes, &req, `{"browser":"...","value":"12.5"}`) {
		return
	}
	room := rs.lookupRoom(w, r)
	if room == nil {
		return
	}
	if err := run.CheckOrigin("", "", req.Browser); err != nil || req.Browser == "" {
		web.JSONError(w, http.StatusBadRequest, `browser: 1 to 64 letters, digits and '-' (the id the page keeps), required`)
		return
	}
	room.Lock()
	p := room.Poll(r.PathValue("poll"))
	if p == nil {
		room.Unlock()
		web.JSONError(w, http.StatusNotFound, fmt.Sprintf("room %s has no poll %q", classroom.FormatCode(room.Code), r.PathValue("poll")))
		return
	}
	v, code, err := rs.checkBallot(p, guard.RemoteHost(r), req)
	if err != nil {
		room.Unlock()
		web.JSONError(w, code, err.Error())
		return
	}
	// Accepted while the poll is open: the measurement waits for it
	// (Pending) before its run is queued, and the room's lock is not held
	// while the archive's group commit takes its turn.
	p.Pending.Add(1)
	room.Unlock()
	err = rs.cfg.Archive.PutRoomPrediction(r.Context(), &archive.RoomPrediction{Poll: p.ArchID, Browser: req.Browser, Value: v, At: time.Now().UTC()})
	room.Lock()
	if err == nil {
		p.Restore(req.Browser, v)
	}
	p.Pending.Done()
	view := p.View()
	send, pending := p.Updates.Now(time.Now(), pollUpdateEvery)
	room.Unlock()
	if err != nil {
		web.JSONError(w, http.StatusInternalServerError, fmt.Sprintf("storing the prediction: %v", err))
		return
	}
	rs.pollChanged(room, p, view, send, pending)
	web.WriteJSON(w, http.StatusOK, predictRoomReply{Poll: view, Yours: v})
}

// checkBallot checks one prediction for an open poll and counts it
// against the poll's caps. REQUIRES: the poll's room locked.
func (rs roomHTTP) checkBallot(p *classroom.Poll, addr string, req predictRoomRequest) (float64, int, error) {
	if p.State != classroom.PollOpen {
		return 0, http.StatusConflict, fmt.Errorf("poll %s: the measurement started at %s; predictions are closed", p.Quiz, p.MeasureStarted.Format("15:04:05"))
	}
	val := strings.TrimSpace(req.Value)
	if val == "" || len(val) > MaxPredictionLen {
		return 0, http.StatusBadRequest, fmt.Errorf("value: the prediction must be 1 to %d characters", MaxPredictionLen)
	}
	v, err := quiz.ParseNumber(val, p.Unit)
	if err == nil {
		err = classroom.CheckPrediction(v)
	}
	if err != nil {
		return 0, http.StatusBadRequest, errors.New(strings.TrimPrefix(err.Error(), quiz.ErrBadAnswer.Error()+": "))
	}
	if err := p.Admit(addr, req.Browser, rs.cfg.Writes.BallotsPerAddress, rs.cfg.Writes.PerBrowser); err != nil {
		return 0, http.StatusTooManyRequests, fmt.Errorf("%s (-max-ballots-per-address, -max-predictions-per-browser)", strings.TrimPrefix(err.Error(), "classroom: too many ballots: "))
	}
	return v, 0, nil
}

// pollChanged sends a prediction-driven update now, or schedules one
// flush pollUpdateEvery later when none is pending.
func (rs *Rooms) pollChanged(room *classroom.Room, p *classroom.Poll, view classroom.PollView, send, pending bool) {
	switch {
	case send:
		rs.broadcast(room, pollMsg{Type: "poll", Poll: view})
	case !pending:
		rs.later(pollUpdateEvery, func() {
			room.Lock()
			p.Updates.Flushed(time.Now())
			v := p.View()
			room.Unlock()
			rs.broadcast(room, pollMsg{Type: "poll", Poll: v})
		})
	}
}
