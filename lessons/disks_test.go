package lessons_test

import (
	"flag"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"kvlab/harness"
	"kvlab/harness/harnesstest"
	"kvlab/internal/quiz"
	"kvlab/internal/server"
)

// "Predict your disk" means the disk matters. Every predict: yes quiz
// (and run: quiz) asks the reader to predict a figure of their own disk;
// one whose answer comes out the same on a disk whose flush costs 50 µs
// and on one whose flush costs 2 ms is not such a prediction: it follows
// from how the engine or the schedule works, and is asked as "reason it
// out" (predict: reason) instead. TestPredictionsDependOnTheDisk runs each
// such quiz's cell (scaled down) on two simulated disks
// (harnesstest.SimulateDisk: kv's files live in memory, where a write is a
// copy, and every fdatasync of kv and of the probe waits the simulated
// flush cost and nothing else) and fails where the two answers are not
// clearly apart: within the quiz's band of each other, or less than
// diskMargin apart. A 40× difference in flush cost moves an answer that
// reads the disk far; the wide margin keeps the verdict the same on a
// machine at load 20, whose scheduling delays blur a fast disk's figures.
// A quiz judged the same is run again, up to diskAttempts pairs in all,
// and fails only when every pair agrees. The probe's files go to an
// in-memory filesystem (/dev/shm) when there is one. Cells that run other
// engines (whose flushes the simulation cannot slow) or crash lines are
// skipped, and say so.

// simulatedDisks are the two flush costs the check compares.
var simulatedDisks = []time.Duration{50 * time.Microsecond, 2 * time.Millisecond}

// diskScale shrinks each cell's -ops and -duration for the check.
const diskScale = 0.2

// diskMargin is how far apart (as a factor) the two disks' answers must
// be, beyond the quiz's band, for the quiz to read the disk.
const diskMargin = 2.0

// diskAttempts is how many pairs of runs a quiz gets to show that its
// answer moves with the disk.
const diskAttempts = 3

// disksCheck runs the check at a larger scale (make bench): more samples
// per line, the same verdict.
var disksCheck = flag.Bool("disks", false, "run the disk check's cells at a larger scale (make bench)")

func TestPredictionsDependOnTheDisk(t *testing.T) {
	lim := server.DefaultLimits()
	scale := diskScale
	if *disksCheck {
		scale = 0.5
	}
	// The quizzes on one cell share its runs: attempt k of each reads
	// the cell's k-th pair.
	runs := diskRuns{}
	for _, l := range load(t) {
		for _, q := range l.Quizzes {
			if !q.IsPrediction() || q.Reason {
				continue
			}
			t.Run(l.Slug+"/"+q.ID, func(t *testing.T) {
				lines := q.Run
				if q.Run == nil {
					c := l.Cell(q.Cell)
					if c == nil {
						t.Fatalf("no cell %s", q.Cell)
					}
					lines = c.Lines
				}
				if why := notFlushBound[q.ID]; why != "" {
					t.Skip(why)
				}
				if why := notSimulated(lines, lim); why != "" {
					t.Skip(why)
				}
				var tried []string
				for k := range diskAttempts {
					answers, err := runs.answers(t, q, lines, scale, lim, k)
					if err != nil {
						t.Fatal(err)
					}
					if !sameOnBothDisks(t, q, answers) {
						t.Logf("answers %s (%v flush) and %s (%v flush)", quiz.FormatNumber(answers[0].value), simulatedDisks[0], quiz.FormatNumber(answers[1].value), simulatedDisks[1])
						return
					}
					tried = append(tried, fmt.Sprintf("%s and %s", quiz.FormatNumber(answers[0].value), quiz.FormatNumber(answers[1].value)))
				}
				t.Errorf("on a %v-flush disk and a %v-flush disk the answers were %s: within its band (%s) or less than ×%g apart, so it does not depend on the reader's disk; ask it as predict: reason (\"reason it out\") or ask for a figure the disk sets",
					simulatedDisks[0], simulatedDisks[1], strings.Join(tried, "; "), q.Tol, diskMargin)
			})
		}
	}
}

// diskAnswer is one simulated disk's run of a quiz's lines and its answer.
type diskAnswer struct {
	results []any
	value   float64
}

// notFlushBound are predictions of the reader's disk through a property
// the simulated disks do not vary (they differ in flush cost only), each
// with that property.
var notFlushBound = map[string]string{
	"value-size-ops": "its answer is set by the disk's bandwidth for large records, which the simulated disks do not model",
	"cheapest-sync":  "its answer is which sync call this disk and kernel make cheapest, which the simulated disks do not model",
	// On the simulated disks every flush takes exactly its cost, so an
	// always line's p99 over its p50 is the machine's scheduling on
	// either disk (three pairs at load 4: 1.95 and 3.62, 9.45 and 4.25,
	// 1.86 and 2.08); a real disk's ratio is how much its flushes vary,
	// which a flush of fixed cost cannot show.
	"tail-ratio": "its answer is set by how much this disk's flush times vary, which the simulated disks (every flush exactly its cost) do not model",
}

// notSimulated says why the simulation cannot judge lines ("" when it
// can): an engine other than kv (or null, which never flushes), a crash
// line or a probe of the sync calls.
func notSimulated(lines []string, lim harness.Limits) string {
	for _, line := range lines {
		s, err := harness.ParseSpec(line, lim)
		if err != nil {
			return fmt.Sprintf("%q: %v", line, err)
		}
		if s.Cmd == "crash" {
			return "a crash line: where a crash lands is asked of the reader's runs"
		}
		if s.Cmd == "probe" && s.Methods {
			return "probe -methods: the sync calls are the real disk's"
		}
		for _, e := range s.Engines {
			if e != "kv" && e != "null" {
				return fmt.Sprintf("engine %s flushes on its own; the simulated flush cost slows kv and the probe only", e)
			}
		}
	}
	return ""
}

// diskRuns keeps each cell's results on the simulated disks, by its
// lines and attempt, so that the quizzes on one cell share its runs.
type diskRuns map[string][][]any

// answers evaluates q on attempt k's runs of lines on the simulated
// disks, running them first if no quiz on the same lines has.
func (dr diskRuns) answers(t *testing.T, q *quiz.Quiz, lines []string, f float64, lim harness.Limits, k int) ([]diskAnswer, error) {
	key := fmt.Sprintf("%d\n%s", k, strings.Join(lines, "\n"))
	rs, ok := dr[key]
	if !ok {
		var err error
		if rs, err = runOnDisks(t, lines, f, lim); err != nil {
			return nil, err
		}
		dr[key] = rs
	}
	var out []diskAnswer
	for i, d := range simulatedDisks {
		v, err := q.Evaluate(rs[i])
		if err != nil {
			return nil, fmt.Errorf("%v-flush disk: %v", d, err)
		}
		out = append(out, diskAnswer{rs[i], v})
	}
	return out, nil
}

// runOnDisks runs lines, scaled by f, on each simulated disk.
func runOnDisks(t *testing.T, lines []string, f float64, lim harness.Limits) ([][]any, error) {
	// The kv engine's files are in memory (harnesstest.SimulateDisk); the
	// probe's are real files, put in memory too where the system has an
	// in-memory filesystem, so that its fdatasync costs what is simulated.
	dir := t.TempDir()
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		if d, err := os.MkdirTemp("/dev/shm", "kvlab-disks-"); err == nil {
			defer os.RemoveAll(d)
			dir = d
		}
	}
	var out [][]any
	for _, d := range simulatedDisks {
		restore := harnesstest.SimulateDisk(d)
		rs, err := execIn(t, dir, lines, f, lim, 1)
		restore()
		if err != nil {
			return nil, err
		}
		out = append(out, rs)
	}
	return out, nil
}

// sameOnBothDisks reports whether the two disks' answers are not clearly
// apart: each graded right against the other disk's run, or (for a
// numeric quiz) less than diskMargin apart. A share (both answers
// between 0 and 1) is also judged by what it leaves: the share of time a
// flusher spends in fdatasync, say, can never be twice 0.6, yet 0.6 and
// 0.97 leave 0.4 and 0.03 of the time idle, 13 times apart, and it is
// that rest the disk moves.
func sameOnBothDisks(t *testing.T, q *quiz.Quiz, a []diskAnswer) bool {
	x, y := a[0].value, a[1].value
	apart := farApart(x, y, diskMargin) || isShare(x) && isShare(y) && farApart(1-x, 1-y, diskMargin)
	if q.Choices == nil && !apart {
		return true
	}
	same := true
	for i := range a {
		other := a[1-i]
		answer := quiz.FormatNumber(a[i].value)
		if q.Choices != nil {
			answer = fmt.Sprint(int(a[i].value))
		}
		fb, err := quiz.Check(q, other.results, answer)
		if err != nil {
			t.Fatalf("checking %s against the other disk: %v", answer, err)
		}
		same = same && fb.Correct
	}
	return same
}

// isShare reports whether v can be a share of a whole: 0 to 1.
func isShare(v float64) bool { return v >= 0 && v <= 1 }

// farApart reports whether a and b differ by more than the factor m: one
// more than m times the other, or of opposite signs, or one zero and the
// other not.
func farApart(a, b, m float64) bool {
	a, b = math.Abs(a), math.Abs(b)
	switch {
	case a == b:
		return false
	case a == 0 || b == 0:
		return true
	}
	return max(a, b)/min(a, b) > m
}

// The check itself: a quiz whose answer reads the flush cost is judged to
// depend on the disk; one that reads a fixed figure is not.
func TestDiskCheckJudges(t *testing.T) {
	mk := func(answer string) *quiz.Quiz {
		q, err := quiz.Parse("id: d\nquestion: ?\ncell: c\npredict: yes\nanswer: " + answer + "\ntolerance: 20%")
		if err != nil {
			t.Fatal(err)
		}
		return q
	}
	res := func(fsync, ops float64) diskAnswer {
		return diskAnswer{results: []any{map[string]any{"fsync_mean_ns": fsync, "ops": ops}}}
	}
	fast, slow := res(50e3, 1000), res(2e6, 1000)
	for _, c := range []struct {
		answer string
		same   bool
	}{
		{"$0.fsync_mean_ns", false},
		{"$0.ops / 1000", true},
		// Outside a 20 % band, but only 1.5× apart for a 40× flush
		// cost: a busy machine can do that to a figure the disk does not
		// set.
		{"1 + $0.fsync_mean_ns / 4e6", true},
		// A share of the time spent flushing, 0.6 on the fast disk and
		// 0.98 on the slow one: less than 2× apart, but what it leaves
		// (0.4 and 0.02) is 24× apart.
		{"$0.fsync_mean_ns / ($0.fsync_mean_ns + 34e3)", false},
		// A share the flush barely moves (0.5 and 0.51) stays the same.
		{"0.5 + $0.fsync_mean_ns / 2e8", true},
	} {
		q := mk(c.answer)
		a := []diskAnswer{fast, slow}
		for i := range a {
			v, err := q.Evaluate(a[i].results)
			if err != nil {
				t.Fatal(err)
			}
			a[i].value = v
		}
		if got := sameOnBothDisks(t, q, a); got != c.same {
			t.Errorf("answer %s: same on both disks %v, want %v", c.answer, got, c.same)
		}
	}
}
