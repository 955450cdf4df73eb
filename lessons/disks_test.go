package lessons_test

import (
	"flag"
	"fmt"
	"os"
	"testing"
	"time"

	"kvlab/harness"
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
// (harness.SimulateFlushCost adds the flush cost to every kv and probe
// fdatasync) and fails where each disk's answer lies within the quiz's
// band around the other's. The runs go to an in-memory filesystem
// (/dev/shm), whose own fdatasync is next to free, so each simulated flush
// cost is the whole of the disk's. Cells that run other engines (whose flushes
// the simulation cannot slow) or crash lines are skipped, and say so.

// simulatedDisks are the two flush costs the check compares.
var simulatedDisks = []time.Duration{50 * time.Microsecond, 2 * time.Millisecond}

// diskScale shrinks each cell's -ops and -duration for the check.
const diskScale = 0.2

// disksCheck turns the check on (make bench): on a machine at load 12–30
// its verdict on a quiz moved between runs, so it does not run in make
// test, where a test must not depend on the machine being quiet.
var disksCheck = flag.Bool("disks", false, "run every predict: yes quiz's cell on two simulated disks (make bench)")

func TestPredictionsDependOnTheDisk(t *testing.T) {
	if !*disksCheck {
		t.Skip("the disk check runs with -disks (make bench)")
	}
	lim := server.DefaultLimits()
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
				answers, err := answersOnDisks(t, q, lines, lim)
				if err != nil {
					t.Fatal(err)
				}
				// A busy machine can blur two disks for one pair of
				// runs: the quiz is judged the same only when a second
				// pair agrees.
				if sameOnBothDisks(t, q, answers) {
					if answers, err = answersOnDisks(t, q, lines, lim); err != nil {
						t.Fatal(err)
					}
				}
				if sameOnBothDisks(t, q, answers) {
					t.Errorf("the answer stays within its band on a %v-flush disk (%s) and a %v-flush disk (%s): it does not depend on the reader's disk; ask it as predict: reason (\"reason it out\")",
						simulatedDisks[0], quiz.FormatNumber(answers[0].value), simulatedDisks[1], quiz.FormatNumber(answers[1].value))
				}
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

// answersOnDisks runs lines on each simulated disk and evaluates q.
func answersOnDisks(t *testing.T, q *quiz.Quiz, lines []string, lim harness.Limits) ([]diskAnswer, error) {
	// In memory (tmpfs), where an fdatasync costs next to nothing, so
	// that the simulated flush cost is the disk's whole flush cost.
	dir := "/dev/shm"
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		t.Skip("no /dev/shm: the simulated disks need an in-memory filesystem under them")
	}
	dir, err := os.MkdirTemp(dir, "kvlab-disks-")
	if err != nil {
		t.Skip(err)
	}
	defer os.RemoveAll(dir)
	var out []diskAnswer
	for _, d := range simulatedDisks {
		restore := harness.SimulateFlushCost(d)
		rs, err := execIn(t, dir, lines, diskScale, lim, 1)
		restore()
		if err != nil {
			return nil, err
		}
		v, err := q.Evaluate(rs)
		if err != nil {
			return nil, fmt.Errorf("%v-flush disk: %v", d, err)
		}
		out = append(out, diskAnswer{rs, v})
	}
	return out, nil
}

// sameOnBothDisks reports whether each disk's answer is graded right
// against the other disk's run.
func sameOnBothDisks(t *testing.T, q *quiz.Quiz, a []diskAnswer) bool {
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
	}{{"$0.fsync_mean_ns", false}, {"$0.ops / 1000", true}} {
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
