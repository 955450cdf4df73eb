package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"kvlab/internal/archive"
	"kvlab/internal/classroom"
	"kvlab/internal/server/liveclass"
)

// post sends a JSON body (a string, or a value to encode) with optional
// header pairs and decodes the JSON reply.
func post(t testing.TB, ts *httptest.Server, method, path string, body any, hdr ...string) (int, msg) {
	t.Helper()
	r, _ := http.NewRequest(method, ts.URL+path, bytes.NewReader(jsonBytes(body)))
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i] == "Host" {
			r.Host = hdr[i+1]
			continue
		}
		r.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var m msg
	json.Unmarshal(raw, &m)
	return resp.StatusCode, m
}

// openRoom starts a room on the fixture lesson (from this machine) and
// returns its code.
func openRoom(t testing.TB, ts *httptest.Server) string {
	t.Helper()
	code, _ := openRoomSecret(t, ts)
	return code
}

// openRoomSecret starts a room on the fixture lesson (from this machine)
// and returns its code and presenter secret.
func openRoomSecret(t testing.TB, ts *httptest.Server) (code, secret string) {
	t.Helper()
	st, m := post(t, ts, "POST", "/api/rooms", map[string]string{"lesson": "01-fixture"})
	if st != http.StatusCreated || m.str("presenter_secret") == "" {
		t.Fatalf("POST /api/rooms: %d %v, want 201 and a presenter secret", st, m)
	}
	return m.str("code"), m.str("presenter_secret")
}

// dialRoom joins a room as a follower and reads its first message, the
// room's state.
func dialRoom(t testing.TB, ts *httptest.Server, code string) *wsClient {
	t.Helper()
	f := dialPath(t, ts, "/room/"+code+"/ws", nil)
	if m := f.next(); m.str("type") != "room" || m.str("code") != code {
		t.Fatalf("first message %v: want the room's state", m)
	}
	return f
}

// nextOf reads until a message of type typ.
func (c *wsClient) nextOf(typ string) msg {
	c.t.Helper()
	for {
		if m := c.next(); m.str("type") == typ {
			return m
		}
	}
}

// raw reads one message as bytes.
func (c *wsClient) raw() []byte {
	c.t.Helper()
	c.conn.SetReadDeadline(time.Now().Add(90 * time.Second))
	_, b, err := c.conn.ReadMessage()
	if err != nil {
		c.t.Fatalf("read: %v", err)
	}
	return b
}

// TestRoomClass walks a class: a follower joins and follows a section
// change, a poll opens, two browsers predict, the presenter's run of the
// poll's cell streams to the follower byte for byte, the poll closes with
// the measured value on the histogram, and the room closes.
func TestRoomClass(t *testing.T) {
	s := newServer(t, nil)
	ts := startServer(t, s)
	code := openRoom(t, ts)
	f := dialRoom(t, ts, code)

	st, m := post(t, ts, "POST", "/api/rooms/"+code+"/section", `{"section":1}`)
	if st != 200 || m.num("section") != 1 || m.num("sections") != 3 {
		t.Fatalf("section: %d %v, want section 1 of 3", st, m)
	}
	if m := f.nextOf("section"); m.num("section") != 1 {
		t.Fatalf("follower: %v, want section 1", m)
	}
	if st, m := post(t, ts, "POST", "/api/rooms/"+code+"/section", `{"section":3}`); st != 400 || !strings.Contains(m.str("error"), "between 0 and 2") {
		t.Errorf("section 3 of 3: %d %v, want 400 naming 0..2", st, m)
	}
	st, poll := post(t, ts, "POST", "/api/rooms/"+code+"/polls", `{"quiz":"count"}`)
	if st != 201 || poll.str("id") != "p1" || poll.str("state") != "open" {
		t.Fatalf("open poll: %d %v", st, poll)
	}
	if st, again := post(t, ts, "POST", "/api/rooms/"+code+"/polls", `{"quiz":"count"}`); st != 200 || again.str("id") != "p1" {
		t.Errorf("opening it again: %d %v, want the same poll", st, again)
	}
	for _, p := range []string{`{"browser":"b-1","value":"400"}`, `{"browser":"b-2","value":"600 puts"}`, `{"browser":"b-1","value":"450"}`} {
		if st, m := post(t, ts, "POST", "/api/rooms/"+code+"/polls/p1/predict", p); st != 200 {
			t.Fatalf("predict %s: %d %v", p, st, m)
		}
	}
	if _, m := post(t, ts, "GET", "/api/rooms/"+code, ""); m["polls"].([]any)[0].(map[string]any)["count"] != 2.0 {
		t.Errorf("state after 3 predictions from 2 browsers: %v, want count 2", m["polls"])
	}

	p := dial(t, ts, "", nil)
	p.send(map[string]string{"type": "run", "id": "c1", "cell_id": "always-run", "room": code, "poll": "p1",
		"cell": "bench -engine null -sync always -workload fillrandom -ops 500\nbench -engine null -sync none -workload fillrandom -ops 500"})
	var mine [][]byte
	for {
		b := p.raw()
		mine = append(mine, b)
		if bytes.Contains(b, []byte(`"type":"done"`)) {
			break
		}
	}
	if m := f.nextOf("room_run"); m.str("id") != "c1" || m.str("cell_id") != "always-run" {
		t.Fatalf("room_run: %v", m)
	}
	var theirs [][]byte
	for len(theirs) < len(mine) {
		b := f.raw()
		if bytes.Contains(b, []byte(`"type":"poll"`)) {
			continue // the poll's own updates come between
		}
		theirs = append(theirs, b)
	}
	for i := range mine {
		if !bytes.Equal(mine[i], theirs[i]) {
			t.Fatalf("message %d: the follower got %s, the presenter %s", i, theirs[i], mine[i])
		}
	}
	closed := f.nextOf("poll")
	for closed["poll"].(map[string]any)["state"] != "closed" {
		closed = f.nextOf("poll")
	}
	pv := closed["poll"].(map[string]any)
	if pv["measured"] != 500.0 || pv["run_id"] == nil || pv["measure_started_at"] == nil {
		t.Fatalf("closed poll %v: want measured 500 with its run", pv)
	}
	edges := pv["histogram"].(map[string]any)["edges"].([]any)
	if edges[len(edges)-1].(float64) < 500 {
		t.Errorf("histogram edges %v do not reach the measured 500", edges)
	}

	if st, m := post(t, ts, "POST", "/api/rooms/"+code+"/close", `{}`); st != 200 || m["closed"] != true {
		t.Fatalf("close: %d %v", st, m)
	}
	f.nextOf("closed")
	f.conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	if _, _, err := f.conn.ReadMessage(); !websocket.IsCloseError(err, websocket.CloseNormalClosure) {
		t.Errorf("after closed: %v, want close 1000", err)
	}
	if st, m := post(t, ts, "GET", "/api/rooms/"+code, ""); st != 404 || !strings.Contains(m.str("error"), "no open room with code "+code) {
		t.Errorf("a closed room: %d %v, want 404", st, m)
	}
}

// TestRoomPredictAfterMeasureStarted: once the poll's run is queued, a
// prediction gets 409 and is not stored.
func TestRoomPredictAfterMeasureStarted(t *testing.T) {
	s, ts, _ := busyServer(t)
	code := openRoom(t, ts)
	post(t, ts, "POST", "/api/rooms/"+code+"/polls", `{"quiz":"count"}`)
	post(t, ts, "POST", "/api/rooms/"+code+"/polls/p1/predict", `{"browser":"early","value":"1"}`)
	p := dial(t, ts, "", nil)
	p.send(map[string]string{"type": "run", "id": "c1", "cell_id": "always-run", "room": code, "poll": "p1", "cell": "bench -engine null -ops 500"})
	p.nextOf("queued") // waiting behind "long": the measurement has not begun, yet it was accepted
	st, m := post(t, ts, "POST", "/api/rooms/"+code+"/polls/p1/predict", `{"browser":"late","value":"2"}`)
	if st != http.StatusConflict || !strings.Contains(m.str("error"), "predictions are closed") {
		t.Fatalf("a prediction after the run was accepted: %d %v, want 409", st, m)
	}
	id := s.rooms.Open(code).ID
	polls, err := s.arch.RoomPolls(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(polls[0].Predictions); n != 1 || polls[0].Predictions[0].Browser != "early" || polls[0].MeasureStarted.IsZero() {
		t.Fatalf("stored: %+v, want only the early prediction and a measure start", polls[0])
	}
	// The poll's measurement cannot be started twice either.
	p.send(map[string]string{"type": "run", "id": "c2", "room": code, "poll": "p1", "cell": "bench -engine null -ops 500"})
	if m := p.nextOf("error"); !strings.Contains(m.str("message"), "already started") {
		t.Errorf("a second run of the poll: %v", m)
	}
}

// TestRoomRestart: a room, its poll, predictions and board survive a
// restart of the server on the same data directory.
func TestRoomRestart(t *testing.T) {
	dir := t.TempDir()
	cfg := func(c *Config) { c.DataDir = dir }
	s1 := newServer(t, cfg)
	ts1 := httptest.NewServer(s1)
	code := openRoom(t, ts1)
	post(t, ts1, "POST", "/api/rooms/"+code+"/section", `{"section":2}`)
	post(t, ts1, "POST", "/api/rooms/"+code+"/polls", `{"quiz":"count"}`)
	post(t, ts1, "POST", "/api/rooms/"+code+"/polls/p1/predict", `{"browser":"b-1","value":"480"}`)
	post(t, ts1, "POST", "/api/rooms/"+code+"/polls/p1/predict", `{"browser":"b-2","value":"520"}`)
	probe, _ := os.ReadFile("../classroom/testdata/probe.json")
	if st, m := post(t, ts1, "POST", "/api/rooms/"+code+"/share", `{"result":`+string(probe)+`,"label":"lab 1"}`); st != 201 {
		t.Fatalf("share: %d %v", st, m)
	}
	s1.Close()
	ts1.Close()

	s2 := newServer(t, cfg)
	ts2 := startServer(t, s2)
	st, m := post(t, ts2, "GET", "/api/rooms/"+code, "")
	if st != 200 || m.num("section") != 2 {
		t.Fatalf("after the restart: %d %v, want the room at section 2", st, m)
	}
	polls := m["polls"].([]any)
	if len(polls) != 1 || polls[0].(map[string]any)["count"] != 2.0 || polls[0].(map[string]any)["state"] != "open" {
		t.Fatalf("polls after the restart: %v, want p1 open with 2 predictions", polls)
	}
	if st, m := post(t, ts2, "POST", "/api/rooms/"+code+"/polls/p1/predict", `{"browser":"b-1","value":"490"}`); st != 200 || m["poll"].(map[string]any)["count"] != 2.0 {
		t.Errorf("replacing a prediction after the restart: %d %v, want count still 2", st, m)
	}
	st, board := post(t, ts2, "GET", "/api/rooms/"+code+"/board?measure=fdatasync_p50", "")
	pts, _ := board["points"].([]any)
	if st != 200 || len(pts) != 1 || pts[0].(map[string]any)["label"] != "lab 1" {
		t.Fatalf("board after the restart: %d %v", st, board)
	}
	f := dialRoom(t, ts2, code)
	f.conn.Close()
}

// TestTokenFailuresThrottled: past -max-token-failures wrong tokens or
// presenter secrets in a minute, an address gets 429 from every token
// check, even for the right token, before any comparison.
func TestTokenFailuresThrottled(t *testing.T) {
	const max = 4
	s := newServer(t, func(c *Config) { c.Token, c.PresenterToken, c.MaxTokenFailures = "run-tok", "pres-tok", max })
	ts := startServer(t, s)
	code, secret := openRoomSecret(t, ts)
	for i := range max {
		if st, _ := post(t, ts, "POST", "/api/rooms/"+code+"/section", `{"presenter":"guess-`+strconv.Itoa(i)+`","section":1}`); st != http.StatusForbidden {
			t.Fatalf("wrong secret %d: %d, want 403", i, st)
		}
	}
	if st, m := post(t, ts, "POST", "/api/rooms/"+code+"/section", `{"presenter":"`+secret+`","section":1}`); st != http.StatusTooManyRequests || !strings.Contains(m.str("error"), "-max-token-failures") {
		t.Errorf("the right secret after %d wrong ones: %d %v, want 429 naming the flag", max, st, m)
	}
	c := dial(t, ts, "", nil)
	c.send(map[string]string{"type": "run", "id": "r1", "token": "run-tok", "cell": "bench -engine null -ops 10"})
	if e := c.nextOf("error"); !strings.Contains(e.str("message"), "wrong tokens") {
		t.Errorf("a run with the right token from the throttled address: %v, want refused", e)
	}
	if st, _ := post(t, ts, "POST", "/classes", "token=pres-tok", "Content-Type", "application/x-www-form-urlencoded"); st != http.StatusTooManyRequests {
		t.Errorf("the classes' token form from the throttled address: %d, want 429", st)
	}
}

// TestRoomFollowerCannotPresent: nothing a follower sends acts as the
// presenter, and what it sends is bounded.
func TestRoomFollowerCannotPresent(t *testing.T) {
	s := newServer(t, func(c *Config) { c.Token = "sekrit" })
	ts := startServer(t, s)
	code, secret := openRoomSecret(t, ts)
	other, otherSecret := openRoomSecret(t, ts)
	post(t, ts, "POST", "/api/rooms/"+other+"/polls", `{"presenter":"`+otherSecret+`","quiz":"count"}`)
	for _, tt := range []struct{ path, body string }{
		{"/api/rooms/" + code + "/section", `{"section":1}`},
		{"/api/rooms/" + code + "/section", `{"token":"sekrit","section":1}`},
		{"/api/rooms/" + code + "/allow-runs", `{"presenter":"wrong","allow":true}`},
		{"/api/rooms/" + code + "/allow-runs", `{"presenter":"` + otherSecret + `","allow":true}`},
		{"/api/rooms/" + code + "/polls", `{"quiz":"count"}`},
		{"/api/rooms/" + code + "/close", `{"token":"sekrit"}`},
	} {
		if st, m := post(t, ts, "POST", tt.path, tt.body); st != http.StatusForbidden || !strings.Contains(m.str("error"), "presenter") {
			t.Errorf("POST %s %s without the room's presenter secret: %d %v, want 403", tt.path, tt.body, st, m)
		}
	}
	// A prediction for another room's poll finds no poll here.
	if st, _ := post(t, ts, "POST", "/api/rooms/"+code+"/polls/p1/predict", `{"browser":"b","value":"1"}`); st != 404 {
		t.Errorf("predict for another room's poll: %d, want 404", st)
	}
	f := dialRoom(t, ts, code)
	for _, m := range []map[string]string{
		{"type": "run", "id": "r1", "cell": "bench -engine null -ops 10"},
		{"type": "run", "id": "r2", "cell": "bench -engine null -ops 10", "room": code},
		{"type": "run", "id": "r3", "cell": "bench -engine null -ops 10", "token": "sekrit"},
	} {
		f.send(m)
		if e := f.nextOf("error"); !strings.Contains(e.str("message"), "not allowed runs") {
			t.Errorf("follower %v: %v, want refused", m, e)
		}
	}
	for _, m := range []string{`{"type":"section","section":2}`, `{"type":"close"}`, `{"type":"allow-runs","allow":true}`} {
		f.send(m)
		if e := f.nextOf("error"); !strings.Contains(e.str("message"), "unknown message type") && !strings.Contains(e.str("message"), "malformed message") {
			t.Errorf("follower sends %s: %v, want it refused", m, e)
		}
	}
	if _, st := post(t, ts, "GET", "/api/rooms/"+code, ""); st.num("section") != 0 || st["allow_runs"] != false {
		t.Fatalf("after a follower's presenter messages: %v, want section 0 and no runs allowed", st)
	}
	post(t, ts, "POST", "/api/rooms/"+code+"/allow-runs", `{"presenter":"`+secret+`","allow":true}`)
	f.nextOf("room")
	f.send(map[string]string{"type": "run", "id": "r4", "cell": "bench -engine null -ops 10", "room": code, "poll": "p1"})
	if e := f.nextOf("error"); !strings.Contains(e.str("message"), "no room, poll or token") {
		t.Errorf("follower run with room and poll: %v, want refused", e)
	}
	f.send(map[string]string{"type": "run", "id": "r5", "cell": "bench -engine null -ops 10"})
	if ms := f.until("r5", "done"); !strings.Contains(types(ms), "result") {
		t.Errorf("an allowed follower run: %s, want a result", types(ms))
	}
	big := `{"type":"cancel","id":"` + strings.Repeat("x", liveclass.FollowerMaxMessage) + `"}`
	f.send(big)
	expectClose(t, f, websocket.ClosePolicyViolation)

	g := dialRoom(t, ts, code)
	for range liveclass.FollowerMaxRate + 5 {
		g.conn.WriteMessage(websocket.TextMessage, []byte(`{"type":"cancel","id":"x"}`))
	}
	expectClose(t, g, websocket.ClosePolicyViolation)
}

func expectClose(t *testing.T, c *wsClient, code int) {
	t.Helper()
	c.conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	for {
		_, _, err := c.conn.ReadMessage()
		if err == nil {
			continue
		}
		if !websocket.IsCloseError(err, code) {
			t.Errorf("got %v, want close %d", err, code)
		}
		return
	}
}

// TestRoomRoutesRefuseForeignOrigins: every new route but share refuses
// a page from another origin, and a foreign Host on a server without a
// token; share answers CORS.
func TestRoomRoutesRefuseForeignOrigins(t *testing.T) {
	s := newServer(t, func(c *Config) { c.Addr = "127.0.0.1:8080" })
	ts := startServer(t, s)
	code := openRoom(t, ts)
	post(t, ts, "POST", "/api/rooms/"+code+"/polls", `{"quiz":"count"}`)
	routes := []struct{ method, path, body string }{
		{"POST", "/api/rooms", `{"lesson":"01-fixture"}`},
		{"GET", "/api/rooms/" + code, ""},
		{"POST", "/api/rooms/" + code + "/section", `{"section":1}`},
		{"POST", "/api/rooms/" + code + "/allow-runs", `{"allow":true}`},
		{"POST", "/api/rooms/" + code + "/polls", `{"quiz":"count"}`},
		{"POST", "/api/rooms/" + code + "/polls/p1/predict", `{"browser":"b","value":"1"}`},
		{"GET", "/api/rooms/" + code + "/board?measure=p99", ""},
		{"GET", "/room/" + code + "/qr.svg", ""},
		{"GET", "/room/" + code + "/ws", ""},
		{"GET", "/api/share-target", ""},
		{"POST", "/api/share-target", `{"url":"http://10.0.0.5:8080"}`},
		{"DELETE", "/api/share-target", `{"url":"http://10.0.0.5:8080"}`},
		{"POST", "/api/rooms/" + code + "/close", `{}`},
	}
	host := strings.TrimPrefix(ts.URL, "http://")
	for _, rt := range routes {
		for _, hdr := range [][]string{
			{"Origin", "http://evil.example"},
			{"Origin", "http://rebind.evil.example", "Host", "rebind.evil.example"},
		} {
			st, m := post(t, ts, rt.method, rt.path, rt.body, hdr...)
			if st != http.StatusForbidden {
				t.Errorf("%s %s with %v: %d %v, want 403", rt.method, rt.path, hdr, st, m)
			}
		}
		if rt.path == "/room/"+code+"/ws" {
			continue
		}
		if st, m := post(t, ts, rt.method, rt.path, rt.body, "Origin", "http://"+host); st >= 400 {
			t.Errorf("%s %s from the same origin: %d %v", rt.method, rt.path, st, m)
		}
	}
}

// TestRoomShare: the share route alone answers another origin (CORS), and
// takes only a valid probe or bench result within its caps.
func TestRoomShare(t *testing.T) {
	s := newServer(t, func(c *Config) { c.Writes.Rate = 6 })
	ts := startServer(t, s)
	code := openRoom(t, ts)
	u := ts.URL + "/api/rooms/" + code + "/share"
	pre, _ := http.NewRequest("OPTIONS", u, nil)
	pre.Header.Set("Origin", "http://10.0.0.9:8080")
	pre.Header.Set("Access-Control-Request-Method", "POST")
	resp, err := http.DefaultClient.Do(pre)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	for k, want := range map[string]string{"Access-Control-Allow-Origin": "http://10.0.0.9:8080", "Access-Control-Allow-Methods": "POST",
		"Access-Control-Allow-Headers": "Content-Type", "Access-Control-Max-Age": "600", "Vary": "Origin"} {
		if got := resp.Header.Get(k); got != want {
			t.Errorf("preflight %s: %q, want %q", k, got, want)
		}
	}
	if resp.StatusCode != http.StatusNoContent || resp.Header.Get("Access-Control-Allow-Credentials") != "" {
		t.Errorf("preflight: %d, credentials %q; want 204 and none", resp.StatusCode, resp.Header.Get("Access-Control-Allow-Credentials"))
	}
	bench, _ := os.ReadFile("../classroom/testdata/bench.json")
	for _, bad := range []string{`{"result":{"kind":"model"}}`, `{"result":{"kind":"bench","oops":1}}`, `{"result":` + string(bench) + `,"label":"<b>"}`, `{"result":1,"extra":2}`} {
		if st, m := post(t, ts, "POST", "/api/rooms/"+code+"/share", bad, "Origin", "http://10.0.0.9:8080"); st != 400 {
			t.Errorf("share %.60s: %d %v, want 400", bad, st, m)
		}
	}
	r, _ := http.NewRequest("POST", u, strings.NewReader(`{"result":`+string(bench)+`,"label":"lab 2"}`))
	r.Header.Set("Origin", "http://10.0.0.9:8080")
	resp, err = http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 201 || resp.Header.Get("Access-Control-Allow-Origin") != "http://10.0.0.9:8080" {
		t.Fatalf("share: %d, Allow-Origin %q; want 201 and the Origin", resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"))
	}
	limit := DefaultWriteLimits().MaxShareBytes
	big := `{"result":{"kind":"probe","cpu":"` + strings.Repeat("x", int(limit)) + `"}}`
	if st, _ := post(t, ts, "POST", "/api/rooms/"+code+"/share", big); st != http.StatusRequestEntityTooLarge {
		t.Errorf("a share over %d bytes: %d, want 413", limit, st)
	}
	// The seventh write from this address in a minute is over -write-rate 6.
	if st, m := post(t, ts, "POST", "/api/rooms/"+code+"/share", `{"result":`+string(bench)+`}`); st != http.StatusTooManyRequests || !strings.Contains(m.str("error"), "-write-rate") {
		t.Errorf("a share over the rate: %d %v, want 429 naming -write-rate", st, m)
	}
	_, board := post(t, ts, "GET", "/api/rooms/"+code+"/board?measure=always_ops_per_sec", "")
	pts := board["points"].([]any)
	if board["unit"] != "ops/s" || len(pts) != 1 || pts[0].(map[string]any)["conditions"].(map[string]any)["fs"] != "ext4" {
		t.Errorf("board: %v", board)
	}
	if _, probe := post(t, ts, "GET", "/api/rooms/"+code+"/board?measure=fdatasync_p50", ""); len(probe["points"].([]any)) != 0 {
		t.Errorf("fdatasync_p50 from a bench result: %v, want no point", probe)
	}
	if st, m := post(t, ts, "GET", "/api/rooms/"+code+"/board?measure=p50", ""); st != 400 || !strings.Contains(m.str("error"), "fdatasync_p50, always_ops_per_sec, p99") {
		t.Errorf("unknown measure: %d %v", st, m)
	}
}

// TestShareTargets: a remembered room server joins connect-src, is kept
// across a restart, and at most maxShareTargets are.
func TestShareTargets(t *testing.T) {
	dir := t.TempDir()
	s := newServer(t, func(c *Config) { c.DataDir = dir })
	ts := startServer(t, s)
	for _, bad := range []string{"ftp://x", "http://a/b", "http://a b", "http://u@h", "javascript:alert(1)", "http://h;script-src *"} {
		if st, _ := post(t, ts, "POST", "/api/share-target", map[string]string{"url": bad}); st != 400 {
			t.Errorf("share target %q: %d, want 400", bad, st)
		}
	}
	for i := range maxShareTargets {
		if st, m := post(t, ts, "POST", "/api/share-target", map[string]string{"url": "http://10.0.0." + string(rune('1'+i)) + ":8080/"}); st != 200 {
			t.Fatalf("share target %d: %d %v", i, st, m)
		}
	}
	if st, _ := post(t, ts, "POST", "/api/share-target", `{"url":"https://room.example"}`); st != 400 {
		t.Errorf("a fifth share target: %d, want 400", st)
	}
	csp := get(t, s, "/").Header().Get("Content-Security-Policy")
	if !strings.Contains(csp, "connect-src 'self' http://10.0.0.1:8080 ") || strings.Contains(csp, "10.0.0.1:8080/") {
		t.Errorf("CSP %q: want the targets' origins in connect-src", csp)
	}
	post(t, ts, "DELETE", "/api/share-target", `{"url":"http://10.0.0.1:8080"}`)
	s.Close()
	s2 := newServer(t, func(c *Config) { c.DataDir = dir })
	csp = get(t, s2, "/").Header().Get("Content-Security-Policy")
	if strings.Contains(csp, "10.0.0.1:8080") || !strings.Contains(csp, "http://10.0.0.4:8080") {
		t.Errorf("after a restart: CSP %q, want 10.0.0.2..4 only", csp)
	}
}

// TestRoomPresenterAheadOfFollowers: a presenter's run queues ahead of
// the followers' runs already waiting, which are told their new place.
func TestRoomPresenterAheadOfFollowers(t *testing.T) {
	_, ts, busy := busyServer(t)
	code := openRoom(t, ts)
	post(t, ts, "POST", "/api/rooms/"+code+"/allow-runs", `{"allow":true}`)
	f := dialRoom(t, ts, code)
	f.send(map[string]string{"type": "run", "id": "f1", "cell": "bench -engine null -ops 10"})
	if m := f.nextOf("queued"); m.num("position") != 1 {
		t.Fatalf("follower run: %v, want position 1 behind the running one", m)
	}
	p := dial(t, ts, "", nil)
	p.send(map[string]string{"type": "run", "id": "c1", "room": code, "cell": "bench -engine null -ops 10"})
	if m := p.nextOf("queued"); m.num("position") != 1 {
		t.Errorf("presenter run: %v, want position 1, ahead of the follower's", m)
	}
	for {
		m := f.next()
		if m.str("type") == "queued" && m.str("id") == "f1" {
			if m.num("position") != 2 {
				t.Errorf("follower run after the presenter's: %v, want position 2", m)
			}
			break
		}
	}
	busy.send(map[string]string{"type": "cancel", "id": "long"})
	if ms := f.until("f1", "done"); !strings.Contains(types(ms), "result") {
		t.Errorf("follower run: %s, want a result", types(ms))
	}
}

// TestShareTargetsDamaged: a damaged share-targets.json does not stop
// the server: it is moved aside, the log names where, and the server
// starts with no targets and can keep new ones.
func TestShareTargetsDamaged(t *testing.T) {
	for name, content := range map[string]string{"empty": "", "garbage": "garbage", "an object": `{"url":"http://10.0.0.5:8080"}`, "numbers": `[1,2]`, "cut off": `["http://10.0.0.5:8080"`} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, shareTargetsFile)
			if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
			var log bytes.Buffer
			s := newServer(t, func(c *Config) { c.DataDir, c.Log = dir, &log })
			aside, _ := filepath.Glob(path + ".damaged-*")
			if len(aside) != 1 || !strings.Contains(log.String(), aside[0]) {
				t.Fatalf("moved aside: %v; log %q; want one file, named in the log", aside, log.String())
			}
			if b, _ := os.ReadFile(aside[0]); string(b) != content {
				t.Errorf("the file moved aside holds %q, want %q", b, content)
			}
			ts := startServer(t, s)
			if st, m := post(t, ts, "POST", "/api/share-target", `{"url":"http://10.0.0.9:8080"}`); st != 200 {
				t.Fatalf("adding a target after the damaged file: %d %v", st, m)
			}
			if b, _ := os.ReadFile(path); string(b) != `["http://10.0.0.9:8080"]` {
				t.Errorf("%s: %q", shareTargetsFile, b)
			}
		})
	}
}

// TestRoomPollMeasureRefused: when the run queue refuses the poll's
// measurement, the poll opens again (nothing was measured), and the
// presenter and every follower are told why; predictions are taken again.
func TestRoomPollMeasureRefused(t *testing.T) {
	s, ts := fullQueueServer(t)
	code := openRoom(t, ts)
	post(t, ts, "POST", "/api/rooms/"+code+"/polls", `{"quiz":"count"}`)
	f := dialRoom(t, ts, code)
	p := dial(t, ts, "", nil)
	p.send(map[string]string{"type": "run", "id": "m1", "cell_id": "always-run", "room": code, "poll": "p1", "cell": "bench -engine null -ops 500"})
	for who, cl := range map[string]*wsClient{"presenter": p, "follower": f} {
		if e := cl.nextOf("error"); e.str("id") != "m1" || !strings.Contains(e.str("message"), "queue") || !strings.Contains(e.str("message"), "p1 is open again") {
			t.Errorf("%s: %v, want the refusal naming the queue and the reopened poll", who, e)
		}
	}
	for {
		m := f.nextOf("poll")
		if m["poll"].(map[string]any)["state"] == "open" && m["poll"].(map[string]any)["measure_started_at"] == nil {
			break
		}
	}
	if st, m := post(t, ts, "POST", "/api/rooms/"+code+"/polls/p1/predict", `{"browser":"after","value":"3"}`); st != http.StatusOK {
		t.Errorf("a prediction after the refused measurement: %d %v, want 200", st, m)
	}
	id := s.rooms.Open(code).ID
	if polls, err := s.arch.RoomPolls(context.Background(), id); err != nil || !polls[0].MeasureStarted.IsZero() || len(polls[0].Predictions) != 1 {
		t.Errorf("the archived poll: %+v, %v; want no measure start and the prediction", polls, err)
	}
}

// TestRoomRunRefusedSameAudience: a presenter's run the queue refuses
// sends its error and its done to the same audience, the presenter and
// every follower (who heard room_run): the follower's page ends the run it
// was shown, and the presenter's page hears done for its run as well.
func TestRoomRunRefusedSameAudience(t *testing.T) {
	_, ts := fullQueueServer(t)
	code := openRoom(t, ts)
	f := dialRoom(t, ts, code)
	p := dial(t, ts, "", nil)
	p.send(map[string]string{"type": "run", "id": "m1", "cell_id": "always-run", "room": code, "cell": "bench -engine null -ops 500"})
	for who, cl := range map[string]*wsClient{"presenter": p, "follower": f} {
		var seq []string
		for _, m := range cl.until("m1", "done") {
			if m.str("id") == "m1" {
				seq = append(seq, m.str("type"))
				if m.str("type") == "error" && !strings.Contains(m.str("message"), "queue") {
					t.Errorf("%s: error %q, want the queue's refusal", who, m.str("message"))
				}
			}
		}
		want := "error done"
		if who == "follower" {
			want = "room_run error done"
		}
		if got := strings.Join(seq, " "); got != want {
			t.Errorf("%s heard %q for the refused run, want %q", who, got, want)
		}
	}
}

// lockWatch is an archive that notes whether a presenter's run stores
// the room's state or its poll's measurement start while the room is
// locked: those writes wait for the archive's group commit, on the
// presenter's socket reader, and every ballot and follower message of
// the room would wait on the lock meanwhile.
type lockWatch struct {
	archive.Archive
	room   atomic.Pointer[classroom.Room] // watched while set
	rooms  atomic.Int32                   // room writes seen while watched
	polls  atomic.Int32                   // measurement starts seen
	locked atomic.Int32                   // writes made under the room's lock
}

// check counts a write made while the watched room is locked: a
// goroutine cannot take the lock while the caller holds it.
func (a *lockWatch) check(r *classroom.Room) {
	free := make(chan struct{})
	go func() { r.Lock(); r.Unlock(); close(free) }()
	select {
	case <-free:
	case <-time.After(5 * time.Second): // held by the caller, who waits for this write
		a.locked.Add(1)
	}
}

func (a *lockWatch) UpdateRoom(ctx context.Context, ar *archive.Room) error {
	if r := a.room.Load(); r != nil {
		a.rooms.Add(1)
		a.check(r)
	}
	return a.Archive.UpdateRoom(ctx, ar)
}

func (a *lockWatch) UpdatePoll(ctx context.Context, p *archive.Poll) error {
	if r := a.room.Load(); r != nil && !p.MeasureStarted.IsZero() && p.Measured == nil {
		a.polls.Add(1)
		a.check(r)
	}
	return a.Archive.UpdatePoll(ctx, p)
}

// TestRoomRunStoresUnlocked: a presenter's run that measures a poll
// stores the room's new expiry and the poll's measurement start without
// holding the room's lock.
func TestRoomRunStoresUnlocked(t *testing.T) {
	dir := t.TempDir()
	a, err := archive.Open(context.Background(), "", dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() }) // after the server's Close (cleanups run last first)
	w := &lockWatch{Archive: a}
	s := newServer(t, func(c *Config) { c.Archive, c.DataDir = w, dir })
	ts := startServer(t, s)
	code := openRoom(t, ts)
	if st, m := post(t, ts, "POST", "/api/rooms/"+code+"/polls", `{"quiz":"count"}`); st != 201 {
		t.Fatalf("open poll: %d %v", st, m)
	}
	p := dial(t, ts, "", nil)
	w.room.Store(s.rooms.Open(code))
	p.send(map[string]string{"type": "run", "id": "c1", "cell_id": "always-run", "room": code, "poll": "p1", "cell": "bench -engine null -ops 500"})
	p.until("c1", "done")
	w.room.Store(nil)
	if w.rooms.Load() == 0 || w.polls.Load() == 0 {
		t.Fatalf("stored %d room states and %d measurement starts during the run, want both", w.rooms.Load(), w.polls.Load())
	}
	if n := w.locked.Load(); n != 0 {
		t.Errorf("%d of the run's writes were made under the room's lock", n)
	}
}
