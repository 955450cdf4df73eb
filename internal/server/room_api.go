package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"kvlab/internal/archive"
	"kvlab/internal/classroom"
	"kvlab/internal/lesson"
	"kvlab/internal/quiz"
	"kvlab/internal/server/guard"
	"kvlab/internal/server/runq"
	"kvlab/internal/server/web"
)

// The room: a live class on one lesson. The presenter (the token holder,
// or on a server without a token a same-origin request from loopback)
// starts it and drives it; followers join with its code. docs/api.md has
// the wire contract; this file holds the HTTP API, room_ws.go the
// follower socket and the presenter's runs, share.go the class board's
// cross-origin share endpoint and the share targets.
//
//	POST /api/rooms                               start a room (presenter)
//	GET  /api/rooms/{code}                        its state (anyone with the code)
//	POST /api/rooms/{code}/section                {"token","section"}
//	POST /api/rooms/{code}/allow-runs             {"token","allow"}
//	POST /api/rooms/{code}/close                  {"token"}
//	POST /api/rooms/{code}/polls                  {"token","quiz"}: open a prediction poll
//	POST /api/rooms/{code}/polls/{poll}/predict   {"browser","value"}
//	GET  /api/rooms/{code}/board?measure=M        the class board
//	DELETE /api/rooms/{code}/board/{id}           {"token"}: remove an entry
//	POST /api/rooms/{code}/share                  the one cross-origin route (share.go)
//	GET  /room/{code}/qr.svg                      the join URL as a QR code
//	GET  /room/{code}/ws                          the follower socket (room_ws.go)
//
// Every lookup of a well-formed code that names no open room counts
// against the asking address (-max-unknown-codes a minute): past that,
// the address is refused every lookup for the rest of the minute, so
// codes cannot be scanned. Text that is not a code at all (a typo, a
// stray path) does not count: it cannot find a room.

const (
	defaultRoomTTL = 4 * time.Hour
	// defaultMaxUnknownCodes is -max-unknown-codes' default.
	defaultMaxUnknownCodes = 30
	roomBodyLimit          = 4 << 10
	pollUpdateEvery        = 250 * time.Millisecond
	countUpdateEvery       = time.Second
	sweepEvery             = 30 * time.Second
)

// rooms is the server's live classes. It is safe for concurrent use.
type rooms struct {
	reg     *classroom.Registry
	ttl     time.Duration
	hubLim  classroom.HubLimits
	lookups *guard.Limiter // unknown codes, per address
	targets *shareTargets  // the room servers this server's pages may share to (share.go)
	// sentHook, when set (benchmarks), sees every message fanned out to
	// a room as the presenter's side sends it. Set before serving.
	sentHook func(b []byte)
}

// startRooms sets up the rooms, reloads the open ones from the archive
// and starts the sweeper that closes expired rooms.
func (s *Server) startRooms() error {
	ttl := s.cfg.RoomTTL
	if ttl <= 0 {
		ttl = defaultRoomTTL
	}
	if s.cfg.MaxUnknownCodes <= 0 {
		s.cfg.MaxUnknownCodes = defaultMaxUnknownCodes
	}
	t, err := loadShareTargets(s.cfg.DataDir, s.log.Printf)
	if err != nil {
		return err
	}
	s.rooms = &rooms{reg: classroom.NewRegistry(), ttl: ttl, targets: t, hubLim: classroom.HubLimits{PingEvery: s.pongWait / 2},
		lookups: guard.NewLimiter(s.cfg.MaxUnknownCodes, time.Minute)}
	if err := s.reloadRooms(); err != nil {
		return err
	}
	s.wg.Add(1)
	go s.sweepRooms()
	return nil
}

func (s *Server) routeRooms() {
	s.mux.HandleFunc("POST /api/rooms", s.handleRoomCreate)
	s.mux.HandleFunc("GET /api/rooms/{code}", s.handleRoomState)
	s.mux.HandleFunc("POST /api/rooms/{code}/section", s.handleRoomSection)
	s.mux.HandleFunc("POST /api/rooms/{code}/allow-runs", s.handleRoomAllowRuns)
	s.mux.HandleFunc("POST /api/rooms/{code}/close", s.handleRoomClose)
	s.mux.HandleFunc("POST /api/rooms/{code}/polls", s.handlePollOpen)
	s.mux.HandleFunc("POST /api/rooms/{code}/polls/{poll}/predict", s.handlePollPredict)
	s.mux.HandleFunc("GET /api/rooms/{code}/board", s.handleBoard)
	s.mux.HandleFunc("DELETE /api/rooms/{code}/board/{id}", s.handleBoardDelete)
	s.mux.HandleFunc("POST /api/rooms/{code}/share", s.handleShare)
	s.mux.HandleFunc("OPTIONS /api/rooms/{code}/share", s.handleSharePreflight)
	s.mux.HandleFunc("GET /api/share-target", s.handleShareTargets)
	s.mux.HandleFunc("POST /api/share-target", s.handleShareTargetAdd)
	s.mux.HandleFunc("DELETE /api/share-target", s.handleShareTargetDelete)
	s.mux.HandleFunc("GET /room/{code}/qr.svg", s.handleRoomQR)
	s.mux.HandleFunc("GET /room/{code}/ws", s.handleRoomWS)
}

// closeRooms closes every room's followers (1001: they reconnect to the
// restarted server) and waits for their writers. The rooms stay open in
// the archive.
func (s *Server) closeRooms() {
	if s.rooms == nil {
		return
	}
	for _, r := range s.rooms.reg.All() {
		r.Hub.Close(classroom.CloseGoingAway, "server shutting down", nil)
	}
}

// sweepRooms closes the rooms whose time ran out. Close stops it.
func (s *Server) sweepRooms() {
	defer s.wg.Done()
	t := time.NewTicker(sweepEvery)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case now := <-t.C:
			for _, r := range s.rooms.reg.Expired(now) {
				s.endRoom(r)
			}
		}
	}
}

// endRoom tells r's followers the room is over and closes them, in the
// background (a slow follower may take its write deadline).
func (s *Server) endRoom(r *classroom.Room) {
	s.rooms.reg.Remove(r)
	end := func() { r.Hub.Close(classroom.CloseNormal, "room closed", []byte(`{"type":"closed"}`)) }
	if !s.spawn(end) {
		end()
	}
}

// roomState is the room object of the wire contract.
type roomState struct {
	Code      string               `json:"code"`
	ID        int64                `json:"id"`
	Lesson    string               `json:"lesson"`
	Section   int                  `json:"section"`
	Sections  int                  `json:"sections"`
	AllowRuns bool                 `json:"allow_runs"`
	Followers int                  `json:"followers"`
	Polls     []classroom.PollView `json:"polls"`
	ExpiresAt time.Time            `json:"expires_at"`
	Closed    bool                 `json:"closed,omitempty"`
}

// stateOf is r's state. REQUIRES: r locked.
func stateOf(r *classroom.Room) roomState {
	st := roomState{Code: classroom.FormatCode(r.Code), ID: r.ID, Lesson: r.Lesson, Section: r.Section, Sections: r.Sections,
		AllowRuns: r.AllowRuns, Followers: r.Hub.Count(), Polls: []classroom.PollView{}, ExpiresAt: r.Expires, Closed: r.Closed}
	for _, p := range r.Polls {
		st.Polls = append(st.Polls, p.View())
	}
	return st
}

// lockedStateOf is r's state, read under r's lock.
func lockedStateOf(r *classroom.Room) roomState {
	r.Lock()
	defer r.Unlock()
	return stateOf(r)
}

type roomMsg struct {
	Type string `json:"type"` // "room"
	roomState
}

type pollMsg struct {
	Type string             `json:"type"` // "poll"
	Poll classroom.PollView `json:"poll"`
}

// broadcast encodes v once and queues it for every follower of r.
func (s *Server) broadcast(r *classroom.Room, v any) { s.broadcastBytes(r, web.MustMarshal(v)) }

// broadcastBytes queues the encoded message b for every follower of r.
func (s *Server) broadcastBytes(r *classroom.Room, b []byte) {
	if hook := s.rooms.sentHook; hook != nil {
		hook(b)
	}
	r.Hub.Broadcast(b)
}

// followerRoom is lookupRoom for a route anyone with the code may use:
// it first refuses another origin and, without a token, a Host that is
// not this machine (apiAccessOK).
func (s *Server) followerRoom(w http.ResponseWriter, r *http.Request) *classroom.Room {
	if !s.apiAccessOK(w, r) {
		return nil
	}
	return s.lookupRoom(w, r)
}

func (s *Server) noRoom(code string) string {
	ttl := strings.TrimSuffix(strings.TrimSuffix(s.rooms.ttl.String(), "0s"), "0m")
	return fmt.Sprintf("no open room with code %s (rooms expire %s after the presenter's last action)", classroom.FormatCode(strings.ToUpper(code)), ttl)
}

// lookupRoom finds the open room the path's {code} names, or writes 404
// (no such room) or 429 (this address tried too many unknown codes).
func (s *Server) lookupRoom(w http.ResponseWriter, r *http.Request) *classroom.Room {
	room, status, msg := s.findRoom(r)
	if room == nil {
		web.JSONError(w, status, msg)
	}
	return room
}

// findRoom is lookupRoom for any kind of reply: the open room the path's
// {code} names, or the HTTP status and message to refuse with.
func (s *Server) findRoom(r *http.Request) (*classroom.Room, int, string) {
	raw := r.PathValue("code")
	addr, now := guard.RemoteHost(r), time.Now()
	if s.rooms.lookups.Over(addr, now) {
		s.guard.Refused(addr, "room lookups: too many unknown codes")
		return nil, http.StatusTooManyRequests, fmt.Sprintf("%s asked for more than %d unknown room codes in a minute (-max-unknown-codes): wait a minute, and check the code", addr, s.cfg.MaxUnknownCodes)
	}
	var room *classroom.Room
	code, err := classroom.ParseCode(raw)
	if err == nil {
		room = s.rooms.reg.Get(code, now)
	}
	if room == nil {
		if err == nil { // a well-formed code that names no open room: a guess
			s.rooms.lookups.Allow(addr, now)
		}
		if len(raw) > 2*classroom.CodeLen {
			raw = raw[:2*classroom.CodeLen]
		}
		return nil, http.StatusNotFound, s.noRoom(raw)
	}
	return room, 0, ""
}

// touch extends r's life from now and stores its state. REQUIRES: r locked.
func (s *Server) touch(ctx context.Context, r *classroom.Room) {
	r.Expires = time.Now().Add(s.rooms.ttl).UTC()
	s.saveRoom(ctx, r)
}

// saveRoom stores r's state. REQUIRES: r locked.
func (s *Server) saveRoom(ctx context.Context, r *classroom.Room) {
	ar := &archive.Room{ID: r.ID, Section: r.Section, AllowRuns: r.AllowRuns, Expires: r.Expires}
	if r.Closed {
		ar.Closed = time.Now()
	}
	if err := s.arch.UpdateRoom(ctx, ar); err != nil {
		s.log.Printf("room %s: %v", classroom.FormatCode(r.Code), err)
	}
}

type roomCreateRequest struct {
	Token     string `json:"token,omitempty"`     // accepted, and not an authority: see package guard
	Presenter string `json:"presenter,omitempty"` // the presenter token, from another machine
	Lesson    string `json:"lesson"`
}

type roomCreateReply struct {
	Code         string `json:"code"`
	ID           int64  `json:"id"`
	Lesson       string `json:"lesson"`
	JoinURL      string `json:"join_url"`
	PresenterURL string `json:"presenter_url"`
	// PresenterSecret presents this room (guard.PresenterError). This reply is
	// the only place it is ever given.
	PresenterSecret string    `json:"presenter_secret"`
	ExpiresAt       time.Time `json:"expires_at"`
}

func (s *Server) handleRoomCreate(w http.ResponseWriter, r *http.Request) {
	var req roomCreateRequest
	if !web.DecodeBody(w, r, roomBodyLimit, &req, `{"lesson":"04-the-fsync-tax"}`) {
		return
	}
	if code, why := s.guard.InstructorError(r, req.Presenter); why != "" {
		web.JSONError(w, code, why)
		return
	}
	l, _, _, err := s.findLesson(req.Lesson)
	if err != nil {
		web.JSONError(w, http.StatusInternalServerError, err.Error())
		return
	}
	if l == nil {
		web.JSONError(w, http.StatusNotFound, fmt.Sprintf("lesson: no lesson %q (the slug as in /lessons/SLUG)", req.Lesson))
		return
	}
	secret := classroom.NewSecret()
	room, err := s.newRoom(r.Context(), l, classroom.HashSecret(secret))
	if err != nil {
		web.JSONError(w, http.StatusInternalServerError, "starting the room: "+err.Error())
		return
	}
	code := classroom.FormatCode(room.Code)
	web.WriteJSON(w, http.StatusCreated, roomCreateReply{Code: code, ID: room.ID, Lesson: l.Slug,
		JoinURL: joinURL(r, room.Code), PresenterURL: "/present/" + code, PresenterSecret: secret, ExpiresAt: room.Expires})
}

// joinURL is the follower page's URL as the presenter's request names
// this server.
func joinURL(r *http.Request, code string) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host + "/room/" + classroom.FormatCode(code)
}

// newRoom draws a free code, records the room and registers it.
func (s *Server) newRoom(ctx context.Context, l *lesson.Lesson, presenterHash string) (*classroom.Room, error) {
	now := time.Now().UTC()
	for range 8 {
		code, err := classroom.NewCode()
		if err != nil {
			return nil, err
		}
		ar := &archive.Room{Code: code, Lesson: l.Slug, Created: now, Expires: now.Add(s.rooms.ttl), PresenterHash: presenterHash}
		if _, err := s.arch.AddRoom(ctx, ar); err != nil {
			return nil, err
		}
		room := s.registerRoom(ar, classroom.Sections(l.Body))
		if room != nil {
			return room, nil
		}
	}
	return nil, errors.New("could not draw a free room code")
}

// registerRoom makes a live room of an archived one; nil when its code is
// taken by another live room.
func (s *Server) registerRoom(ar *archive.Room, sections int) *classroom.Room {
	var room *classroom.Room
	room = classroom.NewRoom(ar.Code, ar.ID, ar.Lesson, sections, ar.Created, ar.Expires, s.rooms.hubLim,
		func(int) { s.followersChanged(room) })
	room.Section, room.AllowRuns = min(ar.Section, sections-1), ar.AllowRuns
	room.PresenterHash = ar.PresenterHash
	if !s.rooms.reg.Add(room) {
		return nil
	}
	return room
}

// followersChanged sends the room's state when its follower count
// changed, at most once a second.
func (s *Server) followersChanged(r *classroom.Room) {
	r.Lock()
	now, pending := r.Counts.Now(time.Now(), countUpdateEvery)
	r.Unlock()
	switch {
	case now:
		s.sendState(r)
	case !pending:
		s.later(countUpdateEvery, func() {
			r.Lock()
			r.Counts.Flushed(time.Now())
			r.Unlock()
			s.sendState(r)
		})
	}
}

// later runs fn after d on a goroutine Close waits for; Close cancels
// the wait and fn does not run.
func (s *Server) later(d time.Duration, fn func()) {
	s.spawn(func() {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			fn()
		case <-s.ctx.Done():
		}
	})
}

// spawn runs fn on a goroutine Close waits for, unless the server is
// closing; it reports whether fn was started.
func (s *Server) spawn(fn func()) bool {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return false
	}
	s.wg.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.wg.Done()
		fn()
	}()
	return true
}

// sendState sends every follower of r its state.
func (s *Server) sendState(r *classroom.Room) {
	s.broadcast(r, roomMsg{Type: "room", roomState: lockedStateOf(r)})
}

// changeRoom applies change to r under r's lock, then sends every
// follower r's new state and returns it.
func (s *Server) changeRoom(r *classroom.Room, change func()) roomState {
	r.Lock()
	change()
	st := stateOf(r)
	r.Unlock()
	s.broadcast(r, roomMsg{Type: "room", roomState: st})
	return st
}

func (s *Server) handleRoomState(w http.ResponseWriter, r *http.Request) {
	room := s.followerRoom(w, r)
	if room == nil {
		return
	}
	web.WriteJSON(w, http.StatusOK, lockedStateOf(room))
}

// presenterAction decodes a presenter's request into v (which carries
// "presenter"), finds the room and checks the presenter; on failure it
// has written the reply and returns nil.
func (s *Server) presenterAction(w http.ResponseWriter, r *http.Request, v any, presenter *string, want string) *classroom.Room {
	if !web.DecodeBody(w, r, roomBodyLimit, v, want) {
		return nil
	}
	if !guard.SameOrigin(r) {
		web.JSONError(w, http.StatusForbidden, guard.OriginError(r))
		return nil
	}
	room := s.lookupRoom(w, r)
	if room == nil {
		return nil
	}
	if code, why := s.guard.PresenterError(guard.RemoteHost(r), room, "room "+classroom.FormatCode(room.Code), *presenter); why != "" {
		web.JSONError(w, code, why)
		return nil
	}
	return room
}

// presenterFields are the authority fields of every presenter action's
// body: "presenter" is the one that counts; "token" (the run token) is
// accepted for older pages and presents nothing.
type presenterFields struct {
	Token     string `json:"token,omitempty"`
	Presenter string `json:"presenter"`
}

type sectionRequest struct {
	presenterFields
	Section *int `json:"section"`
}

type sectionMsg struct {
	Type    string `json:"type"` // "section"
	Section int    `json:"section"`
}

func (s *Server) handleRoomSection(w http.ResponseWriter, r *http.Request) {
	var req sectionRequest
	room := s.presenterAction(w, r, &req, &req.Presenter, `{"presenter":"...","section":3}`)
	if room == nil {
		return
	}
	room.Lock()
	if req.Section == nil || *req.Section < 0 || *req.Section >= room.Sections {
		n := room.Sections
		room.Unlock()
		web.JSONError(w, http.StatusBadRequest, fmt.Sprintf("section: must be between 0 and %d (lesson %s has %d sections)", n-1, room.Lesson, n))
		return
	}
	room.Section = *req.Section
	s.touch(r.Context(), room)
	st := stateOf(room)
	room.Unlock()
	s.broadcast(room, sectionMsg{Type: "section", Section: st.Section})
	s.broadcast(room, roomMsg{Type: "room", roomState: st})
	web.WriteJSON(w, http.StatusOK, st)
}

type allowRunsRequest struct {
	presenterFields
	Allow *bool `json:"allow"`
}

func (s *Server) handleRoomAllowRuns(w http.ResponseWriter, r *http.Request) {
	var req allowRunsRequest
	room := s.presenterAction(w, r, &req, &req.Presenter, `{"presenter":"...","allow":true}`)
	if room == nil {
		return
	}
	if req.Allow == nil {
		web.JSONError(w, http.StatusBadRequest, `allow: required, true or false`)
		return
	}
	st := s.changeRoom(room, func() {
		room.AllowRuns = *req.Allow
		s.touch(r.Context(), room)
	})
	web.WriteJSON(w, http.StatusOK, st)
}

type tokenRequest struct {
	presenterFields
}

func (s *Server) handleRoomClose(w http.ResponseWriter, r *http.Request) {
	var req tokenRequest
	room := s.presenterAction(w, r, &req, &req.Presenter, `{"presenter":"..."}`)
	if room == nil {
		return
	}
	st := s.changeRoom(room, func() {
		room.Closed = true
		s.saveRoom(r.Context(), room)
	})
	s.endRoom(room)
	web.WriteJSON(w, http.StatusOK, st)
}

type pollRequest struct {
	presenterFields
	Quiz string `json:"quiz"`
}

// pollQuiz finds a quiz of the room's lesson that a poll can measure:
// numeric, with a cell: to run.
func (s *Server) pollQuiz(room *classroom.Room, id string) (*quiz.Quiz, int, error) {
	l, _, _, err := s.findLesson(room.Lesson)
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

func (s *Server) handlePollOpen(w http.ResponseWriter, r *http.Request) {
	var req pollRequest
	room := s.presenterAction(w, r, &req, &req.Presenter, `{"presenter":"...","quiz":"always-vs-batch"}`)
	if room == nil {
		return
	}
	q, code, err := s.pollQuiz(room, req.Quiz)
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
	if _, err := s.arch.AddPoll(r.Context(), ap); err != nil {
		room.Unlock()
		web.JSONError(w, http.StatusInternalServerError, "storing the poll: "+err.Error())
		return
	}
	p.ArchID = ap.ID
	room.Polls = append(room.Polls, p)
	s.touch(r.Context(), room)
	v := p.View()
	room.Unlock()
	s.broadcast(room, pollMsg{Type: "poll", Poll: v})
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

func (s *Server) handlePollPredict(w http.ResponseWriter, r *http.Request) {
	if !s.apiAccessOK(w, r) {
		return
	}
	if !s.writeAllowed(w, r, "room ballot") {
		return
	}
	var req predictRoomRequest
	if !web.DecodeBody(w, r, s.cfg.Writes.MaxBytes, &req, `{"browser":"...","value":"12.5"}`) {
		return
	}
	room := s.lookupRoom(w, r)
	if room == nil {
		return
	}
	if err := runq.CheckOrigin("", "", req.Browser); err != nil || req.Browser == "" {
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
	v, code, err := s.checkBallot(p, guard.RemoteHost(r), req)
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
	err = s.arch.PutRoomPrediction(r.Context(), &archive.RoomPrediction{Poll: p.ArchID, Browser: req.Browser, Value: v, At: time.Now().UTC()})
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
	s.pollChanged(room, p, view, send, pending)
	web.WriteJSON(w, http.StatusOK, predictRoomReply{Poll: view, Yours: v})
}

// checkBallot checks one prediction for an open poll and counts it
// against the poll's caps. REQUIRES: the poll's room locked.
func (s *Server) checkBallot(p *classroom.Poll, addr string, req predictRoomRequest) (float64, int, error) {
	if p.State != classroom.PollOpen {
		return 0, http.StatusConflict, fmt.Errorf("poll %s: the measurement started at %s; predictions are closed", p.Quiz, p.MeasureStarted.Format("15:04:05"))
	}
	val := strings.TrimSpace(req.Value)
	if val == "" || len(val) > maxPrediction {
		return 0, http.StatusBadRequest, fmt.Errorf("value: the prediction must be 1 to %d characters", maxPrediction)
	}
	v, err := quiz.ParseNumber(val, p.Unit)
	if err == nil {
		err = classroom.CheckPrediction(v)
	}
	if err != nil {
		return 0, http.StatusBadRequest, errors.New(strings.TrimPrefix(err.Error(), quiz.ErrBadAnswer.Error()+": "))
	}
	if err := p.Admit(addr, req.Browser, s.cfg.Writes.BallotsPerAddress, s.cfg.Writes.PerBrowser); err != nil {
		return 0, http.StatusTooManyRequests, fmt.Errorf("%s (-max-ballots-per-address, -max-predictions-per-browser)", strings.TrimPrefix(err.Error(), "classroom: too many ballots: "))
	}
	return v, 0, nil
}

// pollChanged sends a prediction-driven update now, or schedules one
// flush pollUpdateEvery later when none is pending.
func (s *Server) pollChanged(room *classroom.Room, p *classroom.Poll, view classroom.PollView, send, pending bool) {
	switch {
	case send:
		s.broadcast(room, pollMsg{Type: "poll", Poll: view})
	case !pending:
		s.later(pollUpdateEvery, func() {
			room.Lock()
			p.Updates.Flushed(time.Now())
			v := p.View()
			room.Unlock()
			s.broadcast(room, pollMsg{Type: "poll", Poll: v})
		})
	}
}

func (s *Server) handleRoomQR(w http.ResponseWriter, r *http.Request) {
	room := s.followerRoom(w, r)
	if room == nil {
		return
	}
	svg, err := classroom.QRSVG(joinURL(r, room.Code))
	if err != nil {
		web.JSONError(w, http.StatusInternalServerError, err.Error())
		return
	}
	w.Header().Set("Content-Type", "image/svg+xml")
	w.Header().Set("Cache-Control", "no-cache")
	w.Write(svg)
}

// reloadRooms registers the rooms the archive holds open, with their
// polls and predictions, so a restart mid-class loses nothing.
func (s *Server) reloadRooms() error {
	ctx := context.Background()
	open, err := s.arch.OpenRooms(ctx, time.Now())
	if err != nil {
		return err
	}
	for i := range open {
		ar := &open[i]
		l, _, _, err := s.findLesson(ar.Lesson)
		if err != nil || l == nil {
			s.log.Printf("room %s: lesson %s is not served; the room is not reopened", classroom.FormatCode(ar.Code), ar.Lesson)
			continue
		}
		room := s.registerRoom(ar, classroom.Sections(l.Body))
		if room == nil {
			continue
		}
		if err := s.reloadPolls(ctx, room, l); err != nil {
			return err
		}
		if err := s.reloadBoard(ctx, room); err != nil {
			return err
		}
	}
	return nil
}

func (s *Server) reloadPolls(ctx context.Context, room *classroom.Room, l *lesson.Lesson) error {
	polls, err := s.arch.RoomPolls(ctx, room.ID)
	if err != nil {
		return err
	}
	room.Lock()
	defer room.Unlock()
	for _, ap := range polls {
		room.Polls = append(room.Polls, restorePoll(ap, l.Quiz(ap.Quiz)))
	}
	return nil
}

// restorePoll makes a poll of an archived one, its predictions included.
// q gives the question and unit; nil (the lesson no longer has the quiz)
// leaves them empty.
func restorePoll(ap archive.Poll, q *quiz.Quiz) *classroom.Poll {
	question, unit := "", ""
	if q != nil {
		question, unit = q.Question, q.Unit
	}
	p := classroom.NewPoll(ap.Key, ap.Quiz, question, unit, ap.Opened)
	p.ArchID = ap.ID
	if !ap.MeasureStarted.IsZero() {
		p.StartMeasuring(ap.MeasureStarted)
	}
	if ap.Measured != nil {
		p.Finish(*ap.Measured, ap.RunID)
	}
	for _, pr := range ap.Predictions {
		p.Restore(pr.Browser, pr.Value)
	}
	return p
}

func (s *Server) reloadBoard(ctx context.Context, room *classroom.Room) error {
	es, err := s.arch.BoardEntries(ctx, room.ID)
	if err != nil {
		return err
	}
	room.Lock()
	defer room.Unlock()
	for _, e := range es {
		room.BoardEntries++
		room.BoardByAddr[e.AddrHash]++
	}
	return nil
}

// quizAnswer evaluates q's answer on a run's results, as POST /api/quiz
// does.
func quizAnswer(q *quiz.Quiz, results []json.RawMessage) (float64, error) {
	vals := make([]any, len(results))
	for i, m := range results {
		if err := json.NewDecoder(bytes.NewReader(m)).Decode(&vals[i]); err != nil {
			return 0, fmt.Errorf("result %d: %v", i, err)
		}
	}
	if need := q.Lines(); len(vals) < need {
		return 0, fmt.Errorf("quiz %s needs %d results, the run gave %d", q.ID, need, len(vals))
	}
	v, err := q.Answer.Eval(vals)
	if err != nil {
		return 0, err
	}
	if v.IsStr {
		return 0, fmt.Errorf("quiz %s: the answer is the string %q, want a number", q.ID, v.Str)
	}
	return v.Num, nil
}
