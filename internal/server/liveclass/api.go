package liveclass

import (
	"fmt"
	"net/http"
	"time"

	"kvlab/internal/classroom"
	"kvlab/internal/server/guard"
	"kvlab/internal/server/web"
)

// The room's HTTP API, under /api/rooms (docs/api.md has the wire
// contract; followers.go has the follower socket, presenter.go the
// presenter's runs, board.go the class board and its cross-origin share
// route):
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
//	POST /api/rooms/{code}/share                  the one cross-origin route (board.go)
//	GET  /room/{code}/qr.svg                      the join URL as a QR code
//	GET  /room/{code}/ws                          the follower socket (followers.go)
//
// Every lookup of a well-formed code that names no open room counts
// against the asking address (-max-unknown-codes a minute): past that,
// the address is refused every lookup for the rest of the minute, so
// codes cannot be scanned. Text that is not a code at all (a typo, a
// stray path) does not count: it cannot find a room.

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

func (rs roomHTTP) handleRoomCreate(w http.ResponseWriter, r *http.Request) {
	var req roomCreateRequest
	if !web.DecodeBody(w, r, roomBodyLimit, &req, `{"lesson":"04-the-fsync-tax"}`) {
		return
	}
	if code, why := rs.cfg.Guard.InstructorError(r, req.Presenter); why != "" {
		web.JSONError(w, code, why)
		return
	}
	l, err := rs.cfg.Lesson(req.Lesson)
	if err != nil {
		web.JSONError(w, http.StatusInternalServerError, err.Error())
		return
	}
	if l == nil {
		web.JSONError(w, http.StatusNotFound, fmt.Sprintf("lesson: no lesson %q (the slug as in /lessons/SLUG)", req.Lesson))
		return
	}
	secret := classroom.NewSecret()
	room, err := rs.newRoom(r.Context(), l, classroom.HashSecret(secret))
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

func (rs roomHTTP) handleRoomState(w http.ResponseWriter, r *http.Request) {
	room := rs.followerRoom(w, r)
	if room == nil {
		return
	}
	web.WriteJSON(w, http.StatusOK, lockedStateOf(room))
}

// presenterAction decodes a presenter's request into v (which carries
// "presenter"), finds the room and checks the presenter; on failure it
// has written the reply and returns nil.
func (rs roomHTTP) presenterAction(w http.ResponseWriter, r *http.Request, v any, presenter *string, want string) *classroom.Room {
	if !web.DecodeBody(w, r, roomBodyLimit, v, want) {
		return nil
	}
	if !guard.SameOrigin(r) {
		web.JSONError(w, http.StatusForbidden, guard.OriginError(r))
		return nil
	}
	room := rs.lookupRoom(w, r)
	if room == nil {
		return nil
	}
	if code, why := rs.cfg.Guard.PresenterError(guard.RemoteHost(r), room, "room "+classroom.FormatCode(room.Code), *presenter); why != "" {
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

func (rs roomHTTP) handleRoomSection(w http.ResponseWriter, r *http.Request) {
	var req sectionRequest
	room := rs.presenterAction(w, r, &req, &req.Presenter, `{"presenter":"...","section":3}`)
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
	rs.touch(r.Context(), room)
	st := stateOf(room)
	room.Unlock()
	rs.broadcast(room, sectionMsg{Type: "section", Section: st.Section})
	rs.broadcast(room, roomMsg{Type: "room", roomState: st})
	web.WriteJSON(w, http.StatusOK, st)
}

type allowRunsRequest struct {
	presenterFields
	Allow *bool `json:"allow"`
}

func (rs roomHTTP) handleRoomAllowRuns(w http.ResponseWriter, r *http.Request) {
	var req allowRunsRequest
	room := rs.presenterAction(w, r, &req, &req.Presenter, `{"presenter":"...","allow":true}`)
	if room == nil {
		return
	}
	if req.Allow == nil {
		web.JSONError(w, http.StatusBadRequest, `allow: required, true or false`)
		return
	}
	st := rs.changeRoom(room, func() {
		room.AllowRuns = *req.Allow
		rs.touch(r.Context(), room)
	})
	web.WriteJSON(w, http.StatusOK, st)
}

// tokenRequest is the body of a presenter's action that carries nothing
// but the presenter token: closing the room, removing a board entry.
type tokenRequest struct {
	presenterFields
}

func (rs roomHTTP) handleRoomClose(w http.ResponseWriter, r *http.Request) {
	var req tokenRequest
	room := rs.presenterAction(w, r, &req, &req.Presenter, `{"presenter":"..."}`)
	if room == nil {
		return
	}
	st := rs.changeRoom(room, func() {
		room.Closed = true
		rs.saveRoom(r.Context(), room)
	})
	rs.endRoom(room)
	web.WriteJSON(w, http.StatusOK, st)
}

func (rs roomHTTP) handleRoomQR(w http.ResponseWriter, r *http.Request) {
	room := rs.followerRoom(w, r)
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
