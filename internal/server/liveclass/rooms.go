package liveclass

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"kvlab/internal/archive"
	"kvlab/internal/classroom"
	"kvlab/internal/lesson"
	"kvlab/internal/server/guard"
	"kvlab/internal/server/run"
	"kvlab/internal/server/web"
)

// The registry: the live rooms by code, their lookups (which count an
// address's unknown codes), their state as the wire has it, and its
// fan-out to the followers. The HTTP API is api.go's.

const (
	// DefaultTTL is how long a room stays open after its presenter's
	// last action when Config.TTL is 0 (-room-ttl's default).
	DefaultTTL = 4 * time.Hour
	// DefaultMaxUnknownCodes is -max-unknown-codes' default.
	DefaultMaxUnknownCodes = 30
	// MaxPredictionLen caps a prediction's text: a ballot's, and a quiz
	// prediction's (the server's POST /api/predict).
	MaxPredictionLen = 128
	roomBodyLimit    = 4 << 10
	pollUpdateEvery  = 250 * time.Millisecond
	countUpdateEvery = time.Second
	sweepEvery       = 30 * time.Second
)

// Config is what the rooms take from the server that serves them: its
// archive, its guard, its lessons, its runner (for a follower's own
// runs), its lifetime and its caps. Every field but the zero-defaulted
// caps must be set.
type Config struct {
	Archive archive.Archive
	Guard   *guard.Guard
	// Lesson finds a lesson by its slug; nil and no error when the
	// server has no such lesson.
	Lesson func(slug string) (*lesson.Lesson, error)
	// Runs owns a follower's own runs (followers.go).
	Runs *run.Service
	// WriteRate counts a student's write (a ballot, a share) against the
	// server's write rates (writeAllowed refuses it past them).
	WriteRate *guard.WriteRate
	// Log takes a line about a room that could not be stored, reopened
	// or graded.
	Log *log.Logger
	// Upgrader upgrades a follower's socket; PongWait is how long a
	// socket may stay silent before it is dropped (pings every half).
	Upgrader *websocket.Upgrader
	PongWait time.Duration
	// TTL is how long a room stays open after its presenter's last
	// action; 0 = DefaultTTL.
	TTL time.Duration
	// MaxUnknownCodes caps the unknown codes one address may look up in
	// a minute; 0 = DefaultMaxUnknownCodes.
	MaxUnknownCodes int
	// HasPresenterToken is set when the server has a presenter token: the
	// past classes then open from elsewhere with it (classes.go).
	HasPresenterToken bool
	Writes            Limits
}

// Limits bound what students write to a room: the server's write limits
// that concern it.
type Limits struct {
	PerBrowser           int   // ballot changes one browser may make in one poll
	BallotsPerAddress    int   // browsers from one address that may vote in one poll
	SharesPerAddressRoom int   // results one address may share with one room
	MaxBytes             int64 // body cap of a ballot
	MaxShareBytes        int64 // body cap of a share
}

// roomHTTP is the rooms' HTTP face: the API, the share route, the
// follower socket and the pages (api.go, board.go, polls.go, pages.go,
// followers.go); Rooms itself is the registry they act on.
type roomHTTP struct{ *Rooms }

// Rooms is the server's live classes. It is safe for concurrent use.
type Rooms struct {
	cfg     Config
	reg     *classroom.Registry
	ttl     time.Duration
	hubLim  classroom.HubLimits
	lookups *guard.Limiter // unknown codes, per address
	// SentHook, when set (benchmarks), sees every message fanned out to
	// a room as the presenter's side sends it. Set before serving.
	SentHook func(b []byte)

	life lifetime // the rooms' own goroutines: Close ends it, Wait waits
}

// lifetime runs goroutines until it is closed, and waits for them. It is
// safe for concurrent use.
type lifetime struct {
	done   chan struct{} // closed by close
	mu     sync.Mutex    // guards closed, and wg's Add against Wait
	closed bool
	wg     sync.WaitGroup
}

// spawn runs fn on a goroutine wait waits for, unless the lifetime is
// closed; it reports whether fn was started.
func (l *lifetime) spawn(fn func()) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false
	}
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		fn()
	}()
	return true
}

// close ends the lifetime: done is closed and spawn starts nothing more.
func (l *lifetime) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.closed {
		l.closed = true
		close(l.done)
	}
}

// New sets up the rooms, reloads the open ones from the archive (with
// their polls, predictions and board counts, so a restart mid-class
// loses nothing) and starts the sweeper that closes expired rooms.
func New(cfg Config) (*Rooms, error) {
	if cfg.TTL <= 0 {
		cfg.TTL = DefaultTTL
	}
	if cfg.MaxUnknownCodes <= 0 {
		cfg.MaxUnknownCodes = DefaultMaxUnknownCodes
	}
	rs := &Rooms{cfg: cfg, reg: classroom.NewRegistry(), ttl: cfg.TTL, hubLim: classroom.HubLimits{PingEvery: cfg.PongWait / 2},
		lookups: guard.NewLimiter(cfg.MaxUnknownCodes, time.Minute), life: lifetime{done: make(chan struct{})}}
	if err := rs.reloadRooms(); err != nil {
		return nil, err
	}
	rs.life.spawn(rs.sweepRooms)
	return rs, nil
}

// Route registers the room's routes: its API, its share route, its
// follower socket, its pages and the past classes.
func (rooms *Rooms) Route(mux *http.ServeMux) {
	rs := roomHTTP{rooms}
	mux.HandleFunc("POST /api/rooms", rs.handleRoomCreate)
	mux.HandleFunc("GET /api/rooms/{code}", rs.handleRoomState)
	mux.HandleFunc("POST /api/rooms/{code}/section", rs.handleRoomSection)
	mux.HandleFunc("POST /api/rooms/{code}/allow-runs", rs.handleRoomAllowRuns)
	mux.HandleFunc("POST /api/rooms/{code}/close", rs.handleRoomClose)
	mux.HandleFunc("POST /api/rooms/{code}/polls", rs.handlePollOpen)
	mux.HandleFunc("POST /api/rooms/{code}/polls/{poll}/predict", rs.handlePollPredict)
	mux.HandleFunc("GET /api/rooms/{code}/board", rs.handleBoard)
	mux.HandleFunc("DELETE /api/rooms/{code}/board/{id}", rs.handleBoardDelete)
	mux.HandleFunc("POST /api/rooms/{code}/share", rs.handleShare)
	mux.HandleFunc("OPTIONS /api/rooms/{code}/share", rs.handleSharePreflight)
	mux.HandleFunc("GET /room/{code}/qr.svg", rs.handleRoomQR)
	mux.HandleFunc("GET /room/{code}/ws", rs.handleRoomWS)
	rs.routePages(mux)
}

// Close closes every room's followers (1001: they reconnect to the
// restarted server); their writers end on their own. The rooms stay open
// in the archive. The rooms start no goroutine after it, and the ones
// waiting for a time end (Wait).
func (rs *Rooms) Close() {
	rs.life.close()
	for _, r := range rs.reg.All() {
		r.Hub.Close(classroom.CloseGoingAway, "server shutting down", nil)
	}
}

// Wait waits for the rooms' goroutines (the sweeper, a room's end, a
// poll's measurement) after Close. A poll's measurement waits for its
// run: call Wait once the runner is closed too.
func (rs *Rooms) Wait() { rs.life.wg.Wait() }

// Open is the open room a code names (in any spelling), or nil. It is
// not a lookup a client made: it does not count against an address.
func (rs *Rooms) Open(code string) *classroom.Room {
	c, err := classroom.ParseCode(code)
	if err != nil {
		return nil
	}
	return rs.reg.Get(c, time.Now())
}

// sweep ends the rooms whose time ran out by now: their followers hear
// "closed". The sweeper does it every sweepEvery.
func (rs *Rooms) sweep(now time.Time) {
	for _, r := range rs.reg.Expired(now) {
		rs.endRoom(r)
	}
}

// sweepRooms sweeps until the server closes.
func (rs *Rooms) sweepRooms() {
	t := time.NewTicker(sweepEvery)
	defer t.Stop()
	for {
		select {
		case <-rs.life.done:
			return
		case now := <-t.C:
			rs.sweep(now)
		}
	}
}

// endRoom tells r's followers the room is over and closes them, in the
// background (a slow follower may take its write deadline).
func (rs *Rooms) endRoom(r *classroom.Room) {
	rs.reg.Remove(r)
	end := func() { r.Hub.Close(classroom.CloseNormal, "room closed", []byte(`{"type":"closed"}`)) }
	if !rs.life.spawn(end) {
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
func (rs *Rooms) broadcast(r *classroom.Room, v any) { rs.broadcastBytes(r, web.MustMarshal(v)) }

// broadcastBytes queues the encoded message b for every follower of r.
func (rs *Rooms) broadcastBytes(r *classroom.Room, b []byte) {
	if hook := rs.SentHook; hook != nil {
		hook(b)
	}
	r.Hub.Broadcast(b)
}

// followerRoom is lookupRoom for a route anyone with the code may use:
// it first refuses another origin and, without a token, a Host that is
// not this machine (guard.Guard.APIAccess).
func (rs roomHTTP) followerRoom(w http.ResponseWriter, r *http.Request) *classroom.Room {
	if !rs.accessOK(w, r) {
		return nil
	}
	return rs.lookupRoom(w, r)
}

// accessOK replies 403 to a request for a route anyone with a code may
// use that the guard refuses (another origin, or without a token a Host
// that is not this machine: guard.Guard.APIAccess); it reports whether r
// may go on.
func (rs roomHTTP) accessOK(w http.ResponseWriter, r *http.Request) bool {
	if err := rs.cfg.Guard.APIAccess(r); err != nil {
		web.JSONError(w, http.StatusForbidden, err.Error())
		return false
	}
	return true
}

// writeAllowed counts a student's write (what: "share", "room ballot")
// against the server's write rates (Config.WriteRate), or replies 429
// after the refusal's delay and reports false.
func (rs roomHTTP) writeAllowed(w http.ResponseWriter, r *http.Request, what string) bool {
	var refused *guard.WriteRefusedError
	if err := rs.cfg.WriteRate.Allow(r, what); errors.As(err, &refused) {
		web.TooManyRequests(w, r, rs.life.done, refused.Wait, refused.Msg)
		return false
	}
	return true
}

func (rs *Rooms) noRoom(code string) string {
	ttl := strings.TrimSuffix(strings.TrimSuffix(rs.ttl.String(), "0s"), "0m")
	return fmt.Sprintf("no open room with code %s (rooms expire %s after the presenter's last action)", classroom.FormatCode(strings.ToUpper(code)), ttl)
}

// lookupRoom finds the open room the path's {code} names, or writes 404
// (no such room) or 429 (this address tried too many unknown codes).
func (rs roomHTTP) lookupRoom(w http.ResponseWriter, r *http.Request) *classroom.Room {
	room, status, msg := rs.findRoom(r)
	if room == nil {
		web.JSONError(w, status, msg)
	}
	return room
}

// findRoom is lookupRoom for any kind of reply: the open room the path's
// {code} names, or the HTTP status and message to refuse with.
func (rs roomHTTP) findRoom(r *http.Request) (*classroom.Room, int, string) {
	raw := r.PathValue("code")
	addr, now := guard.RemoteHost(r), time.Now()
	if rs.lookups.Over(addr, now) {
		rs.cfg.Guard.Refused(addr, "room lookups: too many unknown codes")
		return nil, http.StatusTooManyRequests, fmt.Sprintf("%s asked for more than %d unknown room codes in a minute (-max-unknown-codes): wait a minute, and check the code", addr, rs.cfg.MaxUnknownCodes)
	}
	var room *classroom.Room
	code, err := classroom.ParseCode(raw)
	if err == nil {
		room = rs.reg.Get(code, now)
	}
	if room == nil {
		if err == nil { // a well-formed code that names no open room: a guess
			rs.lookups.Allow(addr, now)
		}
		if len(raw) > 2*classroom.CodeLen {
			raw = raw[:2*classroom.CodeLen]
		}
		return nil, http.StatusNotFound, rs.noRoom(raw)
	}
	return room, 0, ""
}

// touch extends r's life from now and stores its state. REQUIRES: r locked.
func (rs *Rooms) touch(ctx context.Context, r *classroom.Room) {
	r.Expires = time.Now().Add(rs.ttl).UTC()
	rs.saveRoom(ctx, r)
}

// saveRoom stores r's state. REQUIRES: r locked.
func (rs *Rooms) saveRoom(ctx context.Context, r *classroom.Room) {
	rs.storeRoom(ctx, r, roomRecord(r))
}

// roomRecord is r's state as the archive keeps it. REQUIRES: r locked.
func roomRecord(r *classroom.Room) *archive.Room {
	ar := &archive.Room{ID: r.ID, Section: r.Section, AllowRuns: r.AllowRuns, Expires: r.Expires}
	if r.Closed {
		ar.Closed = time.Now()
	}
	return ar
}

// sameRecord reports whether a and b store the same state (a closed
// room's time of closing aside).
func sameRecord(a, b *archive.Room) bool {
	return a.Section == b.Section && a.AllowRuns == b.AllowRuns && a.Expires.Equal(b.Expires) && a.Closed.IsZero() == b.Closed.IsZero()
}

// storeRoom stores ar, r's state as roomRecord took it.
func (rs *Rooms) storeRoom(ctx context.Context, r *classroom.Room, ar *archive.Room) {
	if err := rs.cfg.Archive.UpdateRoom(ctx, ar); err != nil {
		rs.cfg.Log.Printf("room %s: %v", classroom.FormatCode(r.Code), err)
	}
}

// touchUnlocked extends r's life from now and stores its state without
// holding r's lock while the archive's write waits for its group commit
// (a presenter's run: the socket reader's path, and every ballot and
// follower message of the room takes the lock). A presenter action that
// changed r meanwhile stored its state under the lock, perhaps before
// this write: then r's state is stored again. REQUIRES: r not locked.
func (rs *Rooms) touchUnlocked(ctx context.Context, r *classroom.Room) {
	r.Lock()
	r.Expires = time.Now().Add(rs.ttl).UTC()
	ar := roomRecord(r)
	r.Unlock()
	rs.storeRoom(ctx, r, ar)
	r.Lock()
	if now := roomRecord(r); !sameRecord(now, ar) {
		rs.storeRoom(ctx, r, now)
	}
	r.Unlock()
}

// newRoom draws a free code, records the room and registers it.
func (rs *Rooms) newRoom(ctx context.Context, l *lesson.Lesson, presenterHash string) (*classroom.Room, error) {
	now := time.Now().UTC()
	for range 8 {
		code, err := classroom.NewCode()
		if err != nil {
			return nil, err
		}
		ar := &archive.Room{Code: code, Lesson: l.Slug, Created: now, Expires: now.Add(rs.ttl), PresenterHash: presenterHash}
		if _, err := rs.cfg.Archive.AddRoom(ctx, ar); err != nil {
			return nil, err
		}
		room := rs.registerRoom(ar, classroom.Sections(l.Body))
		if room != nil {
			return room, nil
		}
	}
	return nil, errors.New("could not draw a free room code")
}

// registerRoom makes a live room of an archived one; nil when its code is
// taken by another live room.
func (rs *Rooms) registerRoom(ar *archive.Room, sections int) *classroom.Room {
	var room *classroom.Room
	room = classroom.NewRoom(ar.Code, ar.ID, ar.Lesson, sections, ar.Created, ar.Expires, rs.hubLim,
		func(int) { rs.followersChanged(room) })
	room.Section, room.AllowRuns = min(ar.Section, sections-1), ar.AllowRuns
	room.PresenterHash = ar.PresenterHash
	if !rs.reg.Add(room) {
		return nil
	}
	return room
}

// followersChanged sends the room's state when its follower count
// changed, at most once a second.
func (rs *Rooms) followersChanged(r *classroom.Room) {
	r.Lock()
	now, pending := r.Counts.Now(time.Now(), countUpdateEvery)
	r.Unlock()
	switch {
	case now:
		rs.sendState(r)
	case !pending:
		rs.later(countUpdateEvery, func() {
			r.Lock()
			r.Counts.Flushed(time.Now())
			r.Unlock()
			rs.sendState(r)
		})
	}
}

// later runs fn after d on a goroutine Wait waits for; Close cancels
// the wait and fn does not run.
func (rs *Rooms) later(d time.Duration, fn func()) {
	rs.life.spawn(func() {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			fn()
		case <-rs.life.done:
		}
	})
}

// sendState sends every follower of r its state.
func (rs *Rooms) sendState(r *classroom.Room) {
	rs.broadcast(r, roomMsg{Type: "room", roomState: lockedStateOf(r)})
}

// changeRoom applies change to r under r's lock, then sends every
// follower r's new state and returns it.
func (rs *Rooms) changeRoom(r *classroom.Room, change func()) roomState {
	r.Lock()
	change()
	st := stateOf(r)
	r.Unlock()
	rs.broadcast(r, roomMsg{Type: "room", roomState: st})
	return st
}
