package server

import (
	"encoding/json"
	"html/template"
	"io"
	"net/http"
	"strings"
	"testing"

	"kvlab/lessons"
)

// readerScript is a reader's own workload script, as a page's script
// editor sends it: a put and a get of one key per unit (the null floor
// keeps nothing, so its get finds nil).
const readerScript = `return { name = "mine", run = function(ctx) kv.put("n", "x"); local v = kv.get("n"); assert(v == nil or v == "x") end }`

// On a server of its own (loopback, no token) a run message's script
// runs as -script mine, beside the lesson's own scripts.
func TestWSScriptMineRuns(t *testing.T) {
	s := newServer(t, func(c *Config) { c.Addr = "127.0.0.1:8080" })
	ts := startServer(t, s)
	c := dial(t, ts, "", nil)
	c.send(map[string]string{"type": "run", "id": "m", "cell": "bench -script mine -engine kv -sync none -ops 50\nbench -script mixed -engine kv -index ordered -sync none -ops 50 -items 20", "script": readerScript})
	ms := c.until("m", "done")
	var got []string
	for _, m := range ms {
		if m.str("type") == "error" {
			t.Fatalf("error: %s", m.str("message"))
		}
		if m.str("type") != "result" {
			continue
		}
		var rs []struct {
			Engine string `json:"engine"`
			Name   string `json:"name"`
			Units  int64  `json:"units"`
			ByOp   map[string]struct {
				Calls int64 `json:"calls"`
			} `json:"by_op"`
		}
		b, _ := json.Marshal(m["result"])
		if err := json.Unmarshal(b, &rs); err != nil {
			t.Fatal(err)
		}
		kv := rs[len(rs)-1]
		got = append(got, kv.Name)
		if kv.Units != 50 || kv.Engine != "kv" {
			t.Errorf("%s on %s: %d units, want 50 on kv", kv.Name, kv.Engine, kv.Units)
		}
		if kv.Name == "mine" && (kv.ByOp["put"].Calls != 50 || kv.ByOp["get"].Calls != 50) {
			t.Errorf("the reader's script on kv: %+v; want 50 puts and 50 gets", kv.ByOp)
		}
	}
	if strings.Join(got, " ") != "mine mixed" {
		t.Errorf("results of %q, want the reader's script's, then mixed's", got)
	}
	checkNoRunDirs(t, s.cfg.DataDir)
}

// Anywhere a server serves others, a reader's script is refused before
// the run is queued, with why, as -engine mine is; a lesson's own
// script still runs there; a script with no -script mine line to run
// it, a -script mine line with no script and an oversized script are
// refused on the reader's own server too.
func TestWSScriptMineRefused(t *testing.T) {
	own := func(c *Config) { c.Addr = "127.0.0.1:8080" }
	tests := []struct {
		name  string
		mod   func(*Config)
		query string
		msg   map[string]string
		want  string // "" : the run's results come back
	}{
		{"beyond loopback", func(c *Config) { c.Addr, c.Token = "192.0.2.1:8080", "tok" }, "?token=tok",
			map[string]string{"cell": "bench -script mine -engine kv -ops 10", "script": readerScript}, "-script mine runs your own workload script on the machine that serves the page; this server listens on 192.0.2.1:8080, beyond this machine"},
		{"beyond loopback, a lesson's script", func(c *Config) { c.Addr, c.Token = "192.0.2.1:8080", "tok" }, "?token=tok",
			map[string]string{"cell": "bench -script mixed -engine kv -index ordered -sync none -ops 10 -items 20"}, ""},
		{"a token on loopback", func(c *Config) { c.Addr, c.Token = "127.0.0.1:8080", "tok" }, "?token=tok",
			map[string]string{"cell": "bench -script mine -engine kv -ops 10", "script": readerScript}, "this server has a token"},
		{"a token, the line alone", func(c *Config) { c.Addr, c.Token = "127.0.0.1:8080", "tok" }, "?token=tok",
			map[string]string{"cell": "bench -script mine -engine kv -ops 10"}, "this server has a token"},
		{"a script with no line to run it", own, "",
			map[string]string{"cell": "bench -script mixed -engine kv -index ordered -ops 10", "script": readerScript}, "only a line with -script mine runs the script"},
		{"the line with no script", own, "",
			map[string]string{"cell": "bench -script mine -engine kv -ops 10"}, "-script mine: runs your own script, and none was given"},
		{"a script too long", own, "",
			map[string]string{"cell": "bench -script mine -engine kv -ops 10", "script": strings.Repeat("-", 33<<10)}, "must be at most"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newServer(t, tt.mod)
			ts := startServer(t, s)
			c := dial(t, ts, tt.query, nil)
			m := map[string]string{"type": "run", "id": "m"}
			for k, v := range tt.msg {
				m[k] = v
			}
			c.send(m)
			ms := c.until("m", "done")
			var errs []string
			results := 0
			for _, m := range ms {
				switch m.str("type") {
				case "error":
					errs = append(errs, m.str("message"))
				case "result":
					results++
				}
			}
			if tt.want == "" {
				if results != 1 || len(errs) > 0 {
					t.Errorf("%d results, errors %q; want the lesson's script to run", results, errs)
				}
				return
			}
			if results > 0 {
				t.Errorf("%d results came back", results)
			}
			if len(errs) == 0 || !strings.Contains(errs[0], tt.want) {
				t.Errorf("errors %q, want the first containing %q", errs, tt.want)
			}
		})
	}
}

// The lesson's own script, sent as its page shows it before an edit,
// runs on a server with a token too; the same cell with an edited
// script is refused there.
func TestLessonScriptRunsAnywhere(t *testing.T) {
	s := newServer(t, func(c *Config) { c.Addr, c.Token, c.Lessons = "127.0.0.1:8080", "tok", lessons.FS })
	ts := startServer(t, s)
	l, _, _, err := s.course.find("09-benchmarking-discipline")
	if err != nil || l == nil {
		t.Fatalf("lesson 9: %v", err)
	}
	cell := l.Cell("my-script")
	if cell == nil || cell.Script == "" {
		t.Fatal("lesson 9 has no cell my-script with a script of its own")
	}
	// The page shows the script in an editor before the cell.
	resp, err := http.Get(ts.URL + "/lessons/" + l.Slug)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	ed, c := strings.Index(string(page), `<textarea class="lab-script-src`), strings.Index(string(page), `id="cell-my-script"`)
	if ed < 0 || c < ed || !strings.Contains(string(page), template.HTMLEscapeString(cell.Script)) {
		t.Errorf("lesson 9's page: script editor at %d, cell at %d; want the editor, holding the script, before the cell", ed, c)
	}
	for _, tt := range []struct {
		script string
		want   string // "": it runs
	}{
		{cell.Script, ""},
		{cell.Script + "\n-- edited\n", "this server has a token"},
	} {
		c := dial(t, ts, "?token=tok", nil)
		c.send(map[string]string{"type": "run", "id": "m", "lesson": l.Slug, "cell_id": cell.ID, "token": "tok",
			"cell": "bench -script mine -engine kv -index ordered -sync none -ops 20 -items 3 -users 5", "script": tt.script})
		var errs []string
		results := 0
		for _, m := range c.until("m", "done") {
			switch m.str("type") {
			case "error":
				errs = append(errs, m.str("message"))
			case "result":
				results++
			}
		}
		if tt.want == "" && (results != 1 || len(errs) > 0) {
			t.Errorf("the lesson's own script: %d results, errors %q; want it to run", results, errs)
		}
		if tt.want != "" && (results > 0 || len(errs) == 0 || !strings.Contains(errs[0], tt.want)) {
			t.Errorf("an edited script: %d results, errors %q; want it refused with %q", results, errs, tt.want)
		}
	}
}
