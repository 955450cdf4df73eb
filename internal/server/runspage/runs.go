// Package runspage serves the run archive's pages: the list of runs, one
// run's permalink and its exports, and two groups of runs compared. The
// pages only read the archive: they need no token, since they show what
// ran and never run anything.
//
//	GET /runs                 newest first, 50 a page; filters lesson, cell,
//	                          engine, sync, workload; before=ID pages on
//	GET /runs/ID              one run: the cell's result table, charts and
//	                          conditions, where it came from
//	GET /runs/ID.json         the run as `labserver runs show -format json` prints it
//	GET /runs/ID.tsv          one row per measured run, for a spreadsheet
//	GET /compare?a=1,2&b=3,4  two groups compared (archive.Compare)
//	GET /compare?a_upto=X&b_upto=Y&n=5
//	                          each group is the last n runs of one cell with
//	                          the same spec, up to and including that run:
//	                          "the last 5 runs before I changed it" and
//	                          "the last 5 after"
//	GET /compare?at=ID&n=5    run ID and the next runs of its spec (B), and the
//	                          last 5 before the change (A)
//
// Files:
//
//	runs.go     Pages, /runs and /runs/ID (HTML, JSON)
//	tsv.go      /runs/ID.tsv
//	compare.go  /compare
package runspage

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"kvlab/internal/archive"
	"kvlab/internal/server/web"
)

// Pages serves the archive's pages from one archive. It is safe for
// concurrent use.
type Pages struct {
	arch   archive.Archive // the run archive, read only
	hostID string          // this machine's id: a run recorded elsewhere says so

	// ShowPaths lets the pages name the archive's file: only its owner,
	// on loopback without a token, sees the pages then. A server that
	// serves others says "this server's archive" instead.
	ShowPaths bool
}

// New returns the pages of arch on the machine hostID.
func New(arch archive.Archive, hostID string) *Pages {
	return &Pages{arch: arch, hostID: hostID}
}

// where names the archive on a page: its file for the owner, else "this
// server's archive".
func (pg *Pages) where() string {
	if pg.ShowPaths {
		return pg.arch.Where()
	}
	return "this server's archive"
}

// public is an error's text as a page shows it: the archive's file named
// only for the owner (ShowPaths), no package prefixes.
func (pg *Pages) public(err error) string {
	msg := err.Error()
	if !pg.ShowPaths {
		msg = strings.ReplaceAll(msg, pg.arch.Where(), "this server's archive")
	}
	return web.Public(msg)
}

// Route registers the pages on mux.
func (pg *Pages) Route(mux *http.ServeMux) {
	mux.HandleFunc("GET /runs", pg.handleRuns)
	mux.HandleFunc("GET /runs/{id}", pg.handleRun)
	mux.HandleFunc("GET /compare", pg.handleCompare)
}

// PageSize is the runs /runs shows per page.
const PageSize = 50

// runRow is one line of the /runs table.
type runRow struct {
	archive.Run
	Where  string     // "lesson · cell" or "quiz …" or "command line"
	Took   string     // wall time, rounded (took)
	Result []string   // the result's gist cut at its commas: "48213 ops/s", "p99 1.20 ms"
	Words  []string   // Spec in pieces that never wrap inside: the command, each flag with its value
	Round  bool       // one of several runs of a repeated line (archive.Repeats)
	Median *medianRow // on the newest round of a repeated line: the row shown above it
}

// medianRow sums up a repeated line on /runs: its rounds and their median.
type medianRow struct {
	IDs []int64 // the rounds, oldest first
	// CompareTo is the compare page of the rounds against the runs of the
	// same cell before its spec changed; "" when there are none.
	CompareTo string
	Result    []string // the medians' gist as Result; nil when a round is not one finished bench
}

type runsPage struct {
	Rows    []runRow
	Filter  archive.Query
	Next    string // URL of the next (older) page, "" when this is the last
	First   string // URL of the first page, "" on the first page
	Filters bool   // any filter is set
	Where   string // the archive's location
}

// filterKeys are /runs's filter parameters, in the form's order.
var filterKeys = []string{"lesson", "cell", "engine", "sync", "workload"}

func (pg *Pages) handleRuns(w http.ResponseWriter, r *http.Request) {
	v := r.URL.Query()
	q := archive.Query{Lesson: v.Get("lesson"), Cell: v.Get("cell"), Engine: v.Get("engine"), Sync: v.Get("sync"), Workload: v.Get("workload"), Limit: PageSize + 1}
	for _, k := range filterKeys {
		if len(v.Get(k)) > 128 {
			web.ErrorPage(w, http.StatusBadRequest, "Bad filter", fmt.Sprintf("%s: at most 128 characters", k))
			return
		}
	}
	if b := v.Get("before"); b != "" {
		n, err := strconv.ParseInt(b, 10, 64)
		if err != nil || n <= 0 {
			web.ErrorPage(w, http.StatusBadRequest, "Bad page", fmt.Sprintf("before=%q: want a run id, a positive whole number", b))
			return
		}
		q.Before = n
	}
	runs, err := pg.arch.List(r.Context(), q)
	if err != nil {
		web.ErrorPage(w, http.StatusInternalServerError, "Reading the archive failed", pg.public(err))
		return
	}
	p := runsPage{Filter: q, Where: pg.where()}
	p.Filters = q.Lesson != "" || q.Cell != "" || q.Engine != "" || q.Sync != "" || q.Workload != ""
	if len(runs) > PageSize {
		runs = runs[:PageSize]
		next := url.Values{}
		for _, k := range filterKeys {
			if x := v.Get(k); x != "" {
				next.Set(k, x)
			}
		}
		next.Set("before", strconv.FormatInt(runs[len(runs)-1].ID, 10))
		p.Next = "/runs?" + next.Encode()
	}
	if q.Before != 0 {
		first := url.Values{}
		for _, k := range filterKeys {
			if x := v.Get(k); x != "" {
				first.Set(k, x)
			}
		}
		p.First = "/runs?" + first.Encode()
	}
	medians := map[int64]*medianRow{} // by the newest round's id
	round := map[int64]bool{}
	for _, rep := range archive.Repeats(runs) {
		m := &medianRow{IDs: rep.IDs}
		ids := make([]string, len(rep.IDs))
		for i, id := range rep.IDs {
			ids[i] = strconv.FormatInt(id, 10)
		}
		if v := (url.Values{"b": {strings.Join(ids, ",")}}); pg.canCompare(r.Context(), v) {
			m.CompareTo = "/compare?" + v.Encode()
		}
		if rep.Median != nil {
			m.Result = strings.Split(rep.Median.Text, ", ")
		}
		medians[rep.IDs[len(rep.IDs)-1]] = m
		for _, id := range rep.IDs {
			round[id] = true
		}
	}
	for _, run := range runs {
		p.Rows = append(p.Rows, runRow{Run: run, Where: whereFrom(&run), Took: took(&run), Result: strings.Split(run.Gist().Text, ", "),
			Words: specWords(run.Spec), Round: round[run.ID], Median: medians[run.ID]})
	}
	var b bytes.Buffer
	if err := web.Execute(&b, "runs.html", p); err != nil {
		web.ErrorPage(w, http.StatusInternalServerError, "Rendering the runs failed", err.Error())
		return
	}
	web.WriteHTML(w, b.Bytes())
}

// specWords cuts a run line into the pieces /runs keeps on one line each:
// the command, then every flag with its value ("-value-size 128"), so
// that a narrow column wraps between flags, never at a flag's hyphens.
func specWords(spec string) []string {
	var words []string
	for _, f := range strings.Fields(spec) {
		if n := len(words); n > 0 && !strings.HasPrefix(f, "-") && strings.HasPrefix(words[n-1], "-") && !strings.Contains(words[n-1], " ") {
			words[n-1] += " " + f
			continue
		}
		words = append(words, f)
	}
	return words
}

// ExercisePrefix starts the cell id of a run an exercise's "Measure on
// this disk" started: "exercise-" and the exercise's name.
const ExercisePrefix = "exercise-"

// whereFrom says where a run came from, in a few words.
func whereFrom(r *archive.Run) string {
	switch r.Source {
	case "cell":
		if name, ok := strings.CutPrefix(r.Cell, ExercisePrefix); ok {
			return orDash(r.Lesson) + " · exercise " + name + " (Measure on this disk)"
		}
		if r.Lesson == "" && (strings.Contains(" "+r.Spec+" ", " -engine mine") || strings.Contains(r.Spec, ",mine")) {
			return "an exercise's Measure on this disk"
		}
		if r.Lesson == "" {
			return "a cell"
		}
		return r.Lesson + " · " + orDash(r.Cell)
	case "quiz":
		return r.Lesson + " · quiz " + r.Quiz
	case "cli":
		return "command line"
	}
	return r.Source
}

func orDash(s string) string {
	if s == "" {
		return "–"
	}
	return s
}

// took is a run's wall time, rounded for the table.
func took(r *archive.Run) string {
	if r.Started.IsZero() || r.Ended.IsZero() {
		return "–"
	}
	d := r.Ended.Sub(r.Started)
	switch {
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

type runPage struct {
	Run       *archive.Run
	Where     string
	Took      string
	Elsewhere bool   // recorded by another server (Host differs)
	ThisHost  string // this server's host id
	Data      template.JS
	CellLink  string // the lesson's cell, when the run came from one
	CompareTo string // the compare page for this run's last runs, when it has a cell
}

// runID parses the {id} of /runs/{id}, with an optional .json or .tsv.
func runID(p string) (id int64, format string, err error) {
	format = "html"
	for _, ext := range []string{".json", ".tsv"} {
		if strings.HasSuffix(p, ext) {
			p, format = strings.TrimSuffix(p, ext), ext[1:]
		}
	}
	id, err = strconv.ParseInt(p, 10, 64)
	if err != nil || id <= 0 {
		return 0, "", fmt.Errorf("%q is not a run id: want a positive whole number, optionally followed by .json or .tsv", p)
	}
	return id, format, nil
}

func (pg *Pages) handleRun(w http.ResponseWriter, r *http.Request) {
	id, format, err := runID(r.PathValue("id"))
	if err != nil {
		web.ErrorPage(w, http.StatusNotFound, "No such run", err.Error())
		return
	}
	run, err := pg.arch.Get(r.Context(), id)
	if errors.Is(err, archive.ErrNotFound) {
		web.ErrorPage(w, http.StatusNotFound, "No such run", fmt.Sprintf("Run %d is not in %s; /runs lists the runs it has.", id, pg.where()))
		return
	}
	if err != nil {
		web.ErrorPage(w, http.StatusInternalServerError, "Reading the archive failed", pg.public(err))
		return
	}
	// The browser id is what a cell quiz's grading trusts (a run counts
	// for the browser that ran it), and permalinks are public: never show it.
	run.Browser = ""
	switch format {
	case "json":
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Disposition", fmt.Sprintf(`inline; filename="kvlab-run-%d.json"`, id))
		enc := json.NewEncoder(w)
		enc.SetIndent("", " ")
		enc.Encode(run)
		return
	case "tsv":
		w.Header().Set("Content-Type", "text/tab-separated-values; charset=utf-8")
		w.Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="kvlab-run-%d.tsv"`, id))
		writeRunTSV(w, run)
		return
	}
	data, err := json.Marshal(struct {
		Spec     string          `json:"spec"`
		Result   json.RawMessage `json:"result"`
		Timeline json.RawMessage `json:"timeline,omitempty"`
	}{run.Spec, run.Result, run.Timeline})
	if err != nil {
		web.ErrorPage(w, http.StatusInternalServerError, "Encoding the run failed", err.Error())
		return
	}
	p := runPage{Run: run, Where: whereFrom(run), Took: took(run), ThisHost: pg.hostID, Data: template.JS(data),
		Elsewhere: run.Host != "" && run.Host != pg.hostID}
	if run.Lesson != "" && run.Cell != "" {
		p.CellLink = "/lessons/" + url.PathEscape(run.Lesson) + "#cell-" + run.Cell
		if strings.HasPrefix(run.Cell, ExercisePrefix) {
			p.CellLink = "/lessons/" + url.PathEscape(run.Lesson) + "#" + run.Cell // the exercise's box
		}
	}
	if run.Kind == "bench" || run.Kind == "sweep" {
		if v := (url.Values{"b_upto": {strconv.FormatInt(run.ID, 10)}, "n": {"5"}}); pg.canCompare(r.Context(), v) {
			p.CompareTo = "/compare?" + v.Encode()
		}
	}
	var b bytes.Buffer
	if err := web.Execute(&b, "run.html", p); err != nil {
		web.ErrorPage(w, http.StatusInternalServerError, "Rendering the run failed", err.Error())
		return
	}
	web.WriteHTML(w, b.Bytes())
}
