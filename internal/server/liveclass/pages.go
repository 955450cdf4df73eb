package liveclass

import (
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"strings"

	"kvlab/internal/classroom"
	"kvlab/internal/lesson"
	"kvlab/internal/server/guard"
	"kvlab/internal/server/web"
)

// The room's pages (the API they call is in api.go; the wire
// contract is docs/api.md's "Rooms"):
//
//	GET /join               a form: the room code, then /room/CODE
//	GET /room/CODE          a follower: the lesson, following the presenter's section
//	GET /present/CODE       the presenter's projector view
//	GET /room/CODE/board    the class board of shared results
//
// The pages hold no secret: the presenter's page sends the instructor
// token (kept in the browser, asked for once) with every action it
// takes, and the server checks it there. A code is accepted in any case,
// with or without its dash; the page redirects to the code's canonical
// spelling, XXXXX-XXXXX.

func (rs roomHTTP) routePages(mux *http.ServeMux) {
	mux.HandleFunc("GET /join", rs.handleJoin)
	mux.HandleFunc("GET /room/{code}", rs.roomPage("room.html", "/room/%s"))
	mux.HandleFunc("GET /present/{code}", rs.roomPage("present.html", "/present/%s"))
	mux.HandleFunc("GET /room/{code}/board", rs.roomPage("board.html", "/room/%s/board"))
	pastClasses{&rs.cfg}.routeClasses(mux)
}

// canonicalCode turns a code as typed (any case, with or without its
// dash) into its shown form, XXXXX-XXXXX, or says what is wrong with it.
func canonicalCode(typed string) (string, error) {
	c, err := classroom.ParseCode(typed)
	if err != nil {
		return "", err
	}
	return classroom.FormatCode(c), nil
}

type joinPage struct {
	Code, Error string
}

// handleJoin shows the join form, and sends a filled-in form on to the
// room's page.
func (rs roomHTTP) handleJoin(w http.ResponseWriter, r *http.Request) {
	typed := strings.TrimSpace(r.URL.Query().Get("code"))
	if typed == "" {
		web.RenderPage(w, http.StatusOK, "join.html", joinPage{})
		return
	}
	code, err := canonicalCode(typed)
	if err != nil {
		web.RenderPage(w, http.StatusBadRequest, "join.html", joinPage{Code: typed, Error: web.Public(err.Error())})
		return
	}
	http.Redirect(w, r, "/room/"+code, http.StatusSeeOther)
}

// roomView is what the follower, presenter and board templates show.
type roomView struct {
	Code      string // XXXXX-XXXXX
	ID        int64  // the room's archive id
	Lesson    *lesson.Lesson
	Body      template.HTML // the lesson's sections; empty on the board
	Sections  []roomSection
	NeedToken bool
	JoinURL   string
	// LocalOnly: JoinURL names this machine (localhost, 127.0.0.1), which
	// no student's device can reach; the join panel says what to do.
	LocalOnly bool
}

// roomPage serves one of the room's pages, at path (a format of the
// code), for the room named in the path: a redirect to the code's shown
// spelling, a 404 page for a code that names no open room, else the page.
func (rs roomHTTP) roomPage(tmpl, path string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		typed := r.PathValue("code")
		code, err := canonicalCode(typed)
		if err != nil {
			web.ErrorPage(w, http.StatusNotFound, "No such room", err.Error()+"\n\nAsk the presenter for the code on the projector, and enter it at /join.")
			return
		}
		if code != typed {
			to := fmt.Sprintf(path, code)
			if r.URL.RawQuery != "" {
				to += "?" + r.URL.RawQuery
			}
			http.Redirect(w, r, to, http.StatusMovedPermanently)
			return
		}
		v, status, err := rs.roomViewFor(r, code, tmpl != "board.html")
		if err != nil {
			web.ErrorPage(w, status, "No such room", err.Error())
			return
		}
		if tmpl == "room.html" {
			v.Body = forFollowers(v.Body)
		}
		web.RenderPage(w, http.StatusOK, tmpl, v)
	}
}

// roomViewFor finds the open room code and its lesson; withBody renders
// the lesson's sections too. On failure it returns the HTTP status and an
// error that says what is wrong.
func (rs roomHTTP) roomViewFor(r *http.Request, code string, withBody bool) (roomView, int, error) {
	rm, status, msg := rs.findRoom(r)
	if rm == nil {
		return roomView{}, status, errors.New(msg)
	}
	l, err := rs.cfg.Lesson(rm.Lesson)
	if err != nil {
		return roomView{}, http.StatusInternalServerError, err
	}
	if l == nil {
		return roomView{}, http.StatusNotFound, fmt.Errorf("room %s is on lesson %q, which this server no longer has", code, rm.Lesson)
	}
	v := roomView{Code: code, ID: rm.ID, Lesson: l, NeedToken: rs.cfg.Guard.NeedToken(), JoinURL: joinURL(r, code),
		LocalOnly: guard.LoopbackHost(guard.HostOf(r.Host))}
	if withBody {
		if v.Body, v.Sections, err = renderSections(l); err != nil {
			return roomView{}, http.StatusInternalServerError, err
		}
	}
	return v, http.StatusOK, nil
}
