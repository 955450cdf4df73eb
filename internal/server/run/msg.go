package run

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"

	"kvlab/internal/server/runq"
)

// Msg is every message a reader sends a run socket: run and cancel, on
// the server's /ws and on a room follower's socket (the server's
// messages.go has the protocol). The messages a run sends back are
// package runq's (runq.QueuedMsg, StartedMsg, ...).
type Msg struct {
	Type  string `json:"type"`
	ID    string `json:"id"`
	Cell  string `json:"cell"`
	Token string `json:"token,omitempty"`
	// Additions for the run archive (runq.Origin), all optional: where
	// the cell is, the browser's id, and how many rounds to run it.
	Lesson  string `json:"lesson,omitempty"`
	CellID  string `json:"cell_id,omitempty"`
	Browser string `json:"browser,omitempty"`
	Repeat  int    `json:"repeat,omitempty"`
	// Room fans the run out to a room's followers (presenter only), and
	// Poll names the room's poll the run measures (package liveclass).
	Room string `json:"room,omitempty"`
	Poll string `json:"poll,omitempty"`
	// Presenter is the room's presenter secret (or the presenter token)
	// on a run with Room (guard.PresenterError).
	Presenter string `json:"presenter,omitempty"`
	// Source is the Go code of a reader's store that the run's -engine
	// mine lines run (source.go).
	Source string `json:"source,omitempty"`
	// Script is the text of a reader's own workload script (Lua) that
	// the run's -script mine lines run (source.go).
	Script string `json:"script,omitempty"`
}

// Sink is where a reader's run messages go: the server's /ws client, or a
// room follower. SendBytes sends a message already encoded (a room run's
// messages are encoded once for the presenter and every follower);
// progress messages may be dropped when the reader falls behind.
type Sink interface {
	runq.Sink
	SendBytes(b []byte, progress bool)
}

// Decode reads one message: a JSON object of Msg's fields and nothing
// after it. The error says what a message should look like.
func Decode(data []byte) (Msg, error) {
	var m Msg
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	err := dec.Decode(&m)
	if err == nil && dec.More() {
		err = errors.New("more than one JSON value in one message")
	}
	if err != nil {
		return m, fmt.Errorf("malformed message: %v%s", err, ` (want {"type":"run","id":"c1","cell":"..."} or {"type":"cancel","id":"c1"})`)
	}
	return m, nil
}

// browserRE is what a browser id may look like: the page sends a UUID; any
// short token of letters, digits and '-' is accepted.
var browserRE = regexp.MustCompile(`^[A-Za-z0-9-]{1,64}$`)

// nameRE is a lesson slug, a cell id or a quiz id as the page sends them.
var nameRE = regexp.MustCompile(`^[A-Za-z0-9-]{1,128}$`)

// CheckOrigin checks the optional where-from fields of a run message or
// a quiz request; each may be empty.
func CheckOrigin(lessonSlug, cell, browser string) error {
	if lessonSlug != "" && !nameRE.MatchString(lessonSlug) {
		return fmt.Errorf("lesson %q: a lesson slug is 1 to 128 letters, digits and '-'", lessonSlug)
	}
	if cell != "" && !nameRE.MatchString(cell) {
		return fmt.Errorf("cell_id %q: a cell id is 1 to 128 letters, digits and '-'", cell)
	}
	if browser != "" && !browserRE.MatchString(browser) {
		return fmt.Errorf("browser %q: a browser id is 1 to 64 letters, digits and '-'", browser)
	}
	return nil
}

// checkExtras checks a run message's archive fields.
func checkExtras(m Msg) error {
	if m.Repeat < 0 || m.Repeat > runq.MaxRounds {
		return fmt.Errorf("repeat %d: must be between 1 and %d (0 or absent: once)", m.Repeat, runq.MaxRounds)
	}
	return CheckOrigin(m.Lesson, m.CellID, m.Browser)
}
