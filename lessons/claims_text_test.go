package lessons_test

// Claims about the lessons' own text: what a sentence says about a source,
// an exercise, a quiz beside it or the chapter's layout, checked against
// that source, exercise or quiz. None of these runs a cell.

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/perf/benchmath"

	"kvlab/harness/calc"
	"kvlab/internal/quiz"
	"kvlab/wasm/grader"
)

// flat is s with every run of white space made one space, so that a test
// can look for a phrase however the paragraph is wrapped.
func flat(s string) string { return strings.Join(strings.Fields(s), " ") }

// Lesson 7 quotes the Mini-KV write-up's batch-of-100 figures, which are
// its averages over ten trials, not one trial's.
func TestMiniKVFiguresAreAverages(t *testing.T) {
	body := flat(string(lessonByPrefix(t, "07-").Body))
	i := strings.Index(body, "4,780 durable records")
	if i < 0 {
		t.Fatal("lesson 7 no longer quotes the Mini-KV figures; drop this test with them")
	}
	before := body[max(0, i-120):i]
	if strings.Contains(before, "a batch-of-100 trial") {
		t.Errorf("lesson 7 calls the Mini-KV averages one trial: %q", before)
	}
	if !strings.Contains(before, "averaged over its ten trials") {
		t.Errorf("lesson 7 does not say the Mini-KV figures are averages over its ten trials: %q", before)
	}
}

// Lesson 9 sources the steady-state discipline as the course's reference
// does (a discipline written around db_bench), not as RocksDB's own
// guidance; and background-drift asks about the seconds its answer reads.
func TestChapter9SourcesAndSeconds(t *testing.T) {
	l := lessonByPrefix(t, "09-")
	body := flat(string(l.Body))
	for _, bad := range []string{"RocksDB's `db_bench` guidance", "`db_bench`'s guidance"} {
		if strings.Contains(body, bad) {
			t.Errorf("lesson 9 credits the discipline to %q", bad)
		}
	}
	// A drift quiz reads seconds timeline[0..k-1]; its question must say
	// how many, in words.
	words := map[int]string{2: "two", 3: "three", 4: "four", 5: "five", 6: "six"}
	idx := regexp.MustCompile(`timeline\[(\d+)\]`)
	for _, id := range []string{"steady-drift", "background-drift"} {
		q := quizByID(t, l, id)
		read := map[int]bool{}
		for _, m := range idx.FindAllStringSubmatch(q.Answer.String(), -1) {
			k, _ := strconv.Atoi(m[1])
			read[k] = true
		}
		w, ok := words[len(read)]
		if !ok {
			t.Fatalf("quiz %s reads %d seconds of the timeline; teach this test the word for it", id, len(read))
		}
		if !strings.Contains(q.Question, w+" seconds") && !strings.Contains(q.Question, w+" full seconds") {
			t.Errorf("quiz %s reads the first %d seconds, but its question does not say %q: %q", id, len(read), w+" seconds", q.Question)
		}
	}
}

// Lesson 2 lists every broken version the percentile-tests exercise runs
// (six, with the float trap), and states the exact millionths rank that
// calc.Rank's comment says it states, not an epsilon.
func TestChapter2MatchesTheExercises(t *testing.T) {
	l := lessonByPrefix(t, "02-")
	body := flat(string(l.Body))
	src := "package main\n\nvar Cases = []struct {\n\tSorted []int64\n\tP float64\n\tWant int64\n}{\n\t{[]int64{1, 2, 3}, 50, 2},\n}\n"
	r := grader.Run("percentile-tests", src)
	if r.Error != nil {
		t.Fatalf("percentile-tests on a one-row table: %v", r.Error)
	}
	// The phrase the lesson uses for each broken version.
	phrase := map[string]string{
		"float-rank":   "computes the rank in floating point",
		"floor":        "uses floor instead of ceil",
		"no-clamp":     "with no clamp",
		"no-minus-one": "forgets the −1",
		"interpolate":  "interpolates",
		"mean":         "returns the mean",
	}
	ex := section(t, l, "Exercise 2")
	for _, m := range r.Mutants {
		p, ok := phrase[m.Name]
		if !ok {
			t.Errorf("the exercise runs a broken version %q (%s) this test has no phrase for", m.Name, m.Description)
			continue
		}
		if !strings.Contains(flat(ex), p) {
			t.Errorf("lesson 2's exercise 2 does not list the broken version %s (%q)", m.Name, p)
		}
	}
	numbers := []string{"", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"}
	if n := len(r.Mutants); n >= len(numbers) || !strings.Contains(flat(ex), numbers[n]+" broken versions") {
		t.Errorf("lesson 2's exercise 2 does not say it runs %d broken versions", n)
	}
	if strings.Contains(body, "epsilon of an integer") {
		t.Errorf("lesson 2 still recommends rounding within an epsilon")
	}
	for _, want := range []string{"millionths", "(pm·n + 99,999,999) / 100,000,000"} {
		if !strings.Contains(body, want) {
			t.Errorf("lesson 2 does not state the exact rank calc.Rank's comment says it states: no %q", want)
		}
	}
	// The formula as written, on the float trap's own inputs.
	for _, tc := range []struct {
		p float64
		n int64
	}{{99.9, 1000}, {14, 50}, {64.4, 250}, {91, 10}} {
		pm := int64(tc.p*1_000_000 + 0.5)
		if got, want := (pm*tc.n+99_999_999)/100_000_000, calc.Rank(tc.p, tc.n); got != want {
			t.Errorf("the lesson's formula gives rank %d for p%v of %d, calc.Rank %d", got, tc.p, tc.n, want)
		}
	}
}

// Lesson 4's "What to look for" after the probe names the statistic the
// quiz beside it compares.
func TestProbeParagraphNamesTheQuizStatistic(t *testing.T) {
	l := lessonByPrefix(t, "04-")
	body := flat(string(l.Body))
	m := regexp.MustCompile(`Compare their (\w+)`).FindStringSubmatch(body)
	if m == nil {
		t.Fatal(`lesson 4 no longer says "Compare their ..." after the probe`)
	}
	field := map[string]string{"means": "mean_ns", "p50s": "p50_ns", "medians": "p50_ns", "p99s": "p99_ns"}[m[1]]
	ans := quizByID(t, l, "flush-vs-write").Answer.String()
	if field == "" || !strings.Contains(ans, "write_fdatasync."+field) || !strings.Contains(ans, "write."+field) {
		t.Errorf("lesson 4 says to compare the %s, but the quiz beside it computes %q", m[1], ans)
	}
}

// Every show line labels each loss it prints by which loss it is: an
// acknowledged write that was lost (lost_acked) is allowed, a durable one
// (lost) never is, and "lost 81 … lost 0" does not say which is which.
func TestShowLinesNameEachLoss(t *testing.T) {
	ref := regexp.MustCompile(`\$\d+\.(lost_acked|lost)\b`)
	strip := regexp.MustCompile(`\{[^}]*\}|\$\d+(\.[\w\[\]]+)*`)
	for _, l := range load(t) {
		for _, q := range l.Quizzes {
			for _, clause := range strings.Split(q.Show, ";") {
				labels := strip.ReplaceAllString(clause, "")
				for _, m := range ref.FindAllStringSubmatch(clause, -1) {
					var ok bool
					switch m[1] {
					case "lost_acked":
						ok = strings.Contains(labels, "lost_acked") || strings.Contains(labels, "acknowledged but lost")
					case "lost":
						ok = strings.Contains(labels, "durable")
					}
					if !ok {
						t.Errorf("%s: quiz %s shows %s in %q without saying which loss it is", l.Slug, q.ID, m[0], strings.TrimSpace(clause))
					}
				}
			}
		}
	}
}

// Lesson 7 teaches every power-cut model the crash command takes.
func TestChapter7NamesEveryPowerMode(t *testing.T) {
	body := flat(string(lessonByPrefix(t, "07-").Body))
	if !strings.Contains(body, "-power-mode") {
		t.Errorf("lesson 7 never mentions -power-mode")
	}
	for _, mode := range []string{"prefix", "reorder", "pages", "dirent"} {
		if !strings.Contains(body, "`"+mode+"`") && !strings.Contains(body, "-power-mode "+mode) {
			t.Errorf("lesson 7 does not name the power mode %q", mode)
		}
	}
}

// "Try this" closes every chapter: a section after it is read as an
// afterthought, or not at all.
func TestTryThisIsTheLastSection(t *testing.T) {
	for _, l := range load(t) {
		body := string(l.Body)
		i := strings.Index(body, "\n## Try this")
		if i < 0 {
			continue // TestFrontMatter reports it
		}
		if j := strings.Index(body[i+1:], "\n## "); j >= 0 {
			next, _, _ := strings.Cut(body[i+1+j+1:], "\n")
			t.Errorf("%s: %q comes after \"Try this\"", l.Slug, next)
		}
	}
}

// Lesson 6 gives PostgreSQL's commit_delay its default, 0 (off), where it
// names it beside the engine's commit delay.
func TestCommitDelayDefault(t *testing.T) {
	body := flat(string(lessonByPrefix(t, "06-").Body))
	i := strings.Index(body, "the same knob, `commit_delay`")
	if i < 0 {
		t.Fatal("lesson 6 no longer compares the commit delay with PostgreSQL's commit_delay")
	}
	if near := body[i:min(len(body), i+300)]; !strings.Contains(near, "default is 0") {
		t.Errorf("lesson 6 names commit_delay without its default, 0: %q", near)
	}
}

// Lesson 9 teaches sample size for the U test benchstat and compare use:
// with 3 runs a side the smallest two-sided p is 0.10, so no change can
// be significant at 0.05, and the fewest runs that can be is 4 a side
// (the text it replaced called three repeats "the usual minimum"). The
// p-values the lesson quotes are benchmath's own.
func TestChapter9TeachesSampleSize(t *testing.T) {
	body := flat(string(lessonByPrefix(t, "09-").Body))
	if strings.Contains(body, "Three repeats is the usual minimum") {
		t.Errorf("lesson 9 still calls three repeats the usual minimum")
	}
	th := benchmath.DefaultThresholds
	th.CompareAlpha = 0.05
	// p of n runs a side, apart, or with the closest pair swapped.
	p := func(n int, swapped bool) float64 {
		a, b := make([]float64, n), make([]float64, n)
		for i := range n {
			a[i], b[i] = float64(i), float64(n+i)
		}
		if swapped {
			a[n-1], b[0] = b[0], a[n-1]
		}
		return benchmath.AssumeNothing.Compare(benchmath.NewSample(a, &th), benchmath.NewSample(b, &th)).P
	}
	fewest := 0
	for n := 2; n <= 10 && fewest == 0; n++ {
		if p(n, false) <= th.CompareAlpha {
			fewest = n
		}
	}
	words := []string{"", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"}
	for _, want := range []string{
		fmt.Sprintf("p = %.2f at best", p(3, false)),
		fmt.Sprintf("at least %s a side", words[fewest]),
		fmt.Sprintf("p = %.3f at best", p(4, false)),
		fmt.Sprintf("p is %.3f", p(4, true)),
		fmt.Sprintf("(%.3f)", p(5, true)),
		fmt.Sprintf("(%.4f)", p(6, true)),
		"too few runs",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("lesson 9 does not say %q", want)
		}
	}
}

// Lesson 9 says the instrument runs interleaved, mirrored rounds and
// compares lines round by round (harness.benchLine, runq's rounds).
func TestLesson9SaysTheInstrumentInterleaves(t *testing.T) {
	text := flat(string(lessonByPrefix(t, "09-").Body))
	for _, want := range []string{"mirrored rounds", "`round` and `started_at`", "median of the per-round ratios", "too noisy to grade"} {
		if !strings.Contains(text, want) {
			t.Errorf("lesson 9 does not say %q", want)
		}
	}
	// It states the judge's busy-machine rule with the judge's figures.
	if quiz.BusyOtherCPU != 0.25 {
		t.Errorf("the judge declines with other programs at %v of the processors; lesson 9 says a quarter", quiz.BusyOtherCPU)
	}
	for _, want := range []string{"other programs holding a quarter of the processors", "another program writing to the disk, in the idle moment the harness takes just before each run"} {
		if !strings.Contains(text, want) {
			t.Errorf("lesson 9 does not say when the machine is too busy to grade a prediction: %q", want)
		}
	}
}

// A bench result's own batch model is bookkeeping (fed by the run it
// describes, it restates the run's throughput): no quiz may grade or
// show it as a prediction, and lesson 5 tests the model with a model line
// run before the bench, in the same cell.
func TestNoQuizGradesTheRunFedModel(t *testing.T) {
	for _, l := range load(t) {
		for _, q := range l.Quizzes {
			if q.ID == "miss-run" {
				t.Errorf("%s: quiz miss-run grades an identity (the run-fed model divided into the run it was fed by)", l.Slug)
			}
		}
		for _, block := range strings.Split(string(l.Body), "```quiz")[1:] {
			block = block[:strings.Index(block, "```")]
			if strings.Contains(block, ".model.predicted_ops_per_sec") {
				t.Errorf("%s: a quiz reads a bench result's run-fed model.predicted_ops_per_sec (bookkeeping, not a prediction):\n%s", l.Slug, block)
			}
		}
	}
	body := flat(string(lessonByPrefix(t, "05-").Body))
	for _, want := range []string{"```lab miss model -sync batch:64 bench -engine kv -sync batch:64", "bookkeeping, not a prediction", "mirrored rounds"} {
		if !strings.Contains(body, want) {
			t.Errorf("lesson 5 does not say %q", want)
		}
	}
}

// Device-counter quizzes are graded on counts net of the idle baseline
// (or a ratio of two engines run side by side), never on the whole
// device's raw counts, which carry every other writer's requests; and the
// text above them does not give their answer away.
func TestDeviceQuizzesGradeNetCounts(t *testing.T) {
	for _, l := range load(t) {
		for _, q := range l.Quizzes {
			src := q.Answer.String()
			for _, raw := range []string{"device_io.flushes_per_op", "device_io.write_requests_per_op", "device_io.device_bytes_per_logical_byte", "device_io.flush_requests", "device_io.write_requests"} {
				if strings.Contains(src, raw) {
					t.Errorf("%s/%s: answer %q reads the raw %s; grade the net_ count or a ratio of two engines in one round", l.Slug, q.ID, src, raw)
				}
			}
		}
	}
	body := flat(string(lessonByPrefix(t, "08-").Body))
	for _, id := range []string{"bbolt-device-flushes", "zero-fill-from-the-disk"} {
		at := strings.Index(body, "id: "+id)
		if at < 0 {
			t.Fatalf("lesson 8 has no quiz %s", id)
		}
		above := body[:at]
		if prev := strings.LastIndex(above, "```quiz"); prev >= 0 {
			above = above[:prev]
		}
		if k := strings.LastIndex(above, "```"); k >= 0 {
			above = above[k:] // the prose since the block before it
		}
		for _, giveaway := range []string{"fdatasyncs again", "two flushes", "is about 2"} {
			if strings.Contains(above, giveaway) {
				t.Errorf("the text above quiz %s gives its answer away: %q", id, giveaway)
			}
		}
	}
}

// The errors in the text that a careful reader found, each pinned: the
// wrong phrase is gone and the right one is there.
func TestTextErrorsFixed(t *testing.T) {
	for _, c := range []struct {
		lesson, gone, want string
	}{
		// power-batch-share's figure is made on the in-memory filesystem.
		{"07-", "depends on this disk's flush cost: a fast flush", "the power cuts run on the in-memory filesystem"},
		// a Put under -sync none copies into the write buffer.
		{"03-", "Every Put of the kv engine is a system call and a lock", "copies the record into the engine's write buffer"},
		// rate × (D + T_fsync) is a worst case of a cycle, not an expectation.
		{"05-", "the window is an expected length", "rate × (D/2 + T_fsync) on average"},
		// records grow about 400×, not 512×.
		{"04-", "Near 512 means bandwidth-bound", "Near 400 means bandwidth-bound"},
		// AOF is off by default in Redis.
		{"06-", "| Redis `appendfsync everysec` (the default) |", "Redis ships with it off"},
		// synchronous_commit=off is periodic:D in both chapters.
		{"11-", "PostgreSQL's `synchronous_commit=off` is `-sync none`", "`-sync periodic:D` with D its `wal_writer_delay`"},
		// 1/(1−u) is M/M/1's, and the harness spaces arrivals evenly.
		{"10-", "a queue's waiting time grows as 1/(1 − utilization), doubling from a half", "Kingman's formula"},
		// the knee of group commit is at n* ≈ T_fsync/T_write.
		{"06-", "and bends by 32", "n* ≈ T_fsync ÷ T_write"},
		// the sweep goes far enough to show what the formula says.
		{"06-", "-threads 1,2,4,8,16,32,64 -duration", "-threads 1,2,4,8,16,32,64,128,256 -duration"},
	} {
		body := flat(string(lessonByPrefix(t, c.lesson).Body))
		if strings.Contains(body, flat(c.gone)) {
			t.Errorf("lesson %s still says %q", c.lesson, c.gone)
		}
		if !strings.Contains(body, flat(c.want)) {
			t.Errorf("lesson %s does not say %q", c.lesson, c.want)
		}
	}
	// Ratios of tails move by factors: their bands are factors.
	for _, l := range load(t) {
		for _, q := range l.Quizzes {
			if (q.ID == "mean-over-p50" || q.ID == "periodic-p99") && !q.Tol.Factor {
				t.Errorf("%s/%s: a ratio of tails with a percent band (%s); give it a factor band", l.Slug, q.ID, q.Tol)
			}
		}
	}
}
