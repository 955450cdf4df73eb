package liveclass

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"kvlab/internal/archive"
	"kvlab/internal/classroom"
	"kvlab/internal/server/guard"
	"kvlab/internal/server/web"
)

// The class board. A student's own labserver (on a laptop) shares a
// result with the instructor's room server: the student's page POSTs it
// to the room server's /api/rooms/{code}/share, the one route that
// answers another origin (CORS on that route only). The student's server
// must first be told the room server's origin (POST /api/share-target,
// the server's), which it adds to its pages' Content-Security-Policy
// connect-src.

// boardMax is the most results one room's board keeps.
const boardMax = 500

type shareRequest struct {
	Result json.RawMessage `json:"result"`
	Label  string          `json:"label"`
}

// allowCORS answers the request's Origin, whatever it is: the share
// route takes results from students' own servers. No credentials.
func allowCORS(w http.ResponseWriter, r *http.Request) {
	if o := r.Header.Get("Origin"); o != "" {
		w.Header().Set("Access-Control-Allow-Origin", o)
	}
	w.Header().Add("Vary", "Origin")
}

func (rs roomHTTP) handleSharePreflight(w http.ResponseWriter, r *http.Request) {
	allowCORS(w, r)
	w.Header().Set("Access-Control-Allow-Methods", "POST")
	w.Header().Set("Access-Control-Allow-Headers", "Content-Type")
	w.Header().Set("Access-Control-Max-Age", "600")
	w.WriteHeader(http.StatusNoContent)
}

func (rs roomHTTP) handleShare(w http.ResponseWriter, r *http.Request) {
	allowCORS(w, r)
	if !rs.writeAllowed(w, r, "share") {
		return
	}
	var req shareRequest
	if !web.DecodeBody(w, r, rs.cfg.Writes.MaxShareBytes, &req, `{"result":{...a probe or bench result...},"label":"optional"}`) {
		return
	}
	room := rs.lookupRoom(w, r)
	if room == nil {
		return
	}
	if err := classroom.CheckLabel(req.Label); err != nil {
		web.JSONError(w, http.StatusBadRequest, err.Error())
		return
	}
	sh, err := classroom.CheckShare(req.Result)
	if err != nil {
		web.JSONError(w, http.StatusBadRequest, strings.TrimPrefix(err.Error(), "classroom: "))
		return
	}
	addr := guard.RemoteHost(r)
	e := &archive.BoardEntry{Room: room.ID, Kind: sh.Kind, Measures: sh.Values, Conditions: web.MustMarshal(sh.Conditions), Result: Redact(req.Result),
		Label: req.Label, AddrHash: addrHash(room.Code, addr), At: time.Now().UTC()}
	if code, err := rs.addBoardEntry(r, room, e); err != nil {
		web.JSONError(w, code, err.Error())
		return
	}
	web.WriteJSON(w, http.StatusCreated, map[string]int64{"id": e.ID})
}

// addBoardEntry stores e within the room's caps. The caps' counts are
// taken under the room's lock, so they hold under concurrency, and given
// back when the store fails; the lock is not held while the archive's
// group commit takes its turn.
func (rs roomHTTP) addBoardEntry(r *http.Request, room *classroom.Room, e *archive.BoardEntry) (int, error) {
	room.Lock()
	switch {
	case room.BoardEntries >= boardMax:
		room.Unlock()
		return http.StatusConflict, fmt.Errorf("the board of room %s is full (%d results, the most it keeps)", classroom.FormatCode(room.Code), boardMax)
	case room.BoardByAddr[e.AddrHash] >= rs.cfg.Writes.SharesPerAddressRoom:
		n := room.BoardByAddr[e.AddrHash]
		room.Unlock()
		return http.StatusTooManyRequests, fmt.Errorf("this address already shared %d results with room %s, the most one address may (-max-shares-per-address)", n, classroom.FormatCode(room.Code))
	}
	room.BoardEntries++
	room.BoardByAddr[e.AddrHash]++
	room.Unlock()
	if _, err := rs.cfg.Archive.AddBoardEntry(r.Context(), e); err != nil {
		room.Lock()
		room.BoardEntries--
		room.BoardByAddr[e.AddrHash]--
		room.Unlock()
		return http.StatusInternalServerError, fmt.Errorf("storing the result: %v", err)
	}
	return 0, nil
}

// addrHash names a sharer within one room without naming the address.
func addrHash(code, addr string) string {
	h := sha256.Sum256([]byte(code + "\x00" + addr))
	return hex.EncodeToString(h[:8])
}

type boardPoint struct {
	ID         int64           `json:"id"`
	Value      float64         `json:"value"`
	Label      string          `json:"label"`
	Conditions json.RawMessage `json:"conditions"` // as stored at share time
	At         time.Time       `json:"at"`
}

type boardReply struct {
	Measure string       `json:"measure"`
	Unit    string       `json:"unit"`
	Points  []boardPoint `json:"points"`
}

func (rs roomHTTP) handleBoard(w http.ResponseWriter, r *http.Request) {
	room := rs.followerRoom(w, r)
	if room == nil {
		return
	}
	m := r.URL.Query().Get("measure")
	unit := classroom.MeasureUnit(m)
	if unit == "" {
		web.JSONError(w, http.StatusBadRequest, fmt.Sprintf("measure %q: allowed: %s", m, strings.Join(classroom.Measures, ", ")))
		return
	}
	es, err := rs.cfg.Archive.BoardEntries(r.Context(), room.ID)
	if err != nil {
		web.JSONError(w, http.StatusInternalServerError, err.Error())
		return
	}
	web.WriteJSON(w, http.StatusOK, boardOf(es, m))
}

// handleBoardDelete removes one entry from a room's board (the
// presenter's). The entry still counts against its sharer's address, so
// removing a prank does not let its author share again.
func (rs roomHTTP) handleBoardDelete(w http.ResponseWriter, r *http.Request) {
	var req tokenRequest
	room := rs.presenterAction(w, r, &req, &req.Presenter, `{"presenter":"..."}`)
	if room == nil {
		return
	}
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		web.JSONError(w, http.StatusBadRequest, fmt.Sprintf("board entry %q: want the positive id the board's points carry", r.PathValue("id")))
		return
	}
	room.Lock()
	defer room.Unlock()
	err = rs.cfg.Archive.DeleteBoardEntry(r.Context(), room.ID, id)
	switch {
	case errors.Is(err, archive.ErrNotFound):
		web.JSONError(w, http.StatusNotFound, fmt.Sprintf("room %s has no board entry %d", classroom.FormatCode(room.Code), id))
		return
	case err != nil:
		web.JSONError(w, http.StatusInternalServerError, err.Error())
		return
	}
	room.BoardEntries--
	web.WriteJSON(w, http.StatusOK, map[string]int64{"removed": id})
}
