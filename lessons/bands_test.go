package lessons_test

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"kvlab/harness"
	"kvlab/internal/lesson"
	"kvlab/internal/quiz"
	"kvlab/internal/server"
)

// The band check (make bench, not make test: on a busy machine its
// verdicts move with the load). A prediction graded on one run is a
// lottery when its answer moves from run to run by more than its
// tolerance (a quiz that asks for a figure of the reader's own run is
// graded on that run, so it is reported but never listed):
// TestQuizBands runs every graded cell (and every run: quiz) -bands times
// at full size and lists each quiz whose band around one run's answer
// refuses another run's answer (for a choice quiz: whose runs pick
// different choices). The runs are rounds, each cell's lines in mirrored
// order (A B, B A, ...) as the server runs them, so an answer over two
// lines is a paired figure. A repeat: K quiz is graded on K rounds
// against their median: its cell is run at least 2K times, and it is
// listed when the rounds, taken K at a time as two readers would make
// them, spread wider than its band (the reply would call the machine too
// noisy to grade) or give a median the other K rounds' band refuses.
// Rounds measured on a busy machine (quiz.Busy: other programs at half
// the processors, or writing to the disk, just before a run) grade no
// prediction: a reader's are declined, as too noisy ones are, and their
// median is held against no one (it is nobody's right prediction).
// Declined quizzes are counted apart from listed ones.
var (
	bands       = flag.Int("bands", 0, "run each graded cell this many times and list the quizzes whose band accepts one run's answer and refuses another's (make bench)")
	bandsReport = flag.String("bands-report", "", "write the band check's report to this file")
	bandsOnly   = flag.String("bands-only", "", "comma-separated lesson file prefixes (\"06-,10-\") the band check is limited to; empty: every lesson")
)

// runsFor is how many times the band check runs the cell (or run: quiz)
// key: n, or twice the largest repeat: K of the quizzes on it, so that
// two readers' K runs can be compared.
func runsFor(l *lesson.Lesson, key string, n int) int {
	for _, q := range l.Quizzes {
		if q.Cell == key {
			n = max(n, 2*q.Repeat)
		}
	}
	return n
}

// bandRow is one quiz's line of the report.
type bandRow struct {
	name   string // slug/quiz
	tol    string // the quiz's tolerance, or "choice"
	values []float64
	// listed: a reader could be graded wrong by chance (one group of
	// rounds refuses another's answer). declined: a reader's rounds
	// spread wider than the band, and the reply says the machine was too
	// noisy to grade rather than grading (not listed: nobody is graded
	// by chance, but the quiz could not judge on this machine).
	listed, declined bool // declined also: a busy machine's runs (quiz.DeclineIfBusy)
	busyGroups       int  // the groups of rounds (or runs) a busy machine measured
	note             string
	// conds is each run's conditions, as runConditions gives them.
	conds []string
}

// runConditions is a run's conditions in a few characters: the highest
// load average its results were started at and other programs' share of
// the processors just before them (cpu.idle_busy_fraction), "W" when any of them saw
// other writers on the device (device_io.other_writers), and "S" when
// the processors were saturated during it (cpu.busy_fraction at least
// saturatedAt): what the report shows beside each answer, so that a
// listed quiz's runs say what the machine was doing.
func runConditions(rs []any) string {
	load, others, writers := 0.0, 0.0, false
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case []any:
			for _, e := range x {
				walk(e)
			}
		case map[string]any:
			if l, ok := x["load_avg"].(float64); ok {
				load = max(load, l)
			}
			if cpu, ok := x["cpu"].(map[string]any); ok {
				if f, ok := cpu["idle_busy_fraction"].(float64); ok {
					others = max(others, f)
				}
			}
			if d, ok := x["device_io"].(map[string]any); ok && d["other_writers"] == true {
				writers = true
			}
		}
	}
	walk(rs)
	c := fmt.Sprintf("%.1f/%.0f%%", load, 100*others)
	if writers {
		c += "W"
	}
	if _, sat := saturated(rs); sat {
		c += "S"
	}
	return c
}

func TestQuizBands(t *testing.T) {
	if *bands < 2 {
		t.Skip("the band check runs with -bands N, N >= 2 (make bench)")
	}
	lim := server.DefaultLimits()
	var rows []bandRow
	start := time.Now()
	for _, l := range load(t) {
		if *bandsOnly != "" && !slices.ContainsFunc(strings.Split(*bandsOnly, ","), func(p string) bool { return strings.HasPrefix(l.File, p) }) {
			continue
		}
		runs := map[string][][]any{} // cell id -> results of each run
		for _, q := range l.Quizzes {
			key, lines := q.Cell, []string(nil)
			if q.Run != nil {
				key, lines = "run:"+q.ID, q.Run
			} else if c := l.Cell(q.Cell); c != nil {
				lines = c.Lines
			}
			if _, done := runs[key]; !done {
				for i := range runsFor(l, key, *bands) {
					// Runs are rounds, their lines in mirrored order, as
					// the server runs a repeated cell: an answer over
					// two lines is a paired figure.
					rs, err := execRound(t, lines, 1, lim, i+1)
					if err != nil {
						t.Fatalf("%s: %s run %d: %v", l.Slug, key, i+1, err)
					}
					runs[key] = append(runs[key], rs)
				}
			}
			row, err := bandOf(l, q, runs[key])
			if err != nil {
				t.Errorf("%s: %v", l.Slug, err)
				continue
			}
			rows = append(rows, row)
		}
	}
	report := bandReport(rows, *bands, time.Since(start))
	t.Log("\n" + report)
	if *bandsReport != "" {
		if err := os.WriteFile(*bandsReport, []byte(report), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range rows {
		if r.listed {
			t.Errorf("%s: its band accepts one run's answer and refuses another's: %s (tolerance %s)", r.name, fmtValues(r.values), r.tol)
		}
	}
}

// bandOf judges one quiz on its runs' results.
func bandOf(l *lesson.Lesson, q *quiz.Quiz, runs [][]any) (bandRow, error) {
	row := bandRow{name: l.Slug + "/" + q.ID, tol: "choice"}
	if q.Choices == nil {
		row.tol = q.Tol.String()
	}
	for i, rs := range runs {
		v, err := q.Answer.Eval(rs)
		if err != nil || v.IsStr {
			return row, fmt.Errorf("quiz %s, run %d: %v", q.ID, i+1, err)
		}
		row.values = append(row.values, v.Num)
		row.conds = append(row.conds, runConditions(rs))
	}
	// A quiz that is not a prediction asks for a figure the reader reads
	// or computes from the run on their page, and is graded against that
	// same run (or, with repeat: K, a range that covers each of the K
	// runs): another run's answer never grades it, so its spread is
	// reported and not listed.
	if !q.IsPrediction() {
		row.note = "not a prediction: graded on the reader's own run"
		return row, nil
	}
	// A reason-it-out quiz (predict: reason) is asked before the run and
	// graded against it like a prediction, so its band must hold from
	// one run to the next as a prediction's must; that its answer is the
	// same on every disk is what the band check shows when it holds.
	if q.Reason {
		row.note = "reason it out: asked before the run, graded against it"
	}
	if q.Repeat > 0 {
		row.tol += fmt.Sprintf(", repeat %d", q.Repeat)
		row.note = strings.TrimPrefix(row.note+"; ", "; ") + fmt.Sprintf("graded on %d runs at a time, against their median", q.Repeat)
		// Each group of q.Repeat runs is graded against every group's
		// median answer (row.values holds each run's answer, in order).
		var groups []int // each group's first run
		for i := 0; i+q.Repeat <= len(runs); i += q.Repeat {
			groups = append(groups, i)
		}
		for _, g := range groups {
			// A reader's prediction on rounds a busy machine measured
			// is not graded, whatever it was (quiz.DeclineIfBusy).
			if why := quiz.Busy(runs[g : g+q.Repeat]...); why != "" {
				row.declined = true
				row.busyGroups++
				continue
			}
			for _, other := range groups {
				// A busy machine's median is nobody's right
				// prediction: it is not held against other rounds.
				if quiz.Busy(runs[other:other+q.Repeat]...) != "" {
					continue
				}
				answer := quiz.FormatNumber(harness.Median(row.values[other : other+q.Repeat]))
				fb, err := quiz.CheckRepeated(q, runs[g:g+q.Repeat], answer)
				if err != nil {
					return row, err
				}
				if fb.Spread != nil && !fb.Spread.Within && !strings.Contains(row.note, "too noisy") {
					row.note += fmt.Sprintf("; rounds %d–%d spread %s, too noisy for the band", g+1, g+q.Repeat, fb.Spread.Text)
				}
				// Declined when the reply would say the machine was too
				// noisy to grade; listed when it would grade another
				// group's answer wrong.
				row.declined = row.declined || fb.TooNoisy
				if !fb.Correct && !fb.TooNoisy && !row.listed {
					row.listed = true
					row.note += fmt.Sprintf("; rounds %d–%d refuse the median %s of rounds %d–%d", g+1, g+q.Repeat, answer, other+1, other+q.Repeat)
				}
			}
		}
		row.noteBusy(len(groups), "groups of rounds")
		return row, nil
	}
	for i, rs := range runs {
		if quiz.Busy(rs) != "" {
			row.declined = true
			row.busyGroups++
			continue
		}
		for j := range runs {
			if quiz.Busy(runs[j]) != "" {
				continue // a busy machine's answer is nobody's right prediction
			}
			answer := quiz.FormatNumber(row.values[j])
			if q.Choices != nil {
				answer = fmt.Sprint(int(row.values[j]))
			}
			fb, err := quiz.Check(q, rs, answer)
			if err != nil {
				return row, fmt.Errorf("quiz %s, run %d's answer against run %d: %v", q.ID, j+1, i+1, err)
			}
			row.listed = row.listed || !fb.Correct
		}
	}
	row.noteBusy(len(runs), "runs")
	return row, nil
}

// noteBusy adds to the row's note how many of its n groups (or runs) a
// busy machine measured.
func (r *bandRow) noteBusy(n int, what string) {
	if r.busyGroups > 0 {
		r.note = strings.TrimPrefix(r.note+fmt.Sprintf("; %d of %d %s on a busy machine, not graded", r.busyGroups, n, what), "; ")
	}
}

func fmtValues(vs []float64) string {
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = quiz.FormatNumber(v)
	}
	return strings.Join(s, ", ")
}

// bandReport is the written report: every quiz with its runs' answers,
// their spread (highest ÷ lowest) and whether it is listed.
func bandReport(rows []bandRow, n int, took time.Duration) string {
	var b strings.Builder
	host, _ := os.Hostname()
	load, _ := os.ReadFile("/proc/loadavg")
	fmt.Fprintf(&b, "Quiz bands against the disk's noise: each graded cell run %d times at full size (a cell with a repeat: K quiz 2K times).\n", n)
	fmt.Fprintf(&b, "host %s, %s, load average at the end %s, took %v\n\n", host, time.Now().UTC().Format(time.RFC3339), strings.TrimSpace(string(load)), took.Round(time.Second))
	listed, declined := 0, 0
	for _, r := range rows {
		if r.listed {
			listed++
		} else if r.declined {
			declined++
		}
	}
	fmt.Fprintf(&b, "%d of %d quizzes listed (a run's band refuses another run's answer: a reader graded wrong by chance)\n", listed, len(rows))
	fmt.Fprintf(&b, "%d more declined (a reader's rounds spread wider than the band, or a busy machine measured them: the reply says it did not grade, and why)\n\n", declined)
	fmt.Fprintf(&b, "%-50s %-18s %-8s %s\n", "quiz", "tolerance", "spread", "answers per run")
	for _, r := range rows {
		lo, hi := slices.Min(r.values), slices.Max(r.values)
		spread := "-"
		if lo > 0 {
			spread = fmt.Sprintf("%.2f×", hi/lo)
		} else if lo == hi {
			spread = "1.00×"
		}
		mark := "  "
		switch {
		case r.listed:
			mark = "* "
		case r.declined:
			mark = "~ "
		}
		line := fmt.Sprintf("%s%-48s %-18s %-8s %s", mark, r.name, r.tol, spread, fmtValues(r.values))
		if r.note != "" {
			line += "  (" + r.note + ")"
		}
		if len(r.conds) > 0 {
			line += "  [conditions " + strings.Join(r.conds, " ") + "]"
		}
		fmt.Fprintln(&b, line)
	}
	fmt.Fprintf(&b, "\n* listed. ~ declined (too noisy to grade), not listed. spread: highest ÷ lowest answer over the runs. conditions, per run: the load average it started at / other programs' share of the processors just before it, W when other writers were on the device, S when the processors were saturated.\n")
	return b.String()
}

// TestBandOfListsOnlyPredictions: runs whose answers differ 2x against a
// 10% band make a prediction a lottery (listed), with or
// without repeat:, and a reason-it-out quiz too (it is graded against a
// run it did not see), while the same quiz asking for the reader's own
// figure is graded on their own run and is not listed.
func TestBandOfListsOnlyPredictions(t *testing.T) {
	l := &lesson.Lesson{Slug: "00-bands"}
	// Two readers' runs, two each: 100 and 110, then 200 and 220.
	runs := [][]any{{synthetic("ops_per_sec", 100)}, {synthetic("ops_per_sec", 110)}, {synthetic("ops_per_sec", 200)}, {synthetic("ops_per_sec", 220)}}
	for _, c := range []struct {
		name, extra string
		listed      bool
	}{
		{"prediction", "predict: yes\n", true},
		{"prediction, repeat 2", "predict: yes\nrepeat: 2\n", true},
		{"reason it out", "predict: reason\n", true},
		{"reason it out, repeat 2", "predict: reason\nrepeat: 2\n", true},
		{"own figure", "", false},
		{"own figure, repeat 2", "repeat: 2\n", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			q, err := quiz.Parse("id: b\nquestion: ?\ncell: c\nanswer: $0.ops_per_sec\ntolerance: 10%\n" + c.extra)
			if err != nil {
				t.Fatal(err)
			}
			row, err := bandOf(l, q, runs)
			if err != nil {
				t.Fatal(err)
			}
			if row.listed != c.listed {
				t.Errorf("listed %v, want %v (%s)", row.listed, c.listed, row.note)
			}
		})
	}
}

// A repeat: quiz whose rounds agree in their medians but spread wider
// than the band within a reader's rounds is declined, not listed: its
// reply says the machine was too noisy to grade and grades nothing (the
// band used to widen to accept them), so no reader is graded by chance;
// the report counts it apart.
func TestBandOfDeclinesPairedSpreadWiderThanBand(t *testing.T) {
	l := &lesson.Lesson{Slug: "00-bands"}
	// Two readers' two rounds each: 80 and 130, then 85 and 125; medians
	// 105 and 105, each within one of the other reader's rounds' bands
	// and not the other's, and each reader's rounds spread wider than
	// the 20% band (both rounds outside it).
	runs := [][]any{{synthetic("ops_per_sec", 80)}, {synthetic("ops_per_sec", 130)}, {synthetic("ops_per_sec", 85)}, {synthetic("ops_per_sec", 125)}}
	q, err := quiz.Parse("id: b\nquestion: ?\ncell: c\nanswer: $0.ops_per_sec\ntolerance: 20%\npredict: yes\nrepeat: 2\n")
	if err != nil {
		t.Fatal(err)
	}
	row, err := bandOf(l, q, runs)
	if err != nil {
		t.Fatal(err)
	}
	if row.listed || !row.declined || !strings.Contains(row.note, "too noisy") {
		t.Errorf("listed %v declined %v (%s), want declined as too noisy for the band, not listed", row.listed, row.declined, row.note)
	}
	if r := bandReport([]bandRow{row}, 2, time.Second); !strings.Contains(r, "0 of 1 quizzes listed") || !strings.Contains(r, "1 more declined") {
		t.Errorf("report:\n%s\nwant 0 listed and 1 declined", r)
	}
}

// Two readers' rounds that agree among themselves but not with each
// other (100 and 105, then 200 and 210, against a 10% band) list a
// prediction; when the second reader's rounds ran on a busy machine
// (other programs at 90% of the processors just before them) the judge
// grades none of that reader's predictions, and the quiz is declined,
// not listed: nobody was graded by chance.
func TestBandOfDeclinesABusyMachine(t *testing.T) {
	l := &lesson.Lesson{Slug: "00-bands"}
	q, err := quiz.Parse("id: b\nquestion: ?\ncell: c\nanswer: $0.ops_per_sec\ntolerance: 10%\npredict: yes\nrepeat: 2\n")
	if err != nil {
		t.Fatal(err)
	}
	quiet := func(v float64) []any { return []any{synthetic("ops_per_sec", v, "cpu.idle_busy_fraction", 0.02)} }
	busy := func(v float64) []any { return []any{synthetic("ops_per_sec", v, "cpu.idle_busy_fraction", 0.9)} }
	for _, tc := range []struct {
		name             string
		runs             [][]any
		listed, declined bool
	}{
		{"both quiet", [][]any{quiet(100), quiet(105), quiet(200), quiet(210)}, true, false},
		{"the second busy", [][]any{quiet(100), quiet(105), busy(200), busy(210)}, false, true},
		{"both busy", [][]any{busy(100), busy(105), busy(200), busy(210)}, false, true},
	} {
		row, err := bandOf(l, q, tc.runs)
		if err != nil {
			t.Fatal(err)
		}
		if row.listed != tc.listed || row.declined != tc.declined {
			t.Errorf("%s: listed %v declined %v (%s), want listed %v declined %v", tc.name, row.listed, row.declined, row.note, tc.listed, tc.declined)
		}
	}
}
