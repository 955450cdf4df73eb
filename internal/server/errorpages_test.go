package server

import (
	"html"
	"net/http"
	"strings"
	"testing"
)

// Every error a person can reach is the site's error page: its layout,
// a sentence, no package prefix ("archive: ", "classroom: ") and, on a
// server that serves others, no path of the server's machine. The owner
// on loopback may see the archive's file.
func TestErrorPages(t *testing.T) {
	shared := newServer(t, func(c *Config) { c.Token = "secret-token" })
	dataDir := shared.cfg.DataDir
	tests := []struct {
		path string
		code int
		want string
	}{
		{"/no/such/page", http.StatusNotFound, "There is no page at this address"},
		{"/lessons/01-fixture/extra", http.StatusNotFound, "There is no page at this address"},
		{"/static/no-such-file.js", http.StatusNotFound, "There is no page at this address"},
		{"/runs/999999", http.StatusNotFound, "Run 999999 is not in this server's archive"},
		{"/runs/abc", http.StatusNotFound, "is not a run id"},
		{"/compare?a=999999&b=1000000", http.StatusNotFound, "no such run: run 1000000 is not in this server's archive"},
		{"/room/zz", http.StatusNotFound, "Ask the presenter for the code"},
	}
	for _, tt := range tests {
		w := get(t, shared, tt.path)
		body := html.UnescapeString(w.Body.String())
		if w.Code != tt.code || !strings.Contains(body, tt.want) {
			t.Errorf("%s: %d %q, want %d with %q", tt.path, w.Code, body, tt.code, tt.want)
		}
		if !strings.Contains(body, `class="error-page"`) || !strings.Contains(body, `href="/"`) {
			t.Errorf("%s: not the site's error page: %q", tt.path, body)
		}
		for _, bad := range []string{"404 page not found", "archive: no such", "classroom: ", "server: ", dataDir, "kvlab.db"} {
			if strings.Contains(body, bad) {
				t.Errorf("%s: the page shows %q: %q", tt.path, bad, body)
			}
		}
	}
	// A code typed wrong is said on the join form again, as a person reads it.
	if body := html.UnescapeString(get(t, shared, "/join?code=ABCDE-FGHJ0").Body.String()); !strings.Contains(body, "not a room code") || strings.Contains(body, "classroom: ") {
		t.Errorf("/join with a wrong code: want the join form saying it is not a room code, without a package prefix: %q", body)
	}
	if body := get(t, shared, "/runs").Body.String(); strings.Contains(body, dataDir) || strings.Contains(body, "kvlab.db") {
		t.Errorf("/runs on a server with a token names the archive's file")
	}
	// The owner, on loopback without a token, is told where the archive is.
	own := newServer(t, nil)
	if body := get(t, own, "/runs/999999").Body.String(); !strings.Contains(body, own.cfg.DataDir) {
		t.Errorf("the owner's /runs/999999 does not name the archive's file: %q", body)
	}
}
