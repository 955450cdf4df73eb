package classroom

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestNewCode(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		c, err := NewCode()
		if err != nil {
			t.Fatal(err)
		}
		if len(c) != CodeLen || strings.Trim(c, Alphabet) != "" {
			t.Fatalf("NewCode() = %q: want %d symbols of %s", c, CodeLen, Alphabet)
		}
		if seen[c] {
			t.Fatalf("NewCode() gave %q twice in 1000 draws", c)
		}
		seen[c] = true
	}
}

func TestParseCode(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"ABCDE-FGHJK", "ABCDEFGHJK"},
		{"abcde-fghjk", "ABCDEFGHJK"},
		{" abcdefghjk ", "ABCDEFGHJK"},
		{"23456-789AB", "23456789AB"},
		{"ABCDE-FGHJ", ""},       // short
		{"ABCDE-FGHJKL", ""},     // long
		{"ABCDEFGHJO", ""},       // O is not used
		{"ABCD-EFGHJK", ""},      // dash in the wrong place
		{"ABCDE FGHJK", ""},      // space inside
		{"ABCDE-FGHJ\u00e9", ""}, // not ASCII
	} {
		got, err := ParseCode(tt.in)
		if tt.want == "" {
			if !errors.Is(err, ErrBadCode) {
				t.Errorf("ParseCode(%q) = %q, %v; want ErrBadCode", tt.in, got, err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParseCode(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
	if got := FormatCode("ABCDEFGHJK"); got != "ABCDE-FGHJK" {
		t.Errorf("FormatCode = %q, want ABCDE-FGHJK", got)
	}
}

func TestPollPredictFirst(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 4, 5, 0, time.UTC)
	p := NewPoll("p1", "always-vs-batch", "?", "x", t0)
	if err := p.Predict("b1", 10); err != nil {
		t.Fatal(err)
	}
	if err := p.Predict("b1", 12.5); err != nil {
		t.Fatal(err)
	}
	if v, _ := p.Prediction("b1"); v != 12.5 || p.View().Count != 1 {
		t.Fatalf("a later prediction: got %v (count %d), want it to replace the earlier", v, p.View().Count)
	}
	for _, bad := range []float64{1e16, -1e16} {
		if err := p.Predict("b2", bad); err == nil {
			t.Errorf("Predict(%v): no error", bad)
		}
	}
	if !p.StartMeasuring(t0) || p.StartMeasuring(t0) {
		t.Fatal("StartMeasuring: want true once, then false")
	}
	err := p.Predict("b3", 1)
	if !errors.Is(err, ErrPredictionsClosed) || !strings.Contains(err.Error(), "10:04:05") {
		t.Fatalf("Predict after the measurement started: got %v, want ErrPredictionsClosed naming 10:04:05", err)
	}
	p.Finish(20, 7, "other programs held up to 40% of the processors just before 1 of 1 runs")
	v := p.View()
	if v.State != PollClosed || *v.Measured != 20 || *v.RunID != 7 || v.Count != 1 || !strings.Contains(v.Busy, "40%") {
		t.Fatalf("View after Finish: %+v", v)
	}
}

func TestHistogram(t *testing.T) {
	var vals []float64
	for i := 1; i <= 100; i++ {
		vals = append(vals, float64(i))
	}
	vals = append(vals, 1e9) // an outlier: above the range
	h := NewHistogram(vals, nil)
	if len(h.Edges) != Bins+1 || len(h.Counts) != Bins {
		t.Fatalf("got %d edges and %d counts, want %d and %d", len(h.Edges), len(h.Counts), Bins+1, Bins)
	}
	if h.Edges[0] != 4 || h.Edges[Bins] != 100 || !h.Log {
		t.Errorf("edges %v..%v (log %v): want log bins from 4 to 100, the ballots within reach of the median (51) in log space", h.Edges[0], h.Edges[Bins], h.Log)
	}
	total := h.Below + h.Above
	for _, c := range h.Counts {
		total += c
	}
	if total != len(vals) || h.Below != 3 || h.Above != 1 {
		t.Errorf("counts %v, %d below, %d above: want every value once, 1, 2 and 3 below (factors of 17 to 51 under the median) and 1e9 above", h.Counts, h.Below, h.Above)
	}
	m := 500.0
	h = NewHistogram(vals, &m)
	if h.Edges[Bins] != 500 || h.Above != 1 {
		t.Errorf("with measured 500: top edge %v, %d above; want 500 and only 1e9 above", h.Edges[Bins], h.Above)
	}
	one := NewHistogram([]float64{3, 3, 3}, nil)
	if one.Edges[0] >= 3 || one.Edges[Bins] <= 3 || one.Counts[Bins/2-1]+one.Counts[Bins/2] != 3 {
		t.Errorf("equal values: got %+v, want a range around 3 with them in the middle", one)
	}
	if e := NewHistogram(nil, nil); len(e.Edges) != 0 || e.Counts == nil {
		t.Errorf("no values: got %+v, want empty edges and counts", e)
	}
	neg := NewHistogram([]float64{-5, 0, 5}, nil)
	if neg.Log || neg.Edges[0] != -5 || neg.Edges[Bins] != 5 || neg.Counts[0] != 1 || neg.Counts[Bins/2] != 1 || neg.Counts[Bins-1] != 1 {
		t.Errorf("values around zero: got %+v, want linear bins from -5 to 5", neg)
	}
	huge := NewHistogram([]float64{-1.7e308, 1.7e308, 0, math.Inf(1), math.NaN()}, nil)
	for _, e := range huge.Edges {
		if math.IsInf(e, 0) || math.IsNaN(e) {
			t.Fatalf("values near ±1.7e308: edges %v, want finite ones", huge.Edges)
		}
	}
}

// honest returns n predictions near 500, spread by factors as a class's
// are (300 to 700, log-evenly).
func honest(n int) []float64 {
	vals := make([]float64, n)
	for i := range vals {
		f := 0.5
		if n > 1 {
			f = float64(i) / float64(n-1)
		}
		vals[i] = 300 * math.Pow(700.0/300, f)
	}
	return vals
}

// checkSpread fails unless the honest ballots are all in bins, over
// several of them, with the joke (1e15) counted above the range.
func checkSpread(t *testing.T, name string, h Histogram, nHonest, minBins int) {
	t.Helper()
	used, in := 0, 0
	for _, c := range h.Counts {
		if c > 0 {
			used++
		}
		in += c
	}
	if h.Above != 1 || h.Below != 0 || in != nHonest || h.Edges[Bins] > 1000 {
		t.Errorf("%s: edges %.4g..%.4g, counts %v, %d below, %d above; want the %d honest ballots in bins and 1e15 above the range", name, h.Edges[0], h.Edges[Bins], h.Counts, h.Below, h.Above, nHonest)
	}
	if used < minBins {
		t.Errorf("%s: the honest ballots fill %d bins (%v), want at least %d", name, used, h.Counts, minBins)
	}
}

// One joke ballot of 1e15 squashes no class's histogram, of any size:
// the honest ballots spread over several bins and the joke is counted
// above the range. (With 2nd and 98th percentile edges, the 98th of 50
// or fewer ballots was the joke itself, and every honest ballot shared
// the first bin.)
func TestHistogramJokeBallot(t *testing.T) {
	for _, n := range []int{2, 21, 50} {
		// n ballots, one of them the joke.
		vals := append(honest(n-1), 1e15)
		if n > 2 {
			checkSpread(t, fmt.Sprintf("%d ballots", n), NewHistogram(vals, nil), n-1, min(n-1, 8))
		}
		// n honest ballots and the joke.
		checkSpread(t, fmt.Sprintf("%d honest ballots and a joke", n), NewHistogram(append(honest(n), 1e15), nil), n, min(n, 8))
		// Once measured is known it is a ballot's worth of evidence too,
		// so even a lone honest ballot is not squashed by the joke.
		m := 520.0
		h := NewHistogram(vals, &m)
		checkSpread(t, fmt.Sprintf("%d ballots, measured known", n), h, n-1, min(n-1, 8))
		if n > 2 && (h.Edges[0] > 300 || h.Edges[Bins] < 700) {
			t.Errorf("%d ballots, measured 520: edges %.4g..%.4g, want 300..700 or wider, 520 within", n, h.Edges[0], h.Edges[Bins])
		}
	}
	// A joke far below (a rate of 1e-9 ops/s) is counted below, the same way.
	h := NewHistogram(append(honest(21), 1e-9), nil)
	if h.Below != 1 || h.Above != 0 || h.Edges[0] < 299 {
		t.Errorf("a joke of 1e-9: edges %.4g..%.4g, %d below, %d above; want it below the range", h.Edges[0], h.Edges[Bins], h.Below, h.Above)
	}
	// A class split in two camps a factor of 30 apart keeps both in range.
	split := append(honest(10), 15000, 16000, 17000, 18000, 19000, 20000, 21000, 1e15)
	h = NewHistogram(split, nil)
	if h.Above != 1 || h.Below != 0 || h.Edges[Bins] != 21000 {
		t.Errorf("two camps: edges %.4g..%.4g, %d below, %d above; want both camps in range, only 1e15 above", h.Edges[0], h.Edges[Bins], h.Below, h.Above)
	}
}

func TestSections(t *testing.T) {
	body := "# T\nintro\n## One\ntext\n```\n## not a heading\n```\n## Two\n### sub\n"
	if got := Sections([]byte(body)); got != 3 {
		t.Errorf("Sections = %d, want 3 (intro, One, Two)", got)
	}
}

func TestCheckShare(t *testing.T) {
	for _, f := range []struct {
		file string
		kind string
		has  []string
	}{
		{"testdata/probe.json", "probe", []string{MeasureFdatasyncP50}},
		{"testdata/bench.json", "bench", []string{MeasureAlwaysOps, MeasureP99}},
		{"testdata/bench2.json", "bench", []string{MeasureAlwaysOps, MeasureP99}},
	} {
		b, err := os.ReadFile(f.file)
		if err != nil {
			t.Fatal(err)
		}
		sh, err := CheckShare(b)
		if err != nil {
			t.Fatalf("%s: %v", f.file, err)
		}
		if sh.Kind != f.kind || len(sh.Values) != len(f.has) {
			t.Errorf("%s: got %s with %v, want %s with %v", f.file, sh.Kind, sh.Values, f.kind, f.has)
		}
		for _, m := range f.has {
			if sh.Values[m] <= 0 {
				t.Errorf("%s: %s = %v, want a positive value", f.file, m, sh.Values[m])
			}
		}
		if fs, _ := sh.Conditions["fs"].(string); fs == "" || sh.Conditions["device"] == nil {
			t.Errorf("%s: conditions %v lack fs and device", f.file, sh.Conditions)
		}
		// Strict: an unknown field is refused.
		bad := bytes.Replace(b, []byte(`"kind"`), []byte(`"surprise":1,"kind"`), 1)
		if _, err := CheckShare(bad); !errors.Is(err, ErrBadShare) {
			t.Errorf("%s with an unknown field: got %v, want ErrBadShare", f.file, err)
		}
	}
	for _, bad := range []string{``, `{"kind":"model"}`, `{"kind":"evil"}`, `[]`, `[{"kind":"probe"}]`, `{"kind":"probe"} {}`, `"x"`} {
		if _, err := CheckShare([]byte(bad)); !errors.Is(err, ErrBadShare) {
			t.Errorf("CheckShare(%q): got %v, want ErrBadShare", bad, err)
		}
	}
}

func TestCheckLabel(t *testing.T) {
	for _, ok := range []string{"", "lab 3", "Anna-s laptop", strings.Repeat("x", MaxLabel)} {
		if err := CheckLabel(ok); err != nil {
			t.Errorf("CheckLabel(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{strings.Repeat("x", MaxLabel+1), "<script>", "a_b", "é"} {
		if err := CheckLabel(bad); err == nil {
			t.Errorf("CheckLabel(%q): no error", bad)
		}
	}
}

func TestQRSVG(t *testing.T) {
	const u = "http://10.0.0.5:8080/room/ABCDE-FGHJK"
	svg, err := QRSVG(u)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := QRSVG(u)
	if !bytes.Equal(svg, again) {
		t.Error("the same URL gave two different SVGs")
	}
	if other, _ := QRSVG(u + "X"); bytes.Equal(svg, other) {
		t.Error("two URLs gave the same SVG")
	}
	grid, n := parseSVG(t, svg)
	if bytes.Contains(bytes.ToLower(svg), []byte("script")) {
		t.Error("the SVG mentions script")
	}
	// The three finder patterns: 7x7, dark ring, light ring, dark 3x3
	// core, inside the 4-module quiet zone.
	const quiet = 4
	for _, at := range [][2]int{{quiet, quiet}, {n - quiet - 7, quiet}, {quiet, n - quiet - 7}} {
		for dy := range 7 {
			for dx := range 7 {
				ring := max(abs(dx-3), abs(dy-3))
				want := ring != 2
				if got := grid[at[1]+dy][at[0]+dx]; got != want {
					t.Fatalf("finder at %v: module (%d,%d) dark=%v, want %v", at, dx, dy, got, want)
				}
			}
		}
	}
	for i := range n {
		if grid[0][i] || grid[i][0] {
			t.Fatal("the quiet zone has a dark module")
		}
	}
}

func abs(x int) int { return max(x, -x) }

// parseSVG checks the SVG is well-formed XML and reads its dark rects
// back into a grid of modules.
func parseSVG(t *testing.T, svg []byte) ([][]bool, int) {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(svg))
	var grid [][]bool
	n := 0
	for {
		tok, err := dec.Token()
		if err != nil {
			if err.Error() == "EOF" {
				break
			}
			t.Fatalf("the SVG is not well-formed XML: %v", err)
		}
		se, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		attr := map[string]string{}
		for _, a := range se.Attr {
			attr[a.Name.Local] = a.Value
		}
		switch {
		case se.Name.Local == "svg":
			f := strings.Fields(attr["viewBox"])
			n, _ = strconv.Atoi(f[2])
			grid = make([][]bool, n)
			for i := range grid {
				grid[i] = make([]bool, n)
			}
		case se.Name.Local == "rect" && attr["fill"] == "":
			x, _ := strconv.Atoi(attr["x"])
			y, _ := strconv.Atoi(attr["y"])
			w, _ := strconv.Atoi(attr["width"])
			for i := x; i < x+w; i++ {
				grid[y][i] = true
			}
		}
	}
	if n < 21+8 {
		t.Fatalf("the SVG is %d modules wide, want at least 29 (version 1 and the quiet zone)", n)
	}
	return grid, n
}

func TestThrottle(t *testing.T) {
	var th Throttle
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	every := 250 * time.Millisecond
	if now, _ := th.Now(t0, every); !now {
		t.Fatal("the first update: want it sent now")
	}
	if now, pending := th.Now(t0.Add(10*time.Millisecond), every); now || pending {
		t.Fatalf("an update 10ms later: now=%v pending=%v, want a flush to be scheduled (false, false)", now, pending)
	}
	if now, pending := th.Now(t0.Add(20*time.Millisecond), every); now || !pending {
		t.Fatalf("another: now=%v pending=%v, want it merged into the scheduled flush", now, pending)
	}
	th.Flushed(t0.Add(250 * time.Millisecond))
	if now, _ := th.Now(t0.Add(600*time.Millisecond), every); !now {
		t.Fatal("an update after the flush and a quiet interval: want it sent now")
	}
}

// TestCheckShareBounds: a finite but impossible figure is refused with
// ErrOutOfBounds, naming the field; the bounds themselves pass.
func TestCheckShareBounds(t *testing.T) {
	bench, _ := os.ReadFile("testdata/bench.json")
	probe, _ := os.ReadFile("testdata/probe.json")
	for _, c := range []struct {
		name      string
		file      []byte
		old, new  string
		wantField string // "" when it must pass
	}{
		{"ops/s at 1.7e308", bench, `"ops_per_sec": 4527.2088648182225`, `"ops_per_sec": 1.7e308`, "result.ops_per_sec"},
		{"ops/s at the bound", bench, `"ops_per_sec": 4527.2088648182225`, `"ops_per_sec": 1e9`, ""},
		{"ops/s just past the bound", bench, `"ops_per_sec": 4527.2088648182225`, `"ops_per_sec": 1.0000001e9`, "result.ops_per_sec"},
		{"negative ops/s", bench, `"ops_per_sec": 4527.2088648182225`, `"ops_per_sec": -1`, "result.ops_per_sec"},
		{"ops/s at 5e-324", bench, `"ops_per_sec": 4527.2088648182225`, `"ops_per_sec": 5e-324`, ""},
		{"p99 of a year", bench, `"p99_ns": 447128`, `"p99_ns": 31536000000000000`, "result.latency.put.p99_ns"},
		{"negative probe p50", probe, `"p50_ns": 210000`, `"p50_ns": -5`, "result.write_fdatasync.p50_ns"},
		{"probe ops/s past the bound", probe, `"ops_per_sec": 4509.62661763999`, `"ops_per_sec": 1e300`, "result.write_fdatasync.ops_per_sec"},
		{"a sweep's second result", []byte("[" + string(bench) + "," + strings.Replace(string(bench), `"units_per_sec": 4527.2088648182225`, `"units_per_sec": 2e9`, 1) + "]"), "", "", "result[1].units_per_sec"},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := c.file
			if c.old != "" {
				if !bytes.Contains(b, []byte(c.old)) {
					t.Fatalf("testdata has no %s", c.old)
				}
				b = bytes.Replace(b, []byte(c.old), []byte(c.new), 1)
			}
			_, err := CheckShare(b)
			switch {
			case c.wantField == "" && err != nil:
				t.Errorf("got %v, want it accepted", err)
			case c.wantField != "" && (!errors.Is(err, ErrOutOfBounds) || !strings.Contains(err.Error(), c.wantField+" ")):
				t.Errorf("got %v, want ErrOutOfBounds naming %s", err, c.wantField)
			}
		})
	}
}
