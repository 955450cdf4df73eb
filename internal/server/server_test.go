package server

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/gorilla/websocket"

	"kvlab/internal/server/web"
)

func TestRoutes(t *testing.T) {
	s := newServer(t, nil)
	tests := []struct {
		path     string
		code     int
		ctype    string
		contains string
	}{
		{"/", 200, "text/html", "A fixture lesson"},
		{"/", 200, "text/html", `data-cells="always-run cell-2"`},
		{"/lessons/01-fixture", 200, "text/html", `<section class="cell" id="cell-always-run"`},
		{"/lessons/02-plain", 200, "text/html", `rel="prev"`},
		{"/lessons/nope", 404, "text/html", "There is no lesson"},
		{"/lessons/Bad_Name", 404, "text/html", "not a lesson name"},
		{"/static/app.js", 200, "text/javascript", "from './cells.js'"},
		{"/static/cells.js", 200, "text/javascript", "new WebSocket"},
		{"/static/app.css", 200, "text/css", "--bg"},
		{"/static/favicon.svg", 200, "image/svg+xml", "<svg"},
		{"/static/chroma.css", 200, "text/css", `[data-theme="dark"] .chroma`},
		{"/static/wasm/README.md", 200, "text/markdown", "make wasm"},
		{"/static/nope.js", 404, "", ""},
		{"/static/wasm", 404, "", ""},
		{"/nothing-here", 404, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			w := get(t, s, tt.path)
			if w.Code != tt.code {
				t.Fatalf("got status %d, want %d; body %.200s", w.Code, tt.code, w.Body)
			}
			if ct := w.Header().Get("Content-Type"); !strings.HasPrefix(ct, tt.ctype) {
				t.Errorf("got Content-Type %q, want %q", ct, tt.ctype)
			}
			if !strings.Contains(w.Body.String(), tt.contains) {
				t.Errorf("body does not contain %q", tt.contains)
			}
		})
	}
}

func TestMethodNotAllowed(t *testing.T) {
	s := newServer(t, nil)
	w := httptest.NewRecorder()
	r := httptest.NewRequest("POST", "/lessons/01-fixture", nil)
	r.Host = "localhost"
	s.ServeHTTP(w, r)
	if w.Code != http.StatusMethodNotAllowed {
		t.Errorf("got %d, want 405", w.Code)
	}
}

func TestPathTraversal(t *testing.T) {
	s := newServer(t, nil)
	paths := []string{
		"/static/../server.go",
		"/static/%2e%2e/server.go",
		"/static/..%2fserver.go",
		"/static/%2e%2e%2f%2e%2e%2fgo.mod",
		"/static/wasm/../../go.mod",
		"/static//etc/passwd",
		"/static/..\\static.go",
		"/static/.%2e/internal/server/server.go",
		"/lessons/..%2f..%2fgo.mod",
		"/lessons/../go.mod",
		"/lessons/%2e%2e",
		"/lessons/01-fixture.md",
		"/lessons/testdata%2flessons%2f01-fixture",
		"/static/%252e%252e%252fgo.mod",
		"/static/%5c..%5cstatic.go",
		"/static/wasm%2f..%2f..%2fgo.mod",
		"/static/..%5c..%5cgo.mod",
		"/lessons/%5c..%5cgo.mod",
		"/lessons/%252e%252e%252fgo.mod",
		"/lessons/01-fixture%00.md",
	}
	for _, p := range paths {
		t.Run(p, func(t *testing.T) {
			w := get(t, s, p)
			body := w.Body.String()
			if w.Code == 200 && (strings.Contains(body, "package ") || strings.Contains(body, "module kvlab") || strings.Contains(body, "root:")) {
				t.Fatalf("got a file outside the served folders: status %d, body %.100s", w.Code, body)
			}
			if w.Code == 200 {
				t.Errorf("got status 200, want a 3xx or 4xx")
			}
		})
	}
}

func TestWasmGzip(t *testing.T) {
	plain := []byte("\x00asm plain")
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(plain)
	zw.Close()
	both := fstest.MapFS{"wasm/yaegi.wasm": {Data: plain}, "wasm/yaegi.wasm.gz": {Data: gz.Bytes()}}
	onlyPlain := fstest.MapFS{"wasm/yaegi.wasm": {Data: plain}}
	onlyGz := fstest.MapFS{"wasm/yaegi.wasm.gz": {Data: gz.Bytes()}}
	tests := []struct {
		name     string
		fs       fstest.MapFS
		accept   string
		code     int
		encoding string
		body     []byte
	}{
		{"gzip accepted", both, "gzip, deflate, br", 200, "gzip", gz.Bytes()},
		{"gzip not accepted", both, "", 200, "", plain},
		{"gzip refused", both, "gzip;q=0", 200, "", plain},
		{"no gz built", onlyPlain, "gzip", 200, "", plain},
		{"only gz built (make wasm), gzip accepted", onlyGz, "gzip", 200, "gzip", gz.Bytes()},
		{"only gz built (make wasm), gzip refused", onlyGz, "", 200, "", plain},
		{"nothing built", fstest.MapFS{}, "gzip", 404, "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newServer(t, func(c *Config) { c.Static = tt.fs })
			w := get(t, s, "/static/wasm/yaegi.wasm", "Accept-Encoding", tt.accept)
			if w.Code != tt.code {
				t.Fatalf("got status %d, want %d", w.Code, tt.code)
			}
			if tt.code != 200 {
				return
			}
			if got := w.Header().Get("Content-Encoding"); got != tt.encoding {
				t.Errorf("got Content-Encoding %q, want %q", got, tt.encoding)
			}
			if got := w.Header().Get("Content-Type"); got != "application/wasm" {
				t.Errorf("got Content-Type %q, want application/wasm", got)
			}
			if !bytes.Equal(w.Body.Bytes(), tt.body) {
				t.Errorf("got body %q, want %q", w.Body.Bytes(), tt.body)
			}
		})
	}
}

func TestGoldenLesson(t *testing.T) {
	s := newServer(t, nil)
	for _, slug := range []string{"01-fixture", "02-plain"} {
		t.Run(slug, func(t *testing.T) {
			w := get(t, s, "/lessons/"+slug)
			if w.Code != 200 {
				t.Fatalf("got status %d, want 200", w.Code)
			}
			golden := filepath.Join("testdata", "golden", slug+".html")
			if *update {
				if err := os.WriteFile(golden, w.Body.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -run TestGoldenLesson -update to create it)", err)
			}
			if got := w.Body.String(); got != string(want) {
				t.Errorf("rendered %s differs from %s (go test -update rewrites it):\n%s", slug, golden, firstDiff(got, string(want)))
			}
		})
	}
}

func firstDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < max(len(g), len(w)); i++ {
		var a, b string
		if i < len(g) {
			a = g[i]
		}
		if i < len(w) {
			b = w[i]
		}
		if a != b {
			return "line " + itoa(i+1) + ":\n got: " + a + "\nwant: " + b
		}
	}
	return "same lines"
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

func TestRenderedParts(t *testing.T) {
	s := newServer(t, nil)
	fixture := get(t, s, "/lessons/01-fixture").Body.String()
	plain := get(t, s, "/lessons/02-plain").Body.String()
	tests := []struct {
		name, page, want string
		present          bool
	}{
		{"exercise div", fixture, `<div class="exercise" id="exercise-percentile" data-exercise="percentile"></div>`, true},
		{"exercise script", fixture, `<script type="module" src="/static/exercise.js"></script>`, true},
		{"exercise css", fixture, `<link rel="stylesheet" href="/static/exercise.css">`, true},
		{"no exercise script", plain, `/static/exercise.js`, false},
		{"no exercise css", plain, `/static/exercise.css`, false},
		{"role log", fixture, `role="log"`, true},
		{"highlighted go", fixture, `<span class="kd">func</span>`, true},
		{"toc entry", fixture, `<a href="#running-a-cell">Running a cell</a>`, true},
		{"toc h3", fixture, `class="toc-l3"><a href="#a-plain-cell">`, true},
		{"next link", fixture, `href="/lessons/02-plain" rel="next"`, true},
		{"cell hash", fixture, `data-hash="` + web.TextHash("# the textbook fsync-per-write\nbench -engine null -sync always -workload fillrandom -ops 500\nbench -engine null -sync none -workload fillrandom -ops 500\n") + `"`, true},
		{"quiz numeric", fixture, `data-quiz="count" data-cell="always-run"`, true},
		{"quiz markdown", fixture, `How many puts did the <strong>first</strong> line measure?`, true},
		{"quiz choice", fixture, `<input type="radio" name="answer" value="2"> no`, true},
		{"quiz run", fixture, `data-quiz="path" data-run`, true},
		{"answer not in page", fixture, `$0.latency.put.count`, false},
		{"no external", fixture, `https://cdn`, false},
		{"gfm table", plain, `<table>`, true},
		// The typographer's quotes and dashes reach the contents as
		// characters, not as entities escaped twice.
		{"toc typography", plain, `>The instrument’s own ceiling – and “quotes”</a>`, true},
		{"no raw entity", plain, `&amp;rsquo;`, false},
		{"shell highlighted", plain, `class="chroma"`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := strings.Contains(tt.page, tt.want); got != tt.present {
				t.Errorf("page contains %q: got %v, want %v", tt.want, got, tt.present)
			}
		})
	}
}

func TestAuthorModeReload(t *testing.T) {
	dir := t.TempDir()
	write := func(title string) {
		src := "---\ntitle: " + title + "\norder: 1\n---\nbody\n"
		if err := os.WriteFile(filepath.Join(dir, "01-a.md"), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		// Make sure the modification time moves even on coarse clocks.
		os.Chtimes(filepath.Join(dir, "01-a.md"), time.Now(), time.Now().Add(time.Duration(len(title))*time.Second))
	}
	write("First")
	s := newServer(t, func(c *Config) { c.Lessons = os.DirFS(dir); c.Reload = true })
	if body := get(t, s, "/lessons/01-a").Body.String(); !strings.Contains(body, "First") {
		t.Fatalf("first render lacks the title")
	}
	write("Second title")
	if body := get(t, s, "/lessons/01-a").Body.String(); !strings.Contains(body, "Second title") {
		t.Errorf("after editing the file the page still shows the old title")
	}
	os.WriteFile(filepath.Join(dir, "01-a.md"), []byte("no front matter"), 0o644)
	os.Chtimes(filepath.Join(dir, "01-a.md"), time.Now(), time.Now().Add(time.Hour))
	w := get(t, s, "/lessons/01-a")
	if w.Code != 500 || !strings.Contains(w.Body.String(), "missing front matter") {
		t.Errorf("broken lesson: got %d %.300s, want 500 naming the problem", w.Code, w.Body)
	}
}

func TestNewErrors(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"public without token", Config{Addr: "0.0.0.0:8080"}, "pass -token"},
		{"lan without token", Config{Addr: "192.168.1.5:8080"}, "not a loopback"},
		{"bad lessons", Config{Lessons: fstest.MapFS{"01-a.md": {Data: []byte("x")}}}, "missing front matter"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.cfg.DataDir = t.TempDir()
			s, err := New(tt.cfg)
			if err == nil {
				s.Close()
				t.Fatalf("got no error, want one containing %q", tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestOriginRejected(t *testing.T) {
	s := newServer(t, nil)
	ts := startServer(t, s)
	u := "ws" + strings.TrimPrefix(ts.URL, "http") + "/ws"
	hdr := http.Header{"Origin": {"http://evil.example"}}
	_, resp, err := websocket.DefaultDialer.Dial(u, hdr)
	if err == nil {
		t.Fatal("websocket from another origin: got a connection, want 403")
	}
	if resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("got %v, want HTTP 403", resp)
	}
	// Same origin passes.
	dial(t, ts, "", http.Header{"Origin": {ts.URL}})

	req, _ := http.NewRequest("POST", ts.URL+"/api/quiz", strings.NewReader(`{}`))
	req.Header.Set("Origin", "http://evil.example")
	r, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if r.StatusCode != http.StatusForbidden {
		t.Errorf("quiz POST from another origin: got %d, want 403", r.StatusCode)
	}
}

func TestTokenEnforced(t *testing.T) {
	s := newServer(t, func(c *Config) { c.Addr = "0.0.0.0:8080"; c.Token = "s3cret" })
	ts := startServer(t, s)
	if !strings.Contains(get(t, s, "/lessons/01-fixture").Body.String(), "data-token-required") {
		t.Error("the page does not tell the script that a token is needed")
	}
	tests := []struct {
		name, query, token string
		ok                 bool
	}{
		{"no token", "", "", false},
		{"wrong token", "?token=nope", "", false},
		{"wrong token in message", "", "s3cre", false},
		{"token in url", "?token=s3cret", "", true},
		{"token in message", "", "s3cret", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := dial(t, ts, tt.query, nil)
			c.send(map[string]string{"type": "run", "id": "r", "cell": "bench -engine null -ops 100", "token": tt.token})
			ms := c.until("r", "done")
			got := types(ms)
			if tt.ok && got != "queued started result done" {
				t.Errorf("got %s, want queued started result done", got)
			}
			if !tt.ok && (got != "error done" || !strings.Contains(ms[0].str("message"), "token")) {
				t.Errorf("got %s (%v), want an error naming the token, then done", got, ms[0])
			}
		})
	}
	// The quiz's own measurement needs the token too.
	body := `{"lesson":"01-fixture","quiz":"path","answer":"1"}`
	r, err := http.Post(ts.URL+"/api/quiz", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if r.StatusCode != http.StatusForbidden {
		t.Errorf("run: quiz without token: got %d, want 403", r.StatusCode)
	}
}
