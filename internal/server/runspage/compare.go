package runspage

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"kvlab/harness/calc"
	"kvlab/internal/archive"
	"kvlab/internal/server/web"
)

// maxGroup caps the runs of one compare group.
const maxGroup = 50

// compareError is a bad /compare request: the message says what to fix.
type compareError struct{ msg string }

func (e *compareError) Error() string { return e.msg }

// comparePage is what compare.html shows.
type comparePage struct {
	*archive.Comparison
	JSONLink template.URL // this comparison as JSON
	Rows     []compareRow
	TooFew   bool // some metric had too few runs to tell
	Problem  string
}

type compareRow struct {
	archive.MetricComparison
	AMedian, BMedian, Change string
	Class                    string // better, worse, same, toofew
}

func (pg *Pages) handleCompare(w http.ResponseWriter, r *http.Request) {
	v := r.URL.Query()
	if v.Get("check") != "" {
		// The page asks before it offers a link: an answer, not a
		// refusal, so a browser logs no failed request for a question.
		v.Del("check")
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(struct {
			Comparable bool `json:"comparable"`
		}{pg.canCompare(r.Context(), v)})
		return
	}
	wantJSON := v.Get("format") == "json"
	fail := func(code int, msg string) {
		if wantJSON {
			web.JSONError(w, code, msg)
			return
		}
		web.ErrorPage(w, code, "Cannot compare these runs", msg)
	}
	a, b, err := pg.compareGroups(r.Context(), v)
	var ce *compareError
	switch {
	case errors.As(err, &ce):
		fail(http.StatusBadRequest, ce.msg)
		return
	case errors.Is(err, archive.ErrNotFound):
		fail(http.StatusNotFound, pg.public(err))
		return
	case err != nil:
		fail(http.StatusInternalServerError, pg.public(err))
		return
	}
	c, err := archive.Compare(a, b)
	if err != nil {
		fail(http.StatusUnprocessableEntity, err.Error())
		return
	}
	if wantJSON {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(c)
		return
	}
	v.Del("format")
	p := comparePage{Comparison: c, JSONLink: template.URL("/compare?" + v.Encode() + "&format=json")}
	for _, m := range c.Metrics {
		row := compareRow{MetricComparison: m, AMedian: fmtMetric(m.A.Median, m.Unit), BMedian: fmtMetric(m.B.Median, m.Unit), Change: "–"}
		if m.ChangePct != nil {
			row.Change = fmt.Sprintf("%+.1f%%", *m.ChangePct)
		}
		switch {
		case m.TooFew:
			row.Class = "toofew"
			p.TooFew = true
		case m.Significant && m.Verdict == "better":
			row.Class = "better"
		case m.Significant:
			row.Class = "worse"
		default:
			row.Class = "same"
		}
		p.Rows = append(p.Rows, row)
	}
	var buf bytes.Buffer
	if err := web.Execute(&buf, "compare.html", p); err != nil {
		web.ErrorPage(w, http.StatusInternalServerError, "Rendering the comparison failed", err.Error())
		return
	}
	web.WriteHTML(w, buf.Bytes())
}

// compareGroups reads the two groups a /compare request names.
func (pg *Pages) compareGroups(ctx context.Context, v url.Values) (a, b []archive.Run, err error) {
	n := 5
	if x := v.Get("n"); x != "" {
		n, err = strconv.Atoi(x)
		if err != nil || n < 1 || n > maxGroup {
			return nil, nil, &compareError{fmt.Sprintf("n=%q: want the runs per group, 1 to %d", x, maxGroup)}
		}
	}
	if at := v.Get("at"); at != "" {
		if v.Get("a") != "" || v.Get("a_upto") != "" || v.Get("b") != "" || v.Get("b_upto") != "" {
			return nil, nil, &compareError{"at=ID names both groups: give it alone (with n)"}
		}
		id, err := strconv.ParseInt(at, 10, 64)
		if err != nil || id <= 0 {
			return nil, nil, &compareError{fmt.Sprintf("at=%q: want a run id", at)}
		}
		first, err := pg.arch.Get(ctx, id)
		if err != nil {
			return nil, nil, err
		}
		if b, err = pg.firstRuns(ctx, first, n); err != nil {
			return nil, nil, err
		}
		a, err = pg.groupBefore(ctx, b, n)
		return a, b, err
	}
	if b, err = pg.group(ctx, v, "b", n); err != nil {
		return nil, nil, err
	}
	if v.Get("a") == "" && v.Get("a_upto") == "" {
		// No group a: the last n runs before b's spec was changed.
		a, err = pg.groupBefore(ctx, b, n)
		return a, b, err
	}
	a, err = pg.group(ctx, v, "a", n)
	return a, b, err
}

// canCompare reports whether /compare with v would compare two groups:
// a link to it is offered only then (a first run has no runs before a
// change to compare with).
func (pg *Pages) canCompare(ctx context.Context, v url.Values) bool {
	a, b, err := pg.compareGroups(ctx, v)
	if err != nil {
		return false
	}
	_, err = archive.Compare(a, b)
	return err == nil
}

// group reads one group: name=ID,ID,... or name_upto=ID.
func (pg *Pages) group(ctx context.Context, v url.Values, name string, n int) ([]archive.Run, error) {
	ids, upto := v.Get(name), v.Get(name+"_upto")
	switch {
	case ids != "" && upto != "":
		return nil, &compareError{fmt.Sprintf("group %s: give %s or %s_upto, not both", name, name, name)}
	case upto != "":
		id, err := strconv.ParseInt(upto, 10, 64)
		if err != nil || id <= 0 {
			return nil, &compareError{fmt.Sprintf("%s_upto=%q: want a run id", name, upto)}
		}
		last, err := pg.arch.Get(ctx, id)
		if err != nil {
			return nil, err
		}
		return pg.lastRuns(ctx, last, n)
	case ids == "":
		return nil, &compareError{fmt.Sprintf("group %s is missing: give %s=ID,ID,... or %s_upto=ID (the last n runs of one spec up to that run)", name, name, name)}
	}
	parts := strings.Split(ids, ",")
	if len(parts) > maxGroup {
		return nil, &compareError{fmt.Sprintf("group %s has %d runs; at most %d", name, len(parts), maxGroup)}
	}
	var out []archive.Run
	for _, p := range parts {
		id, err := strconv.ParseInt(strings.TrimSpace(p), 10, 64)
		if err != nil || id <= 0 {
			return nil, &compareError{fmt.Sprintf("group %s: %q is not a run id (want ids separated by commas, e.g. %s=12,13,14)", name, p, name)}
		}
		r, err := pg.arch.Get(ctx, id)
		if err != nil {
			return nil, err
		}
		out = append(out, *r)
	}
	return out, nil
}

// sameCell reports whether r ran from the same place as last: the same
// source, lesson, cell, quiz and browser.
func sameCell(r, last *archive.Run) bool {
	return r.Source == last.Source && r.Lesson == last.Lesson && r.Cell == last.Cell && r.Quiz == last.Quiz && r.Browser == last.Browser
}

// lastRuns is the last n runs from last's place with last's full spec,
// up to and including last, oldest first.
func (pg *Pages) lastRuns(ctx context.Context, last *archive.Run, n int) ([]archive.Run, error) {
	out := []archive.Run{*last}
	err := pg.scanBefore(ctx, last, last.ID, func(r *archive.Run) bool {
		if r.SpecFull == last.SpecFull {
			out = append(out, *r)
		}
		return len(out) < n
	})
	slices.Reverse(out)
	return out, err
}

// firstRuns is first and the runs after it from first's place with
// first's full spec, the oldest n of them: "the runs after I changed it",
// when first is the first run after the change.
func (pg *Pages) firstRuns(ctx context.Context, first *archive.Run, n int) ([]archive.Run, error) {
	var after []archive.Run // newest first
	q := archive.Query{Lesson: first.Lesson, Cell: first.Cell, Browser: first.Browser, Source: first.Source, Limit: 200}
	for page := 0; page < 20; page++ {
		runs, err := pg.arch.List(ctx, q)
		if err != nil {
			return nil, err
		}
		for i := range runs {
			if runs[i].ID <= first.ID {
				page = 20
				break
			}
			if sameCell(&runs[i], first) && runs[i].SpecFull == first.SpecFull {
				after = append(after, runs[i])
			}
		}
		if len(runs) < q.Limit {
			break
		}
		q.Before = runs[len(runs)-1].ID
	}
	slices.Reverse(after)
	out := append([]archive.Run{*first}, after...)
	return out[:min(n, len(out))], nil
}

// groupBefore is "the last n runs before I changed it": the runs from b's
// place recorded before b's first run, with the spec of the newest of them
// whose spec differs from b's. In a cell of several lines, only b's own
// line was changed: another line of the same cell, run beside it, is not
// "before the change" (sameLine).
func (pg *Pages) groupBefore(ctx context.Context, b []archive.Run, n int) ([]archive.Run, error) {
	first := &b[0]
	var before *archive.Run
	err := pg.scanBefore(ctx, first, first.ID, func(r *archive.Run) bool {
		if r.SpecFull != first.SpecFull && r.Kind == first.Kind && sameLine(r, first) {
			before = r
			return false
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	if before == nil {
		return nil, &compareError{fmt.Sprintf("run %d has no earlier run of the same cell with a different spec to compare with: change the cell, run it (repeat 5x), then compare; or name group a with a=IDs", first.ID)}
	}
	return pg.lastRuns(ctx, before, n)
}

// sameLine reports whether a and b were run from the same line of their
// cell, or either has no line recorded (the command line, older runs).
func sameLine(a, b *archive.Run) bool {
	return a.Line < 0 || b.Line < 0 || a.Line == b.Line
}

// scanBefore calls fn on the runs from last's place with ids below before,
// newest first, until fn returns false or the runs end. It reads the
// archive a page at a time and looks at most 20 pages back.
func (pg *Pages) scanBefore(ctx context.Context, last *archive.Run, before int64, fn func(*archive.Run) bool) error {
	q := archive.Query{Lesson: last.Lesson, Cell: last.Cell, Browser: last.Browser, Source: last.Source, Before: before, Limit: 200}
	for page := 0; page < 20; page++ {
		runs, err := pg.arch.List(ctx, q)
		if err != nil {
			return err
		}
		for i := range runs {
			if sameCell(&runs[i], last) && !fn(&runs[i]) {
				return nil
			}
		}
		if len(runs) < q.Limit {
			return nil
		}
		q.Before = runs[len(runs)-1].ID
	}
	return nil
}

// fmtMetric writes a median the way the page writes it: ns as a duration
// (calc.FormatNs), rates as whole numbers.
func fmtMetric(v float64, unit string) string {
	if unit == "ns" {
		return calc.FormatNs(v)
	}
	return fmt.Sprintf("%.0f %s", v, unit)
}
