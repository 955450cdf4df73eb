package liveclass

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"strconv"
	"time"

	"kvlab/internal/archive"
	"kvlab/internal/classroom"
	"kvlab/internal/quiz"
	"kvlab/internal/server/guard"
	"kvlab/internal/server/web"
)

// Past classes, read from the archive:
//
//	GET  /classes                    live and past rooms, newest first
//	GET  /classes/ID                 one class: its polls (histogram of the
//	                                 predictions, the measured value) and its board
//	GET  /classes/compare?a=ID&b=ID  two classes side by side
//
// Predictions are anonymous in a class, but a class's record is the
// instructor's: the pages answer requests from this machine (a loopback
// address naming this machine), and from elsewhere only with the
// presenter token (package guard; the run token students are given does
// not open them), sent by the form the page shows (POST, the same
// routes), never in a URL.

// pastClasses serves the past classes' pages from the archive; it reads
// nothing of the live rooms.
type pastClasses struct{ cfg *Config }

func (rs pastClasses) routeClasses(mux *http.ServeMux) {
	for _, m := range []string{"GET", "POST"} {
		mux.HandleFunc(m+" /classes", rs.classesPage(rs.handleClasses))
		mux.HandleFunc(m+" /classes/compare", rs.classesPage(rs.handleClassesCompare))
		mux.HandleFunc(m+" /classes/{id}", rs.classesPage(rs.handleClass))
	}
}

// classesLimit is how many rooms /classes lists.
const classesLimit = 100

// classesPage wraps a classes handler with the access check: a request
// that is neither from this machine nor carries the token gets the token
// form. The handler gets the token to carry on in its links ("" from
// this machine).
func (rs pastClasses) classesPage(h func(w http.ResponseWriter, r *http.Request, token string)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !guard.SameOrigin(r) {
			web.ErrorPage(w, http.StatusForbidden, "Not from this server", fmt.Sprintf("origin %s is not this server (%s)", r.Header.Get("Origin"), r.Host))
			return
		}
		local := guard.FromThisMachine(r) && rs.cfg.Guard.HostOK(r)
		tok := r.PostFormValue("token")
		good, throttled := false, ""
		if tok != "" {
			good, throttled = rs.cfg.Guard.TokenGuess(guard.RemoteHost(r), tok, func() bool { return rs.cfg.Guard.PresenterTokenOK(tok) })
		}
		switch {
		case throttled != "":
			web.ErrorPage(w, http.StatusTooManyRequests, "Too many wrong tokens", throttled)
		case good:
			h(w, r, tok)
		case local:
			h(w, r, "")
		default:
			status, msg := http.StatusUnauthorized, ""
			switch {
			case !rs.cfg.HasPresenterToken:
				status, msg = http.StatusForbidden, "This server has no presenter token: its classes open only on its own machine (start it with -presenter-token-file to open them from elsewhere)."
			case tok != "":
				status, msg = http.StatusForbidden, "That is not the presenter token."
			}
			web.RenderPage(w, status, "classes_token.html", struct{ Path, Error string }{r.URL.RequestURI(), msg})
		}
	}
}

// classRow is one line of /classes.
type classRow struct {
	archive.Room
	Shown, Title, State string
	Link                classLink // to the class's page
}

// classLink is a link between the classes pages: a plain link, or with
// a token a button that posts it.
type classLink struct {
	URL, Text, Token string
}

func (rs pastClasses) classRow(rm archive.Room, now time.Time, token string) classRow {
	c := classRow{Room: rm, Shown: classroom.FormatCode(rm.Code), Title: rm.Lesson, State: "live",
		Link: classLink{URL: fmt.Sprintf("/classes/%d", rm.ID), Text: fmt.Sprintf("#%d", rm.ID), Token: token}}
	if l, err := rs.cfg.Lesson(rm.Lesson); err == nil && l != nil {
		c.Title = l.Title
	}
	switch {
	case !rm.Closed.IsZero():
		c.State = "ended " + rm.Closed.Local().Format("2006-01-02 15:04")
	case !now.Before(rm.Expires):
		c.State = "expired " + rm.Expires.Local().Format("2006-01-02 15:04")
	}
	return c
}

func (rs pastClasses) handleClasses(w http.ResponseWriter, r *http.Request, token string) {
	rooms, err := rs.cfg.Archive.Rooms(r.Context(), classesLimit)
	if err != nil {
		web.ErrorPage(w, http.StatusInternalServerError, "Reading the archive failed", err.Error())
		return
	}
	p := struct {
		Rows  []classRow
		Token string
	}{Token: token}
	now := time.Now()
	for _, rm := range rooms {
		p.Rows = append(p.Rows, rs.classRow(rm, now, token))
	}
	web.RenderPage(w, http.StatusOK, "classes.html", p)
}

// classData is one class as the page's script draws it: each poll with
// its histogram and measured value, and the board by measure.
type classData struct {
	Polls []pastPoll            `json:"polls"`
	Board map[string]boardReply `json:"board"`
}

// pastPoll is a poll as the room saw it, with its question rendered from
// the lesson's Markdown (the page copies only text and inline elements).
type pastPoll struct {
	classroom.PollView
	QuestionHTML string `json:"question_html"`
}

// classView is one class on /classes/ID, or one side of the comparison.
type classView struct {
	classRow
	Data template.JS // classData as JSON
}

// loadClass reads class id from the archive; a class that does not
// exist is an error wrapping archive.ErrNotFound.
func (rs pastClasses) loadClass(ctx context.Context, id int64, token string) (classView, error) {
	rm, err := rs.cfg.Archive.GetRoom(ctx, id)
	if err != nil {
		return classView{}, err
	}
	polls, err := rs.cfg.Archive.RoomPolls(ctx, id)
	if err != nil {
		return classView{}, err
	}
	entries, err := rs.cfg.Archive.BoardEntries(ctx, id)
	if err != nil {
		return classView{}, err
	}
	d := classData{Polls: []pastPoll{}, Board: map[string]boardReply{}}
	for _, p := range polls {
		d.Polls = append(d.Polls, rs.pastPoll(rm.Lesson, p))
	}
	for _, m := range classroom.Measures {
		d.Board[m] = boardOf(entries, m)
	}
	js, err := json.Marshal(d)
	if err != nil {
		return classView{}, err
	}
	return classView{classRow: rs.classRow(*rm, time.Now(), token), Data: template.JS(js)}, nil
}

// pastPoll is an archived poll as the room showed it: its question and
// unit from the lesson, its histogram from the stored predictions.
func (rs pastClasses) pastPoll(slug string, ap archive.Poll) pastPoll {
	var q *quiz.Quiz
	if l, err := rs.cfg.Lesson(slug); err == nil && l != nil {
		q = l.Quiz(ap.Quiz)
	}
	html := ""
	if q != nil {
		html = web.InlineMarkdown(q.Question)
	}
	return pastPoll{PollView: restorePoll(ap, q).View(), QuestionHTML: html}
}

// boardOf is the board of entries for measure m: GET
// /api/rooms/{code}/board's reply, and a past class's board.
func boardOf(entries []archive.BoardEntry, m string) boardReply {
	b := boardReply{Measure: m, Unit: classroom.MeasureUnit(m), Points: []boardPoint{}}
	for _, e := range entries {
		v, ok := e.Measures[m]
		if !ok || classroom.CheckMeasure(m, v) != nil { // a value stored before the bounds is left out
			continue
		}
		pt := boardPoint{ID: e.ID, Value: v, Label: e.Label, At: e.At, Conditions: e.Conditions}
		if pt.Conditions == nil {
			pt.Conditions = legacyConditions(e)
		}
		b.Points = append(b.Points, pt)
	}
	return b
}

// legacyConditions are the conditions of an entry stored before they
// were kept beside its measures: taken from its result (the archive
// returns the result of such an entry only).
func legacyConditions(e archive.BoardEntry) json.RawMessage {
	if sh, err := classroom.CheckShare(e.Result); err == nil {
		return web.MustMarshal(sh.Conditions)
	}
	return json.RawMessage(`{}`)
}

// classID parses a class id from a path or form value.
func classID(name, v string) (int64, error) {
	id, err := strconv.ParseInt(v, 10, 64)
	if err != nil || id <= 0 {
		return 0, fmt.Errorf("%s=%q is not a class id: want a positive whole number, as /classes lists them", name, v)
	}
	return id, nil
}

func (rs pastClasses) classOrError(w http.ResponseWriter, r *http.Request, name, v, token string) (classView, bool) {
	id, err := classID(name, v)
	if err != nil {
		web.ErrorPage(w, http.StatusBadRequest, "No such class", err.Error())
		return classView{}, false
	}
	c, err := rs.loadClass(r.Context(), id, token)
	if errors.Is(err, archive.ErrNotFound) {
		web.ErrorPage(w, http.StatusNotFound, "No such class", fmt.Sprintf("Class %d is not in this server's archive; /classes lists the classes it has.", id))
		return classView{}, false
	}
	if err != nil {
		web.ErrorPage(w, http.StatusInternalServerError, "Reading the archive failed", err.Error())
		return classView{}, false
	}
	return c, true
}

func (rs pastClasses) handleClass(w http.ResponseWriter, r *http.Request, token string) {
	c, ok := rs.classOrError(w, r, "id", r.PathValue("id"), token)
	if !ok {
		return
	}
	web.RenderPage(w, http.StatusOK, "class.html", classesView{Classes: []classView{c}, Back: backLink(token)})
}

func (rs pastClasses) handleClassesCompare(w http.ResponseWriter, r *http.Request, token string) {
	a, ok := rs.classOrError(w, r, "a", r.FormValue("a"), token)
	if !ok {
		return
	}
	b, ok := rs.classOrError(w, r, "b", r.FormValue("b"), token)
	if !ok {
		return
	}
	web.RenderPage(w, http.StatusOK, "class.html", classesView{Classes: []classView{a, b}, Back: backLink(token)})
}

// classesView is /classes/ID (one class) or the comparison (two).
type classesView struct {
	Classes []classView
	Back    classLink
}

func backLink(token string) classLink {
	return classLink{URL: "/classes", Text: "All classes", Token: token}
}
