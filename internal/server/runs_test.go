package server

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"regexp"
	"strings"
	"testing"

	"kvlab/internal/archive"
	"kvlab/internal/archive/archivetest"
	"kvlab/internal/server/runspage"
)

// addBeforeAfterRuns archives ten runs of line 0 of the fixture's
// always-run cell, as one browser runs them: five of one spec, then five
// of another (a change and the runs before it), and returns their ids.
func addBeforeAfterRuns(t testing.TB, s *Server) []int64 {
	t.Helper()
	return addRuns(t, s, 10, func(i int, r *archive.Run) {
		base := archivetest.Synthetic(0, 3)
		if i >= 5 {
			base = archivetest.Synthetic(3, 3)
		}
		r.Kind, r.Spec, r.SpecFull, r.Engine, r.Sync, r.Workload, r.Result = base.Kind, base.Spec, base.SpecFull, base.Engine, base.Sync, base.Workload, base.Result
		r.Lesson, r.Cell, r.Browser, r.Line = "01-fixture", "always-run", testBrowser, 0
	})
}

// addRuns adds n synthetic runs (archivetest.Synthetic) and returns their ids.
func addRuns(t testing.TB, s *Server, n int, edit func(i int, r *archive.Run)) []int64 {
	t.Helper()
	var ids []int64
	for i := range n {
		r := archivetest.Synthetic(i, 3)
		if edit != nil {
			edit(i, r)
		}
		id, err := s.arch.Add(context.Background(), r)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return ids
}

var runLinkRE = regexp.MustCompile(`href="/runs/(\d+)"`)

// runLinks lists the run ids a /runs page links to, in order.
func runLinks(body string) []string {
	var out []string
	for _, m := range runLinkRE.FindAllStringSubmatch(body, -1) {
		out = append(out, m[1])
	}
	return out
}

func TestRunsPage(t *testing.T) {
	s := newServer(t, nil)
	ids := addRuns(t, s, 120, nil)
	w := get(t, s, "/runs")
	if w.Code != 200 {
		t.Fatalf("GET /runs: %d %s", w.Code, w.Body)
	}
	body := w.Body.String()
	links := runLinks(body)
	if len(links) != runspage.PageSize || links[0] != fmt.Sprint(ids[119]) || links[49] != fmt.Sprint(ids[70]) {
		t.Fatalf("first page links %d runs from %v to %v, want %d newest first (%d to %d)", len(links), links[0], links[len(links)-1], runspage.PageSize, ids[119], ids[70])
	}
	next := regexp.MustCompile(`href="(/runs\?before=\d+)"`).FindStringSubmatch(body)
	if next == nil {
		t.Fatal("the first page has no link to older runs")
	}
	w = get(t, s, strings.ReplaceAll(next[1], "&amp;", "&"))
	if l := runLinks(w.Body.String()); len(l) != 50 || l[0] != fmt.Sprint(ids[69]) {
		t.Errorf("second page starts at %v, want %d", l, ids[69])
	}

	// Filters: each one narrows to the runs that match it exactly.
	for _, f := range []struct {
		query string
		match func(r *archive.Run) bool
	}{
		{"lesson=02-lesson", func(r *archive.Run) bool { return r.Lesson == "02-lesson" }},
		{"cell=c3", func(r *archive.Run) bool { return r.Cell == "c3" }},
		{"engine=pebble", func(r *archive.Run) bool { return r.Engine == "pebble" }},
		{"sync=batch%3A64", func(r *archive.Run) bool { return r.Sync == "batch:64" }},
		{"workload=overwrite&engine=kv", func(r *archive.Run) bool { return r.Workload == "overwrite" && r.Engine == "kv" }},
	} {
		want := 0
		for i := range 120 {
			if f.match(archivetest.Synthetic(i, 3)) {
				want++
			}
		}
		got := runLinks(get(t, s, "/runs?"+f.query).Body.String())
		if len(got) != min(want, runspage.PageSize) || want == 0 {
			t.Errorf("/runs?%s lists %d runs, want %d", f.query, len(got), min(want, runspage.PageSize))
		}
		for _, id := range got {
			var n int64
			fmt.Sscan(id, &n)
			r, _ := s.arch.Get(context.Background(), n)
			if !f.match(r) {
				t.Errorf("/runs?%s lists run %d (%s %s %s %s %s), which does not match", f.query, n, r.Lesson, r.Cell, r.Engine, r.Sync, r.Workload)
			}
		}
	}
	if w := get(t, s, "/runs?before=x"); w.Code != 400 || !strings.Contains(w.Body.String(), "want a run id") {
		t.Errorf("before=x: got %d, want 400 naming the problem", w.Code)
	}
	if w := get(t, s, "/runs?engine=nothing"); !strings.Contains(w.Body.String(), "No run matches these filters") {
		t.Errorf("a filter that matches nothing says %q", w.Body.String())
	}
}

func TestRunPermalink(t *testing.T) {
	s := newServer(t, nil)
	ids := addRuns(t, s, 2, func(i int, r *archive.Run) {
		r.Lesson, r.Cell, r.Browser = "01-fixture", "always-run", testBrowser
		if i == 0 {
			r.Host = archive.HostID() // recorded here
		}
	})
	here, there := ids[0], ids[1]
	// The browser id is what cell quizzes trust: no public view shows it.
	for _, u := range []string{"/runs/%d", "/runs/%d.json", "/runs/%d.tsv", "/runs?x=%d"} {
		if body := get(t, s, fmt.Sprintf(u, here)).Body.String(); strings.Contains(body, testBrowser) {
			t.Errorf("GET %s shows the browser id %q", fmt.Sprintf(u, here), testBrowser)
		}
	}
	w := get(t, s, fmt.Sprintf("/runs/%d", here))
	body := w.Body.String()
	if w.Code != 200 || !strings.Contains(body, `id="run-data"`) || !strings.Contains(body, "bench -engine kv -sync always") ||
		!strings.Contains(body, `href="/lessons/01-fixture#cell-always-run"`) || !strings.Contains(body, fmt.Sprintf(`href="/runs/%d.json"`, here)) {
		t.Errorf("GET /runs/%d: %d, want the run's data, spec, cell link and exports:\n%s", here, w.Code, body)
	}
	if strings.Contains(body, "Recorded by another server") {
		t.Errorf("a run recorded here says it came from another server")
	}
	// The embedded data is the result the page renders, and cannot close the script.
	m := regexp.MustCompile(`(?s)<script type="application/json" id="run-data">(.*?)</script>`).FindStringSubmatch(body)
	var data struct {
		Spec   string          `json:"spec"`
		Result json.RawMessage `json:"result"`
	}
	if m == nil || json.Unmarshal([]byte(m[1]), &data) != nil || !strings.Contains(string(data.Result), `"p99_ns"`) {
		t.Errorf("run-data does not hold the result: %v", m)
	}
	if body := get(t, s, fmt.Sprintf("/runs/%d", there)).Body.String(); !strings.Contains(body, "Recorded by another server: host <b>synthetic/000000000000</b>") {
		t.Errorf("a run from another host does not say so:\n%s", body)
	}

	w = get(t, s, fmt.Sprintf("/runs/%d.json", here))
	var r archive.Run
	if w.Code != 200 || w.Header().Get("Content-Type") != "application/json" || json.Unmarshal(w.Body.Bytes(), &r) != nil || r.ID != here || len(r.Timeline) == 0 {
		t.Errorf("GET /runs/%d.json: %d %s, want the whole run", here, w.Code, w.Body)
	}
	w = get(t, s, fmt.Sprintf("/runs/%d.tsv", here))
	rows := strings.Split(strings.TrimSpace(w.Body.String()), "\n")
	if w.Code != 200 || len(rows) != 2 || !strings.HasPrefix(rows[0], "run_id\tstarted") {
		t.Fatalf("GET /runs/%d.tsv: %d, want a header and one row:\n%s", here, w.Code, w.Body)
	}
	head, row := strings.Split(rows[0], "\t"), strings.Split(rows[1], "\t")
	col := map[string]string{}
	for i, h := range head {
		col[h] = row[i]
	}
	if len(head) != len(row) || col["run_id"] != fmt.Sprint(here) || col["engine"] != "kv" || col["p99_ns"] != "900000" || col["op"] != "put" {
		t.Errorf("TSV row %v, want run %d, engine kv, put p99 900000", col, here)
	}
	for _, bad := range []string{"/runs/0", "/runs/abc", "/runs/12.xml", "/runs/999999"} {
		if w := get(t, s, bad); w.Code != 404 {
			t.Errorf("GET %s: %d, want 404", bad, w.Code)
		}
	}
}

func TestComparePage(t *testing.T) {
	s := newServer(t, nil)
	// Five runs of a spec, then five of a changed spec, from one cell.
	ids := addRuns(t, s, 10, func(i int, r *archive.Run) {
		base := archivetest.Synthetic(0, 3)
		if i >= 5 {
			base = archivetest.Synthetic(3, 3) // engine kv, sync group
		}
		r.Kind, r.Spec, r.SpecFull, r.Engine, r.Sync, r.Workload = base.Kind, base.Spec, base.SpecFull, base.Engine, base.Sync, base.Workload
		var res map[string]any
		json.Unmarshal(base.Result, &res)
		res["ops_per_sec"] = float64(1000 + 10*i + 2000*(i/5))
		r.Result, _ = json.Marshal(res)
		r.Lesson, r.Cell, r.Browser = "01-fixture", "always-run", testBrowser
	})
	join := func(ids []int64) string {
		var s []string
		for _, id := range ids {
			s = append(s, fmt.Sprint(id))
		}
		return strings.Join(s, ",")
	}
	explicit := fmt.Sprintf("/compare?a=%s&b=%s&format=json", join(ids[:5]), join(ids[5:]))
	auto := fmt.Sprintf("/compare?b=%s&format=json", join(ids[5:]))
	upto := fmt.Sprintf("/compare?a_upto=%d&b_upto=%d&n=5&format=json", ids[4], ids[9])
	at := fmt.Sprintf("/compare?at=%d&format=json", ids[5])
	for _, u := range []string{explicit, auto, upto, at} {
		w := get(t, s, u)
		var c archive.Comparison
		if w.Code != 200 || json.Unmarshal(w.Body.Bytes(), &c) != nil {
			t.Fatalf("GET %s: %d %s", u, w.Code, w.Body)
		}
		if join(c.A.RunIDs) != join(ids[:5]) || join(c.B.RunIDs) != join(ids[5:]) {
			t.Errorf("GET %s: groups %v and %v, want %v and %v", u, c.A.RunIDs, c.B.RunIDs, ids[:5], ids[5:])
		}
		ops := c.Metrics[0]
		if ops.Metric != "ops_per_sec" || !ops.Significant || ops.Verdict != "better" {
			t.Errorf("GET %s: ops/s row %+v, want a significant improvement", u, ops)
		}
	}
	// The page says a group too small to tell so, plainly.
	w := get(t, s, fmt.Sprintf("/compare?a=%s&b=%s", join(ids[:2]), join(ids[5:7])))
	body := w.Body.String()
	if w.Code != 200 || !strings.Contains(body, "Too few runs to tell") || !strings.Contains(body, "sync: always → group") {
		t.Errorf("two runs a side: %d, want the too-few note and what changed:\n%s", w.Code, body)
	}
	// Different conditions are warned about.
	other := addRuns(t, s, 1, func(i int, r *archive.Run) { r.Host = "elsewhere/111111111111" })
	w = get(t, s, fmt.Sprintf("/compare?a=%s&b=%d", join(ids[:5]), other[0]))
	if !strings.Contains(w.Body.String(), "⚠") {
		t.Errorf("groups from two hosts: no warning:\n%s", w.Body)
	}
	for _, tt := range []struct {
		query string
		code  int
		want  string
	}{
		{"", 400, "group b is missing"},
		{"a=1&b=x", 400, "is not a run id (want ids separated by commas"},
		{"b=1&b_upto=2", 400, "give b or b_upto, not both"},
		{"b=1&n=0", 400, "want the runs per group, 1 to 50"},
		{"at=1&b=2", 400, "at=ID names both groups"},
		{"a=1&b=999999", 404, "no such run"},
		{fmt.Sprintf("b=%d", ids[0]), 400, "no earlier run of the same cell with a different spec"},
	} {
		w := get(t, s, "/compare?"+tt.query)
		if w.Code != tt.code || !strings.Contains(w.Body.String(), tt.want) {
			t.Errorf("/compare?%s: got %d, want %d with %q:\n%s", tt.query, w.Code, tt.code, tt.want, w.Body)
		}
	}
}

// "Compare with the runs before the change" is offered only where the
// compare page has runs before a change to compare with: not on a
// cell's first runs, nor on a run of the command line; it is on a run
// after the spec changed, and the link it offers works.
func TestCompareOfferedOnlyWhenItWorks(t *testing.T) {
	s := newServer(t, nil)
	ids := addBeforeAfterRuns(t, s)
	link := regexp.MustCompile(`href="(/compare\?[^"]*)">Compare with the runs before the change`)
	for i, want := range map[int]bool{0: false, 4: false, 5: true, 9: true} {
		body := get(t, s, fmt.Sprintf("/runs/%d", ids[i])).Body.String()
		m := link.FindStringSubmatch(body)
		if (m != nil) != want {
			t.Errorf("/runs/%d (run %d of the cell): compare link %v, want %v", ids[i], i+1, m != nil, want)
		}
		if m != nil {
			if w := get(t, s, html.UnescapeString(m[1])); w.Code != 200 {
				t.Errorf("/runs/%d: its compare link %s answers %d", ids[i], m[1], w.Code)
			}
		}
	}
	// The page's question (check=1) is answered 200 either way, with
	// whether the comparison would work: a first run's has nothing before it.
	join := func(ids []int64) string {
		var s []string
		for _, id := range ids {
			s = append(s, fmt.Sprint(id))
		}
		return strings.Join(s, ",")
	}
	// A cell of two lines repeated: its second line's runs follow the
	// first line's, which have another spec, but that line was not
	// changed into this one: nothing to compare with.
	two := addRuns(t, s, 6, func(i int, r *archive.Run) {
		base := archivetest.Synthetic(0, 3)
		if i%2 == 1 {
			base = archivetest.Synthetic(3, 3)
		}
		r.Kind, r.Spec, r.SpecFull, r.Engine, r.Sync, r.Workload, r.Result = base.Kind, base.Spec, base.SpecFull, base.Engine, base.Sync, base.Workload, base.Result
		r.Lesson, r.Cell, r.Browser, r.Line = "01-fixture", "two-lines", testBrowser, i%2
	})
	if body := get(t, s, fmt.Sprintf("/runs/%d", two[5])).Body.String(); link.MatchString(body) {
		t.Errorf("/runs/%d (the second line's third run) offers a compare with the cell's first line", two[5])
	}
	for _, tc := range []struct {
		b    []int64
		want string
	}{{ids[:2], `{"comparable":false}`}, {ids[5:], `{"comparable":true}`}, {[]int64{two[1], two[3], two[5]}, `{"comparable":false}`}} {
		w := get(t, s, "/compare?b="+join(tc.b)+"&check=1")
		if got := strings.TrimSpace(w.Body.String()); w.Code != 200 || got != tc.want {
			t.Errorf("/compare?b=%s&check=1: %d %s, want 200 %s", join(tc.b), w.Code, got, tc.want)
		}
	}
}
