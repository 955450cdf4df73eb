package server

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
)

const (
	pagesToken     = "pages-token"
	pagesPresenter = "pages-presenter-token"
)

// roomCall sends a JSON request to s as the page on s would (same
// origin) and decodes the reply into out.
func roomCall(t *testing.T, s http.Handler, method, path string, body any, out any) int {
	t.Helper()
	var rd *strings.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = strings.NewReader(string(b))
	} else {
		rd = strings.NewReader("")
	}
	r := httptest.NewRequest(method, "http://localhost"+path, rd)
	r.RemoteAddr = "127.0.0.1:40000"
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Origin", "http://localhost")
	w := httptest.NewRecorder()
	s.ServeHTTP(w, r)
	if out != nil {
		json.Unmarshal(w.Body.Bytes(), out)
	}
	return w.Code
}

// pagesRoom starts a server with a token and a presenter token, and a
// room on the fixture lesson (started from this machine); it returns the
// room's code as shown (XXXXX-XXXXX), its id and its presenter secret.
func pagesRoom(t *testing.T) (*Server, string, int64, string) {
	t.Helper()
	s := newServer(t, func(c *Config) { c.Token, c.PresenterToken = pagesToken, pagesPresenter })
	var created struct {
		Code   string `json:"code"`
		ID     int64  `json:"id"`
		Secret string `json:"presenter_secret"`
	}
	if code := roomCall(t, s, "POST", "/api/rooms", map[string]string{"lesson": "01-fixture"}, &created); code != http.StatusCreated || created.Secret == "" {
		t.Fatalf("POST /api/rooms: got %d and secret %q, want 201 and a secret", code, created.Secret)
	}
	return s, created.Code, created.ID, created.Secret
}

func TestRoomPagesFindTheirRoom(t *testing.T) {
	s, code, _, _ := pagesRoom(t)
	plain := strings.ReplaceAll(code, "-", "")
	tests := []struct {
		path   string
		status int
		want   []string // in the body, or the Location for a redirect
	}{
		{"/join", 200, []string{`<form class="join-form" method="get" action="/join">`}},
		{"/join?code=" + strings.ToLower(plain), http.StatusSeeOther, []string{"/room/" + code}},
		{"/join?code=ABCDE-FGHJ0", http.StatusBadRequest, []string{"not a room code", "ABCDE-FGHJ0"}},
		{"/room/" + code, 200, []string{`class="room-page room-follow"`, `data-code="` + code + `"`, `data-section="0"`, `data-section="1"`, `data-section="2"`, "follows the presenter"}},
		{"/present/" + code, 200, []string{`class="room-page room-present"`, `/room/` + code + `/qr.svg`, "http://localhost/room/" + code}},
		{"/room/" + code + "/board", 200, []string{`class="room-page room-board"`, `value="fdatasync_p50"`, `value="always_ops_per_sec"`, `value="p99"`}},
		{"/room/" + strings.ToLower(plain), http.StatusMovedPermanently, []string{"/room/" + code}},
		{"/room/" + strings.ToLower(plain) + "/board?measure=p99", http.StatusMovedPermanently, []string{"/room/" + code + "/board?measure=p99"}},
		{"/present/" + plain, http.StatusMovedPermanently, []string{"/present/" + code}},
		{"/room/ABCDE-FGHJK", 404, []string{"no open room with code ABCDE-FGHJK", "expire"}},
		{"/present/ABCDE-FGHJK", 404, []string{"no open room with code ABCDE-FGHJK"}},
		{"/room/not-a-code", 404, []string{"not a room code"}},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			w := get(t, s, tt.path)
			if w.Code != tt.status {
				t.Fatalf("got %d, want %d: %s", w.Code, tt.status, w.Body.String())
			}
			got := w.Body.String()
			if loc := w.Header().Get("Location"); loc != "" {
				got = loc
			}
			for _, want := range tt.want {
				if !strings.Contains(got, want) {
					t.Errorf("got %q, want %q in it", got, want)
				}
			}
		})
	}
}

// Past classes are the instructor's: from this machine, or with the
// presenter token (not the run token, not one room's secret); never to
// another origin.
func TestClassesNeedThisMachineOrTheToken(t *testing.T) {
	s, code, id, secret := pagesRoom(t)
	var poll struct {
		ID string `json:"id"`
	}
	if st := roomCall(t, s, "POST", "/api/rooms/"+code+"/polls", map[string]string{"presenter": secret, "quiz": "count"}, &poll); st != http.StatusCreated {
		t.Fatalf("opening a poll: got %d", st)
	}
	for i, v := range []string{"400", "700"} {
		if st := roomCall(t, s, "POST", "/api/rooms/"+code+"/polls/"+poll.ID+"/predict", map[string]string{"browser": "b" + strconv.Itoa(i), "value": v}, nil); st != http.StatusOK {
			t.Fatalf("predicting: got %d", st)
		}
	}
	page := "/classes/" + strconv.FormatInt(id, 10)
	req := func(method, path, remote, origin string, form url.Values) *httptest.ResponseRecorder {
		r := httptest.NewRequest(method, "http://localhost"+path, strings.NewReader(form.Encode()))
		r.RemoteAddr = remote + ":40000"
		if form != nil {
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		if origin != "" {
			r.Header.Set("Origin", origin)
		}
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		return w
	}
	tok := url.Values{"token": {pagesPresenter}}
	tests := []struct {
		name, method, path, remote, origin string
		form                               url.Values
		status                             int
		want                               string
	}{
		{"list from this machine", "GET", "/classes", "127.0.0.1", "", nil, 200, code},
		{"class from this machine", "GET", page, "127.0.0.1", "", nil, 200, `"count":2`},
		{"list from elsewhere", "GET", "/classes", "192.0.2.7", "", nil, 401, `type="password" name="token"`},
		{"class from elsewhere", "GET", page, "192.0.2.7", "", nil, 401, "presenter token"},
		{"wrong token", "POST", "/classes", "192.0.2.7", "", url.Values{"token": {"nope"}}, 403, "not the presenter token"},
		{"the run token", "POST", page, "192.0.2.7", "", url.Values{"token": {pagesToken}}, 403, "not the presenter token"},
		{"the room's secret", "POST", page, "192.0.2.7", "", url.Values{"token": {secret}}, 403, "not the presenter token"},
		{"token", "POST", page, "192.0.2.7", "", tok, 200, `"quiz":"count"`},
		{"token carried in links", "POST", "/classes", "192.0.2.7", "", tok, 200, `<input type="hidden" name="token" value="` + pagesPresenter + `">`},
		{"compare", "POST", "/classes/compare", "192.0.2.7", "", url.Values{"token": {pagesPresenter}, "a": {strconv.FormatInt(id, 10)}, "b": {strconv.FormatInt(id, 10)}}, 200, "classes-side"},
		{"compare a bad id", "GET", "/classes/compare?a=x&b=1", "127.0.0.1", "", nil, 400, `a=&#34;x&#34; is not a class id`},
		{"no such class", "GET", "/classes/999", "127.0.0.1", "", nil, 404, "Class 999 is not in this server&#39;s archive"},
		{"another origin", "POST", page, "127.0.0.1", "http://evil.example", tok, 403, "is not this server"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := req(tt.method, tt.path, tt.remote, tt.origin, tt.form)
			if w.Code != tt.status || !strings.Contains(w.Body.String(), tt.want) {
				t.Errorf("got %d, want %d with %q in:\n%s", w.Code, tt.status, tt.want, w.Body.String())
			}
		})
	}
}

// The join panel of a room opened at a loopback address says students'
// devices cannot open it and how to serve the class on the network; at
// an address of the network it says nothing of the kind.
func TestJoinPanelSaysLoopbackIsLocal(t *testing.T) {
	s, code, _, _ := pagesRoom(t)
	s.cfg.Hosts = append(s.cfg.Hosts, "10.0.0.5")
	for _, tt := range []struct {
		host string
		warn bool
	}{{"localhost", true}, {"127.0.0.1:8080", true}, {"[::1]:8080", true}, {"10.0.0.5:8080", false}} {
		r := httptest.NewRequest("GET", "http://"+tt.host+"/present/"+code, nil)
		r.RemoteAddr = "127.0.0.1:40000"
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		body := w.Body.String()
		if w.Code != 200 {
			t.Fatalf("Host %s: got %d: %s", tt.host, w.Code, body)
		}
		got := strings.Contains(body, "Students' devices cannot open this address") && strings.Contains(body, "-addr 0.0.0.0:8080")
		if got != tt.warn {
			t.Errorf("Host %s: the join panel warns %v, want %v", tt.host, got, tt.warn)
		}
	}
}
