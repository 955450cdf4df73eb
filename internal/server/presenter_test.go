package server

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestPresenterAuthority: on a server with a token, the run token
// students are given presents nothing. Starting a room from another
// machine needs the presenter token; each room's actions need its own
// presenter secret (or the presenter token), which outlives a restart;
// a run for the room needs it too.
func TestPresenterAuthority(t *testing.T) {
	dir := t.TempDir()
	cfg := func(c *Config) { c.DataDir, c.Token, c.PresenterToken = dir, "run-tok", "pres-tok" }
	s := newServer(t, cfg)
	call := func(s *Server, method, path, remote string, body any) (int, msg) {
		r := httptest.NewRequest(method, "http://localhost"+path, strings.NewReader(string(jsonBytes(body))))
		r.RemoteAddr = remote + ":40000"
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		var m msg
		json.Unmarshal(w.Body.Bytes(), &m)
		return w.Code, m
	}
	const far, here = "192.0.2.7", "127.0.0.1"
	for _, body := range []string{`{"lesson":"01-fixture"}`, `{"token":"run-tok","lesson":"01-fixture"}`, `{"presenter":"wrong","lesson":"01-fixture"}`} {
		if st, m := call(s, "POST", "/api/rooms", far, body); st != http.StatusForbidden || !strings.Contains(m.str("error"), "presenter token") {
			t.Errorf("starting a room from elsewhere with %s: %d %v, want 403 naming the presenter token", body, st, m)
		}
	}
	if _, m := call(s, "POST", "/api/rooms", far, `{"presenter":"run-tok","lesson":"01-fixture"}`); !strings.Contains(m.str("error"), "is wrong") {
		t.Errorf("starting a room with a wrong presenter token: %v, want it called wrong", m)
	}
	st, m := call(s, "POST", "/api/rooms", far, `{"presenter":"pres-tok","lesson":"01-fixture"}`)
	if st != http.StatusCreated || len(m.str("presenter_secret")) < 20 {
		t.Fatalf("starting a room with the presenter token: %d %v, want 201 and a secret", st, m)
	}
	code, secret := m.str("code"), m.str("presenter_secret")
	st, m = call(s, "POST", "/api/rooms", here, `{"lesson":"01-fixture"}`)
	if st != http.StatusCreated || m.str("presenter_secret") == secret {
		t.Fatalf("starting a second room from this machine: %d %v, want 201 and a secret of its own", st, m)
	}
	otherSecret := m.str("presenter_secret")
	section := func(s *Server, remote, presenter string) int {
		st, _ := call(s, "POST", "/api/rooms/"+code+"/section", remote, `{"presenter":"`+presenter+`","token":"run-tok","section":1}`)
		return st
	}
	for _, c := range []struct {
		who, remote, presenter string
		want                   int
	}{
		{"the run token alone, from elsewhere", far, "", http.StatusForbidden},
		{"the run token alone, from this machine", here, "", http.StatusForbidden},
		{"another room's secret", far, otherSecret, http.StatusForbidden},
		{"the room's secret", far, secret, http.StatusOK},
		{"the presenter token", far, "pres-tok", http.StatusOK},
	} {
		if got := section(s, c.remote, c.presenter); got != c.want {
			t.Errorf("moving the room with %s: %d, want %d", c.who, got, c.want)
		}
	}
	// The classes open with the presenter token, never with the run token.
	if st, _ := call(s, "GET", "/classes?token=run-tok", far, nil); st == http.StatusOK {
		t.Errorf("GET /classes from elsewhere with the run token in the query: %d, want refused", st)
	}
	s.Close()

	// After a restart the archive still knows the room's presenter.
	s2 := newServer(t, cfg)
	if got := section(s2, far, secret); got != http.StatusOK {
		t.Errorf("moving the room with its secret after a restart: %d, want 200", got)
	}
	if got := section(s2, far, otherSecret); got != http.StatusForbidden {
		t.Errorf("moving the room with another room's secret after a restart: %d, want 403", got)
	}

	// A run for the room needs the secret as well as the run token.
	ts := startServer(t, s2)
	p := dial(t, ts, "", nil)
	p.send(map[string]string{"type": "run", "id": "r1", "room": code, "token": "run-tok", "cell": "bench -engine null -ops 10"})
	if e := p.nextOf("error"); !strings.Contains(e.str("message"), "presenter secret") {
		t.Errorf("a room run with the run token only: %v, want refused naming the presenter secret", e)
	}
	p.send(map[string]string{"type": "run", "id": "r2", "room": code, "token": "run-tok", "presenter": secret, "cell": "bench -engine null -ops 10"})
	if ms := p.until("r2", "done"); !strings.Contains(types(ms), "result") {
		t.Errorf("a room run with the secret: %s, want a result", types(ms))
	}
}

// TestPresenterTokenDiffersFromToken: the two tokens are not the same.
func TestPresenterTokenDiffersFromToken(t *testing.T) {
	if _, err := New(Config{DataDir: t.TempDir(), Token: "same", PresenterToken: "same"}); err == nil || !strings.Contains(err.Error(), "must differ") {
		t.Errorf("New with -presenter-token equal to -token: %v, want refused", err)
	}
}
