package server

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"kvlab/internal/archive"
)

// TestRebindingRefusedOnEveryRoute: a page renamed to this server's
// address (DNS rebinding) sends its own name as Host and a matching
// Origin, from this machine. Every route but a static file refuses it
// with 403, on a server without a token and on one with a token, which
// still answers its IP address and the names given with -host.
func TestRebindingRefusedOnEveryRoute(t *testing.T) {
	for _, tokened := range []bool{false, true} {
		t.Run(fmt.Sprintf("token=%v", tokened), func(t *testing.T) {
			s := newServer(t, func(c *Config) {
				if tokened {
					c.Token, c.Hosts = "sekrit", []string{"lab.example.edu"}
				}
			})
			ts := startServer(t, s)
			code, tok := openRoomSecret(t, ts)
			room := s.rooms.Open(code)
			if _, err := s.arch.Add(t.Context(), &archive.Run{Kind: "probe", Spec: "probe", Result: []byte(`{"kind":"probe"}`)}); err != nil {
				t.Fatal(err)
			}
			port := ts.URL[strings.LastIndex(ts.URL, ":")+1:]
			routes := []struct{ method, path, body string }{
				{"GET", "/", ""}, {"GET", "/lessons/01-fixture", ""}, {"GET", "/ws", ""},
				{"POST", "/api/quiz", `{}`}, {"GET", "/api/quiz/queue", ""},
				{"GET", "/runs", ""}, {"GET", "/runs/1", ""}, {"GET", "/runs/1.json", ""}, {"GET", "/runs?format=tsv", ""}, {"GET", "/compare?a=1&b=1", ""},
				{"POST", "/api/predict", `{}`},
				{"POST", "/api/rooms", `{"lesson":"01-fixture"}`}, {"GET", "/api/rooms/" + code, ""},
				{"POST", "/api/rooms/" + code + "/section", `{"presenter":"` + tok + `","section":1}`},
				{"POST", "/api/rooms/" + code + "/close", `{"presenter":"` + tok + `"}`},
				{"GET", "/api/rooms/" + code + "/board?measure=p99", ""},
				{"DELETE", "/api/rooms/" + code + "/board/1", `{"presenter":"` + tok + `"}`},
				{"POST", "/api/rooms/" + code + "/share", `{}`}, {"OPTIONS", "/api/rooms/" + code + "/share", ""},
				{"GET", "/api/share-target", ""}, {"POST", "/api/share-target", `{"url":"http://attacker.example:9"}`},
				{"DELETE", "/api/share-target", `{"url":"http://attacker.example:9"}`},
				{"GET", "/classes", ""}, {"POST", "/classes", "token=sekrit"}, {"GET", fmt.Sprintf("/classes/%d", room.ID), ""},
				{"GET", "/classes/compare?a=1&b=1", ""},
				{"GET", "/join", ""}, {"GET", "/room/" + code, ""}, {"GET", "/present/" + code, ""}, {"GET", "/room/" + code + "/board", ""},
				{"GET", "/room/" + code + "/qr.svg", ""}, {"GET", "/room/" + code + "/ws", ""},
			}
			send := func(method, path, body, host string) (int, string) {
				r, _ := http.NewRequest(method, ts.URL+path, strings.NewReader(body))
				r.Host = host
				r.Header.Set("Origin", "http://"+host)
				if strings.HasPrefix(body, "token=") {
					r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				}
				resp, err := http.DefaultClient.Do(r)
				if err != nil {
					t.Fatalf("%s %s: %v", method, path, err)
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				return resp.StatusCode, string(b)
			}
			for _, rt := range routes {
				if st, body := send(rt.method, rt.path, rt.body, "evil.example:"+port); st != http.StatusForbidden || !strings.Contains(body, "not") {
					t.Errorf("%s %s with Host evil.example: %d %.120s, want 403", rt.method, rt.path, st, body)
				}
			}
			if urls := s.targets.list(); len(urls) != 0 {
				t.Errorf("share targets after the rebinding requests: %v, want none", urls)
			}
			room.Lock()
			closed := room.Closed
			room.Unlock()
			if closed {
				t.Errorf("the room was closed by a rebinding request")
			}
			if st, _ := send("GET", "/static/app.css", "", "evil.example:"+port); st != http.StatusOK {
				t.Errorf("a static file with a foreign Host: %d, want 200", st)
			}
			// The names this server does answer.
			ok := []string{"127.0.0.1:" + port, "localhost:" + port, "class.localhost:" + port}
			if tokened {
				ok = append(ok, "10.0.0.5:"+port, "[fe80::1]:"+port, "lab.example.edu:"+port, "LAB.example.edu.:"+port)
			} else {
				for _, h := range []string{"10.0.0.5:" + port, "lab.example.edu:" + port} {
					if st, _ := send("GET", "/", "", h); st != http.StatusForbidden {
						t.Errorf("GET / with Host %s on a server without a token: %d, want 403", h, st)
					}
				}
			}
			for _, h := range ok {
				if st, body := send("GET", "/api/rooms/"+code, "", h); st != http.StatusOK {
					t.Errorf("GET /api/rooms/CODE with Host %s: %d %.120s, want 200", h, st, body)
				}
			}
		})
	}
}
