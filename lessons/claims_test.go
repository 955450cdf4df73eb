package lessons_test

// Claims are tests: each test here pins one thing a lesson tells the
// reader they will see, by running the lesson's own cells on the real
// engine (or the crashable filesystem where that is the point) and checking
// the relation, or by checking that a quiz computes what the lesson says it
// computes. Relations are written with margins a busy 2-core machine keeps
// (ratios measured in the same run, counts, orderings), and each would fail
// on the text it replaced: the test names say which claim.

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"kvlab/engine"
	"kvlab/harness"
	"kvlab/internal/lesson"
	"kvlab/internal/quiz"
	"kvlab/internal/server"
)

// cellCache holds each cell's results at full size, so that the claims
// tests and TestCellsRunAndQuizzesCheck run every cell once.
var cellCache struct {
	sync.Mutex
	m map[string][]any // "slug/cell" -> results
}

// cellResults runs the named cell of the lesson whose file name starts with
// prefix (e.g. "05-") at full size, once per test binary.
func cellResults(t *testing.T, prefix, cell string) []any {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: the lessons' claims hold for the cells at their full size")
	}
	l, c := cellByID(t, prefix, cell)
	return cachedRun(t, l.Slug, c)
}

// cellByID finds the named cell of the lesson whose file name starts with
// prefix.
func cellByID(t *testing.T, prefix, cell string) (*lesson.Lesson, *lesson.Cell) {
	t.Helper()
	l := lessonByPrefix(t, prefix)
	for _, c := range l.Cells {
		if c.ID == cell {
			return l, c
		}
	}
	t.Fatalf("%s: no cell %q", l.Slug, cell)
	return nil, nil
}

// cachedRun runs c's lines at full size unless they already ran.
func cachedRun(t *testing.T, slug string, c *lesson.Cell) []any {
	t.Helper()
	key := slug + "/" + c.ID
	cellCache.Lock()
	defer cellCache.Unlock()
	if rs, ok := cellCache.m[key]; ok {
		return rs
	}
	rs, err := execLines(t, c.Lines, 1, server.DefaultLimits())
	if err != nil {
		t.Fatalf("cell %s: %v", key, err)
	}
	if cellCache.m == nil {
		cellCache.m = map[string][]any{}
	}
	cellCache.m[key] = rs
	return rs
}

func lessonByPrefix(t *testing.T, prefix string) *lesson.Lesson {
	t.Helper()
	for _, l := range load(t) {
		if strings.HasPrefix(l.File, prefix) {
			return l
		}
	}
	t.Fatalf("no lesson file starts with %q", prefix)
	return nil
}

func quizByID(t *testing.T, l *lesson.Lesson, id string) *quiz.Quiz {
	t.Helper()
	for _, q := range l.Quizzes {
		if q.ID == id {
			return q
		}
	}
	t.Fatalf("%s: no quiz %q", l.Slug, id)
	return nil
}

// answer evaluates q's answer on results.
func answer(t *testing.T, q *quiz.Quiz, results []any) float64 {
	t.Helper()
	v, err := q.Answer.Eval(results)
	if err != nil {
		t.Fatalf("quiz %s: answer %q: %v", q.ID, q.Answer, err)
	}
	if v.IsStr {
		t.Fatalf("quiz %s: answer gave the string %q", q.ID, v.Str)
	}
	return v.Num
}

// num reads a number at a dotted path of a decoded result ("latency.put.p99_ns";
// a number picks an array element: "latency.put.start.0.p50_ns").
func num(t *testing.T, v any, path string) float64 {
	t.Helper()
	f, ok := lookup(v, path)
	if !ok {
		t.Fatalf("result has no number at %s", path)
	}
	return f
}

func lookup(v any, path string) (float64, bool) {
	cur := v
	for _, k := range strings.Split(path, ".") {
		if a, ok := cur.([]any); ok { // "start.0": an array's element
			i, err := strconv.Atoi(k)
			if err != nil || i < 0 || i >= len(a) {
				return 0, false
			}
			cur = a[i]
			continue
		}
		m, ok := cur.(map[string]any)
		if !ok {
			return 0, false
		}
		cur = m[k]
	}
	f, ok := cur.(float64)
	return f, ok
}

// typicalFsync is the run's median fdatasync, or its mean where the result
// does not carry the distribution.
func typicalFsync(t *testing.T, r any) float64 {
	t.Helper()
	if f, ok := lookup(r, "fsync_p50_ns"); ok && f > 0 {
		return f
	}
	return num(t, r, "fsync_mean_ns")
}

// synthetic builds a result from JSON-like nested maps written as a path
// list: synthetic("a.b", 1, "c", "x") is {"a":{"b":1},"c":"x"}.
func synthetic(kv ...any) map[string]any {
	root := map[string]any{"kind": "bench"}
	for i := 0; i+1 < len(kv); i += 2 {
		parts := strings.Split(kv[i].(string), ".")
		m := root
		for _, p := range parts[:len(parts)-1] {
			next, ok := m[p].(map[string]any)
			if !ok {
				next = map[string]any{}
				m[p] = next
			}
			m = next
		}
		v := kv[i+1]
		if n, ok := v.(int); ok {
			v = float64(n)
		}
		m[parts[len(parts)-1]] = v
	}
	return root
}

// section returns the lesson body from the heading that starts with title
// up to the next heading of the same level.
func section(t *testing.T, l *lesson.Lesson, title string) string {
	t.Helper()
	body := string(l.Body)
	i := strings.Index(body, "\n## "+title)
	if i < 0 {
		t.Fatalf("%s: no section %q", l.Slug, title)
	}
	rest := body[i+1:]
	if j := strings.Index(rest[3:], "\n## "); j >= 0 {
		rest = rest[:j+3]
	}
	return rest
}

// Lesson 5, "periodic: a timer instead of a count": the engine's periodic
// fdatasync runs outside the write lock, so p99 stays on the fast path
// for a closed-loop writer and for an open-loop stream alike. (The text it
// replaced said p99 moves to the slow path once T_fsync/D passes 1%.)
func TestPeriodicP99StaysOnTheFastPath(t *testing.T) {
	l := lessonByPrefix(t, "05-")
	sec := section(t, l, "periodic: a timer instead of a count")
	for _, want := range []string{"outside the write", "never waits for the timer's flush", "open-loop"} {
		if !strings.Contains(sec, want) {
			t.Errorf("the periodic section does not say %q", want)
		}
	}
	quizByID(t, l, "periodic-p99")
	// Each line's p99 as a share of its typical fdatasync. The fast path
	// is a write, the slow path an fdatasync: a p99 a quarter of a typical
	// flush or less is on the fast path.
	shares := func(rs []any) []float64 {
		if len(rs) != 2 {
			t.Fatalf("periodic cell: %d results, want 2 (closed loop, then open loop)", len(rs))
		}
		var out []float64
		for i, r := range rs {
			// The open-loop line's Puts, timed from their actual start:
			// the time they spent in the store, which a blocking flush
			// would lengthen for every arrival during it.
			which := "latency.put.p99_ns"
			if i == 1 {
				which = "latency_uncorrected.put.p99_ns"
			}
			fs := typicalFsync(t, r)
			if fs <= 0 {
				t.Fatalf("line %d: no fdatasync was timed (fsyncs %v)", i, num(t, r, "fsyncs"))
			}
			if got := modelPath(r); got != "fast" {
				t.Errorf("line %d: the model's p99_path is %q; the lesson says it is fast for any D", i, got)
			}
			out = append(out, num(t, r, which)/fs)
		}
		return out
	}
	onFastPath := func(share float64) bool { return share <= 0.25 }
	for i, share := range medianOfRuns(t, "05-", "periodic", shares, onFastPath) {
		if !onFastPath(share) {
			t.Errorf("line %d: p99 is %.2f of the typical fdatasync (median of 3 runs), want 0.25 or less: the lesson says periodic's p99 stays on the fast path", i, share)
		}
	}
}

// medianOfRuns measures a timing claim the way the course says to on a
// noisy machine. It measures each line of the cell's cached run; if every
// line holds (ok), that is the answer. Otherwise it runs the cell in two
// more rounds, its lines in mirrored order, and returns each measure's
// median of the three runs, or of five when that of three misses, so a
// claim holds only if it holds in most runs: a preempted run (or two)
// cannot fail it, and a claim that is false still fails.
func medianOfRuns(t *testing.T, prefix, cell string, measure func([]any) []float64, ok func(float64) bool) []float64 {
	t.Helper()
	first := measure(cellResults(t, prefix, cell))
	if !slices.ContainsFunc(first, func(v float64) bool { return !ok(v) }) {
		return first
	}
	t.Logf("%s%s: %v on the first run; running it in more rounds for the median", prefix, cell, first)
	runs := [][]float64{first}
	_, c := cellByID(t, prefix, cell)
	median := func() []float64 {
		med := make([]float64, len(first))
		for i := range med {
			var col []float64
			for _, r := range runs {
				col = append(col, r[i])
			}
			slices.Sort(col)
			med[i] = col[len(col)/2]
		}
		return med
	}
	// Rounds 2 to 5 run the lines in mirrored order (B A, A B, ...), as
	// lesson 9 teaches, so a drift lands on both lines of a pair; a busy
	// spell on a shared disk can still swing one round several times
	// over, so the median of 3 rounds is taken, and of 5 when that of 3
	// misses.
	for r := 2; r <= 5; r++ {
		rs, err := execRound(t, c.Lines, 1, server.DefaultLimits(), r)
		if err != nil {
			t.Fatalf("cell %s: %v", cell, err)
		}
		runs = append(runs, measure(rs))
		if r == 3 && !slices.ContainsFunc(median(), func(v float64) bool { return !ok(v) }) {
			break
		}
	}
	return median()
}

func modelPath(r any) string {
	m, _ := r.(map[string]any)
	mo, _ := m["model"].(map[string]any)
	s, _ := mo["p99_path"].(string)
	return s
}

// Lesson 5: the writes at risk under periodic:D are those acknowledged
// since the last completed fdatasync started: rate × (D + T_fsync), not
// rate × D.
func TestPeriodicLossWindowQuiz(t *testing.T) {
	q := quizByID(t, lessonByPrefix(t, "05-"), "loss-window")
	// A slow disk: a 5 ms flush on a 10 ms timer.
	r := synthetic("ops_per_sec", 10000, "fsync_mean_ns", 5e6, "fsync_p50_ns", 5e6, "model.loss_window_ms", 15)
	got := answer(t, q, []any{r})
	want := 10000 * (0.010 + 0.005)
	if math.Abs(got-want) > 1e-9*want {
		t.Errorf("loss-window answer at 10,000 writes/s, D = 10 ms, T_fsync = 5 ms: got %v, want rate × (D + T_fsync) = %v", got, want)
	}

	rs := cellResults(t, "05-", "periodic")
	got = answer(t, q, rs)
	r0 := rs[0]
	want = num(t, r0, "ops_per_sec") * (0.010 + num(t, r0, "fsync_mean_ns")/1e9)
	if math.Abs(got-want) > 1e-9*want {
		t.Errorf("loss-window on the cell's run: got %v, want %v", got, want)
	}
}

// Lesson 5's fork quizzes: graded by the harness's measured_p99_path, never
// by comparing p99 with the mean fdatasync, which one slow flush drags
// far above the typical one. A synthetic bimodal run with one huge flush
// has p99 = 115 µs (64× its p50, plainly a flush) and a mean fdatasync of
// 1.1 ms: the old grader called that "fast path".
func TestForkGradersIgnoreTheMeanFsync(t *testing.T) {
	l := lessonByPrefix(t, "05-")
	bimodal := func(path string) map[string]any {
		return synthetic("fsyncs", 5, "latency.put.count", 5000,
			"latency.put.p50_ns", 1800, "latency.put.p99_ns", 115000,
			"fsync_mean_ns", 1.1e6, "fsync_p50_ns", 100000,
			"model.measured_p99_path", path)
	}
	for _, tc := range []struct {
		quiz string
		line int
	}{{"fork-10", 0}, {"fork-100", 1}, {"fork-1000", 2}} {
		q := quizByID(t, l, tc.quiz)
		if strings.Contains(q.Answer.String(), "fsync_mean_ns") {
			t.Errorf("quiz %s grades with the mean fdatasync: %q", q.ID, q.Answer)
		}
		for _, want := range []struct {
			path   string
			choice float64
		}{{"slow", 2}, {"fast", 1}} {
			rs := []any{bimodal("fast"), bimodal("fast"), bimodal("fast")}
			rs[tc.line] = bimodal(want.path)
			if got := answer(t, q, rs); got != want.choice {
				t.Errorf("quiz %s on a bimodal run the harness calls %s: got choice %v, want %v", q.ID, want.path, got, want.choice)
			}
		}
	}

	// The real runs, as the lesson describes them: batch:10's p99 is on
	// the slow path; p50 stays on the fast path and max on the slow path
	// in every line; p99 is the one that moves. (Whether batch:1000's
	// p99 is fast depends on what else slows 1% of this machine's writes:
	// the quiz measures it rather than the test asserting it.)
	rs := cellResults(t, "05-", "fork")
	if got := answer(t, quizByID(t, l, "fork-10"), rs); got != 2 {
		t.Errorf("quiz fork-10 on the fork cell's run: got choice %v, want 2 (slow path)", got)
	}
	for i, r := range rs {
		fs := typicalFsync(t, r)
		if p50 := num(t, r, "latency.put.p50_ns"); p50*4 > fs {
			t.Errorf("line %d: p50 %v ns is not far below the median fdatasync %v ns", i, p50, fs)
		}
		if mx := num(t, r, "latency.put.max_ns"); mx < fs {
			t.Errorf("line %d: max %v ns is below the median fdatasync %v ns", i, mx, fs)
		}
	}
	if a, b := num(t, rs[0], "latency.put.p99_ns"), num(t, rs[2], "latency.put.p99_ns"); a < 4*b {
		t.Errorf("p99 of batch:10 (%v ns) is not well above batch:1000's (%v ns): the lesson says p99 is the figure that moves", a, b)
	}
}

// Lesson 7 states the invariant as the crash checker checks it, key by
// key, not as the count recovered ≥ durable-acknowledged.
func TestCrashInvariantStatedAsChecked(t *testing.T) {
	l := lessonByPrefix(t, "07-")
	if strings.Contains(l.Summary, "recovered ≥ durable") {
		t.Errorf("the summary states the invariant as a count: %q", l.Summary)
	}
	inv := section(t, l, "The invariant")
	for _, want := range []string{
		"every write acknowledged as durable is present, with its value",
		"writes acknowledged but not yet synced may be lost",
		"nothing is returned that was never written, or corrupt",
	} {
		if !strings.Contains(inv, want) {
			t.Errorf("the invariant section does not say %q", want)
		}
	}
	if !strings.Contains(strings.Join(strings.Fields(inv), " "), `"`+harness.Invariant+`"`) {
		t.Errorf("the invariant section does not quote the crash result's invariant word for word: %q", harness.Invariant)
	}
	if strings.Contains(inv, "```\nrecovered ≥ durable-acknowledged\n```") {
		t.Errorf("the invariant section still displays the count as the invariant")
	}
	for _, cell := range []string{"kill", "kill-none", "power"} {
		for i, r := range cellResults(t, "07-", cell) {
			for _, f := range []string{"lost", "lost_written", "corrupt", "unwritten", "failed_reopens"} {
				if n := num(t, r, f); n != 0 {
					t.Errorf("cell %s line %d: %s = %v, want 0", cell, i, f, n)
				}
			}
		}
	}
}

// Lesson 7's simulated power cut keeps every synced byte and a random
// in-order prefix of the unsynced bytes in each file; records still in the
// engine's write buffer are in no file and go too. So a trial never loses
// more than the writes acknowledged since the last sync, batch:100 at most
// 99 of them, and the loss splits into the buffer's and the page cache's.
// (The text it replaced said everything not yet synced is thrown away.)
// TestPowerCutKeepsSyncedBytesAndARandomPrefix pins the prefix itself.
func TestPowerCutKeepsARandomPrefix(t *testing.T) {
	l := lessonByPrefix(t, "07-")
	body := string(l.Body)
	if strings.Contains(body, "everything not yet synced\nis thrown away") || strings.Contains(body, "everything not yet synced is thrown away") {
		t.Errorf("lesson 7 still says a power cut throws away everything not yet synced")
	}
	if !strings.Contains(body, "random in-order prefix of the bytes written since") {
		t.Errorf("lesson 7 does not describe the power cut as a random in-order prefix of the unsynced bytes")
	}
	rs := cellResults(t, "07-", "power")
	for i, r := range rs {
		trials, _ := r.(map[string]any)["per_trial"].([]any)
		for _, tr := range trials {
			w, d, la := num(t, tr, "writes"), num(t, tr, "durable_acked"), num(t, tr, "lost_acked")
			if la > w-d {
				t.Errorf("line %d trial %v: lost %v acknowledged writes, more than the %v not yet durable", i, num(t, tr, "n"), la, w-d)
			}
			if i == 1 && la > 100 {
				t.Errorf("batch:100 trial %v: lost %v acknowledged writes; the lesson says at most 99 (plus one in flight)", num(t, tr, "n"), la)
			}
		}
		if got, want := num(t, r, "lost_acked"), num(t, r, "lost_buffered")+num(t, r, "lost_page_cache"); got != want {
			t.Errorf("line %d: lost_acked %v is not lost_buffered + lost_page_cache = %v", i, got, want)
		}
		if i == 0 && num(t, r, "lost_acked") != 0 {
			t.Errorf("always lost %v acknowledged writes; the lesson says none", num(t, r, "lost_acked"))
		}
	}
}

// Lesson 10: utilization, not the achieved rate, says whether requests
// queue; requests due but never started are counted, never dropped.
func TestCoordinatedOmissionClaims(t *testing.T) {
	l := lessonByPrefix(t, "10-")
	body := string(l.Body)
	if strings.Contains(body, "If it did, compare") || strings.Contains(body, "their p50s\nare close") {
		t.Errorf("lesson 10 still infers close p50s from the achieved rate")
	}
	for _, want := range []string{"utilization = rate × mean service time", "backlog_units", "The *schedule* does not wait for the previous request; the *thread*\ndoes."} {
		if !strings.Contains(body, want) {
			t.Errorf("lesson 10 does not say %q", want)
		}
	}
	q := quizByID(t, l, "gentle-utilization")
	r := synthetic("rate", 500, "latency_uncorrected.put.mean_ns", 1.5e6, "latency.put.p50_ns", 3e8)
	if got := answer(t, q, []any{r}); math.Abs(got-0.75) > 1e-9 {
		t.Errorf("gentle-utilization at 500/s and a 1.5 ms mean service time: got %v, want 0.75", got)
	}

	rs := cellResults(t, "10-", "overload")
	o := rs[0]
	units, backlog := num(t, o, "units"), 0.0
	if b, ok := lookup(o, "backlog_units"); ok {
		backlog = b
	}
	if backlog <= 0 {
		t.Errorf("overload: backlog_units %v; 100,000 fdatasyncs a second is beyond any disk this runs on, so requests must be left unstarted", backlog)
	}
	due := num(t, o, "rate") * 2 // -duration 2s
	if got := units + backlog; math.Abs(got-due) > 0.02*due+2 {
		t.Errorf("overload: measured %v + never started %v = %v, want every request due in 2 s (%v) in one or the other", units, backlog, got, due)
	}
	// overload-hidden's explanation: the last request to start waited the
	// run's length times (1 − the store's rate ÷ the rate asked for), and
	// the corrected p99 is nearly that.
	share := num(t, o, "latency.put.p99_ns") / 1e9 / max(num(t, o, "wall_seconds"), 0.001)
	if want := 1 - num(t, o, "ops_per_sec")/num(t, o, "rate"); math.Abs(share-want) > 0.1 {
		t.Errorf("overload: corrected p99 is %.3f of the run, want about 1 − achieved ÷ asked = %.3f, as overload-hidden's explanation says", share, want)
	}
	if q := quizByID(t, l, "overload-censored"); !strings.Contains(q.Answer.String(), "backlog_units") {
		t.Errorf("overload-censored does not read backlog_units: %q", q.Answer)
	}
}

// Lesson 1: "hits the p99 on almost every load" became the computed
// 1 − 0.99^100.
func TestAtLeastOneSlowCallIn100(t *testing.T) {
	body := string(lessonByPrefix(t, "01-").Body)
	p := 1 - math.Pow(0.99, 100)
	for _, want := range []string{
		fmt.Sprintf("%.0f%%", 100*p),     // 63%
		fmt.Sprintf("%.0f%%", 100*(1-p)), // 37%
		"1 − 0.99^100", "0.99^100",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("lesson 1 does not state %q", want)
		}
	}
	if strings.Contains(body, "almost every load") {
		t.Errorf("lesson 1 still says the p99 is hit on almost every load")
	}
}

// Lesson 3: a p99 below p50 cannot come from one sorted list, but the
// lesson must not claim every such report skipped the sort.
func TestP99BelowP50Claim(t *testing.T) {
	body := string(lessonByPrefix(t, "03-").Body)
	if strings.Contains(body, "was computed this way") {
		t.Errorf("lesson 3 still says every p99 below p50 was computed unsorted")
	}
	rs := cellResults(t, "03-", "sorting")
	if p50, p99 := num(t, rs[0], "latency.put.p50_ns"), num(t, rs[0], "latency.put.p99_ns"); p99 < p50 {
		t.Errorf("honest line: p99 %v below p50 %v", p99, p50)
	}
}

// Lesson 3's keygen and ceiling cells: the null engine's honest p50 is the
// clock's cost, the dishonest one several times it; and the kv engine with
// sync none reaches a small fraction of the null engine's ceiling.
func TestInstrumentClaims(t *testing.T) {
	rs := cellResults(t, "03-", "keygen")
	honest, dishonest := num(t, rs[0], "latency.put.p50_ns"), num(t, rs[1], "latency.put.p50_ns")
	if honest > 200 {
		t.Errorf("null engine honest p50 %v ns: the lesson says a few dozen nanoseconds", honest)
	}
	if dishonest < 2*honest {
		t.Errorf("dishonest p50 %v ns is not several times the honest %v ns", dishonest, honest)
	}
	rs = cellResults(t, "03-", "ceiling")
	null4 := num(t, rs[0].([]any)[2], "ops_per_sec")
	kv4 := num(t, rs[1], "ops_per_sec")
	if kv4 > null4/2 {
		t.Errorf("kv none at 4 threads %v ops/s is not a small fraction of the null ceiling %v ops/s", kv4, null4)
	}
}

// Lesson 4: fsync counts per policy, the p99 fork at batch:64, and the
// sync none still does where the file format needs it.
func TestFsyncTaxClaims(t *testing.T) {
	l := lessonByPrefix(t, "04-")
	body := string(l.Body)
	for _, want := range []string{"seals a full segment", "when it compacts", "when it closes"} {
		if !strings.Contains(body, want) {
			t.Errorf("lesson 4 does not say that none fdatasyncs %q", want)
		}
	}
	if strings.Contains(body, "no fdatasync until the store is closed") {
		t.Errorf("lesson 4 still says none never fdatasyncs before Close")
	}
	rs := cellResults(t, "04-", "policies")
	always, b64, none := rs[0], rs[1], rs[2]
	if got, want := num(t, always, "fsyncs"), num(t, always, "ops"); got < want {
		t.Errorf("always: %v fsyncs for %v Puts, want one per Put", got, want)
	}
	if got, want := num(t, b64, "fsyncs"), num(t, b64, "ops")/64; math.Abs(got-want) > 2 {
		t.Errorf("batch:64: %v fsyncs, want about %v", got, want)
	}
	if got := num(t, none, "fsyncs"); got != 0 {
		t.Errorf("none: %v fsyncs counted; the lesson says none for 2,000 records", got)
	}
	m, _ := b64.(map[string]any)["model"].(map[string]any)
	if p, _ := m["measured_p99_path"].(string); p != "slow" {
		t.Errorf("batch:64 measured p99 path %q; the lesson says 1/64 > 1%% puts p99 on the slow path", p)
	}
	// durability-bound: ops/s × own mean fdatasync is close to 1. On a
	// loaded machine the time between fdatasyncs grows (the writer waits
	// for a core), so the relation is judged on the median of three runs
	// when the first misses it.
	busy := func(rs []any) []float64 {
		return []float64{num(t, rs[0], "ops_per_sec") * num(t, rs[0], "fsync_mean_ns") / 1e9}
	}
	closeToOne := func(x float64) bool { return x >= 0.5 && x <= 1.05 }
	if prod := medianOfRuns(t, "04-", "policies", busy, closeToOne)[0]; !closeToOne(prod) {
		t.Errorf("always: ops/s × mean fdatasync = %.2f (median of 3 runs), the lesson says close to 1", prod)
	}
	// Larger records: bytes per second grow with the record size.
	vs := cellResults(t, "04-", "value-size")
	small := num(t, vs[0], "ops_per_sec") * 128
	large := num(t, vs[2], "ops_per_sec") * 65536
	if large < 10*small {
		t.Errorf("64 KiB records moved %.0f B/s against %.0f B/s for 128 B: the lesson says MB/s grows with the size", large, small)
	}
}

// Lesson 6: the commit delay is named with the engine's own default, and
// Little's law balances with the mean.
func TestGroupCommitClaims(t *testing.T) {
	body := string(lessonByPrefix(t, "06-").Body)
	def := fmt.Sprintf("%d µs by\ndefault", engine.DefaultGroupDelay.Microseconds())
	if !strings.Contains(body, "**commit delay**") || !strings.Contains(body, def) {
		t.Errorf("lesson 6 does not name the commit delay and the engine's default, %q", def)
	}
	// Little's law, per line as a share of the thread count: the time a
	// writer spends outside a Put (waiting for a core on a loaded
	// machine) lowers it, so it is judged on the median of three runs
	// when the first misses it.
	little := func(rs []any) []float64 {
		var out []float64
		for _, r := range rs[0].([]any) {
			out = append(out, num(t, r, "ops_per_sec")*num(t, r, "latency.put.mean_ns")/1e9/num(t, r, "threads"))
		}
		return out
	}
	balances := func(x float64) bool { return x >= 0.6 && x <= 1.05 }
	rs := cellResults(t, "06-", "curve")
	for i, x := range medianOfRuns(t, "06-", "curve", little, balances) {
		if threads := num(t, rs[0].([]any)[i], "threads"); !balances(x) {
			t.Errorf("%v threads: ops/s × mean latency = %.2f (median of 3 runs), Little's law says about the thread count", threads, x*threads)
		}
	}
	for _, r := range rs[0].([]any) {
		threads := num(t, r, "threads")
		if f := num(t, r, "fsyncs"); f > 0 && num(t, r, "ops")/f > threads+0.01 {
			t.Errorf("%v threads: %.1f Puts per fdatasync, more than one per writer", threads, num(t, r, "ops")/f)
		}
	}
}

// Lesson 8: the zipfian cell shows its claim in the medians, on runs of a
// full second: uniform's median Get is above zipfian's (one run in many
// on this machine gave 0.99 among runs of 1.4 to 1.55). The lesson states
// it for processors with room: beside two busy loops it came out 0.89 to
// 1.16, so saturated rounds are set aside (marginsHoldWithRoom).
func TestHotSetClaim(t *testing.T) {
	for i, r := range cellResults(t, "08-", "dist") {
		if w := num(t, r, "wall_seconds"); w < 0.9 {
			t.Errorf("dist line %d ran %.3f s; the lesson says a full second", i, w)
		}
	}
	marginsHoldWithRoom(t, "08-", "dist", func(rs []any) []float64 {
		return []float64{num(t, rs[1], "latency.get.p50_ns") / max(num(t, rs[0], "latency.get.p50_ns"), 1)}
	}, "zipfian's median Get below uniform's")
}

// Lesson 9 says a one-second run is short; its throughput cells must not
// be milliseconds long.
func TestChapter9CellsRunLongEnough(t *testing.T) {
	for _, cell := range []string{"steady", "families", "before-after", "background"} {
		for i, r := range cellResults(t, "09-", cell) {
			runs := []any{r}
			if a, ok := r.([]any); ok {
				runs = a
			}
			for _, x := range runs {
				if w := num(t, x, "wall_seconds"); w < 0.9 {
					t.Errorf("cell %s line %d ran %.3f s: too short for the ops/s the lesson compares", cell, i, w)
				}
			}
		}
	}
}

// Lesson 9: the tails cell's -repeat line carries the pooled p99 of all
// 5,000 writes on its last run, the lesson says it lies between the lowest
// and the highest run's p99, and the quiz divides it by the median of the
// five p99s.
func TestPooledP99Claim(t *testing.T) {
	rs := cellResults(t, "09-", "tails")
	runs, _ := rs[0].([]any)
	if len(runs) != 5 {
		t.Fatalf("tails: %d runs, want the 5 of -repeat 5", len(runs))
	}
	for i, r := range runs[:4] {
		if _, ok := r.(map[string]any)["pooled"]; ok {
			t.Errorf("tails run %d carries pooled; only the last run does", i+1)
		}
	}
	last := runs[4]
	if n := num(t, last, "pooled.runs"); n != 5 {
		t.Errorf("pooled.runs = %v, want 5", n)
	}
	var p99s []float64
	var count, hi float64
	for _, r := range runs {
		p99s = append(p99s, num(t, r, "latency.put.p99_ns"))
		count += num(t, r, "latency.put.count")
		hi = math.Max(hi, num(t, r, "latency.put.max_ns"))
	}
	if c := num(t, last, "pooled.latency.put.count"); c != count || c != 5000 {
		t.Errorf("pooled count %v, runs' counts add up to %v; the lesson says all 5,000 writes", c, count)
	}
	if m := num(t, last, "pooled.latency.put.max_ns"); m != hi {
		t.Errorf("pooled max %v, want the slowest run's max %v", m, hi)
	}
	put := last.(map[string]any)["pooled"].(map[string]any)["latency"].(map[string]any)["put"].(map[string]any)
	if exact, _ := put["exact"].(bool); !exact {
		t.Errorf("pooled p99 of 5,000 writes is not exact")
	}
	pooled := num(t, last, "pooled.latency.put.p99_ns")
	slices.Sort(p99s)
	if pooled < p99s[0] || pooled > p99s[4] {
		t.Errorf("pooled p99 %v ns outside the runs' p99s %v: the lesson says it lies between the lowest and the highest", pooled, p99s)
	}
	q := quizByID(t, lessonByPrefix(t, "09-"), "p99-pooled-vs-median")
	if got, want := answer(t, q, rs), pooled/math.Max(p99s[2], 1); math.Abs(got-want) > 1e-9*want {
		t.Errorf("quiz %s answers %v, want pooled p99 / median of the p99s = %v", q.ID, got, want)
	}
}

// Predict, then measure: at least half of every chapter's quizzes are
// predictions (predict: yes, or run: lines measured when checked), and
// each prediction explains itself. (TestQuizzesDependOnMeasurement, beside
// this, refuses a quiz whose answer is the same on every machine.)
func TestPredictionQuizzes(t *testing.T) {
	ls := load(t)
	for _, c := range CountPredictions(ls) {
		t.Log(c)
		if !c.AtLeastHalf() {
			t.Errorf("%s: %d of %d quizzes are predictions, want at least half", c.Slug, c.Predictions, c.Quizzes)
		}
	}
	for _, l := range ls {
		for _, q := range l.Quizzes {
			if q.IsPrediction() && q.Explain == "" {
				t.Errorf("%s: prediction quiz %s has no explain: saying why is half of it", l.Slug, q.ID)
			}
		}
	}
}

// The orderings and orders of magnitude the lessons' "What to look for"
// paragraphs promise, each checked on the cell that shows it.
func TestWhatToLookFor(t *testing.T) {
	ratio := func(a, b float64) float64 { return a / math.Max(b, 1) }
	ops := func(r any) float64 { return num(t, r, "ops_per_sec") }

	// Lesson 2: both lines' percentiles are exact samples.
	for i, r := range cellResults(t, "02-", "spectrum") {
		m, _ := r.(map[string]any)["latency"].(map[string]any)["put"].(map[string]any)
		if exact, _ := m["exact"].(bool); !exact {
			t.Errorf("lesson 2 spectrum line %d: exact is false; the lesson says both lines are exact", i)
		}
	}
	// Lesson 3's wallclock cell: TestSampleSumJudgedInsideOneRun.
	// Lesson 3: without warmup the middle percentiles barely change.
	// Judged, as the timings below, on the median of three runs when the
	// first misses: one run preempted on a loaded machine cannot fail it.
	within2 := func(x float64) bool { return x >= 0.5 && x <= 2 }
	middle := func(wu []any) []float64 {
		return []float64{ratio(num(t, wu[1], "latency.put.p50_ns"), num(t, wu[0], "latency.put.p50_ns"))}
	}
	if x := medianOfRuns(t, "03-", "warmup", middle, within2)[0]; !within2(x) {
		t.Errorf("lesson 3 warmup: p50 without warmup is %.2fx the p50 with it (median of 3 runs); the lesson says the middle barely changes", x)
	}
	// Lesson 4: a write+fdatasync is at least ten times a plain write,
	// compared by their means as the lesson and its quiz do.
	pr := cellResults(t, "04-", "probe")[0]
	if x := num(t, pr, "write_fdatasync.mean_ns") / math.Max(num(t, pr, "write.mean_ns"), 1); x < 10 {
		t.Errorf("lesson 4 probe: write+fdatasync mean is only %.1fx a plain write's", x)
	}
	// Lesson 4: always is the slowest by a wide margin; its p50 is about
	// one fdatasync, the other two lines' far below one.
	pol := cellResults(t, "04-", "policies")
	if x := ratio(ops(pol[1]), ops(pol[0])); x < 5 {
		t.Errorf("lesson 4 policies: batch:64 is only %.1fx always", x)
	}
	fs := typicalFsync(t, pol[0])
	oneFsync := func(pol []any) []float64 {
		return []float64{num(t, pol[0], "latency.put.p50_ns") / typicalFsync(t, pol[0])}
	}
	if x := medianOfRuns(t, "04-", "policies", oneFsync, within2)[0]; !within2(x) {
		t.Errorf("lesson 4 policies: always's p50 is %.2fx its median fdatasync (median of 3 runs); the lesson says roughly one fdatasync", x)
	}
	for i, r := range pol[1:] {
		if p50 := num(t, r, "latency.put.p50_ns"); p50*4 > fs {
			t.Errorf("lesson 4 policies line %d: p50 %v ns is not far below an fdatasync (%v ns)", i+1, p50, fs)
		}
	}
	// The engines' spread, as the median of three runs if the first is
	// wide: bbolt's two appending flushes per Put slow down most when
	// the disk is busy.
	spread := func(rs []any) []float64 {
		lo, hi := math.Inf(1), 0.0
		for _, r := range rs[0].([]any) {
			lo, hi = math.Min(lo, ops(r)), math.Max(hi, ops(r))
		}
		return []float64{hi / lo}
	}
	if x := medianOfRuns(t, "04-", "engines", spread, func(x float64) bool { return x <= 10 })[0]; x > 10 {
		t.Errorf("lesson 4 engines: fastest is %.1fx the slowest (median of 3 runs); the lesson says within a small factor", x)
	}
	// Lesson 5: about one fdatasync per 10 ms, never more.
	per := cellResults(t, "05-", "periodic")[0]
	if f, most := num(t, per, "fsyncs"), num(t, per, "wall_seconds")/0.010+2; f > most || f < 1 {
		t.Errorf("lesson 5 periodic:10ms: %v fdatasyncs in %.2f s; the lesson says at most one per 10 ms", f, num(t, per, "wall_seconds"))
	}
	// Lesson 6: group commit rises with writers; always stays flat.
	curve := cellResults(t, "06-", "curve")[0].([]any)
	if x := ratio(ops(curve[4]), ops(curve[0])); x < 2 {
		t.Errorf("lesson 6 curve: 16 writers got only %.2fx one writer under group commit", x)
	}
	serial := cellResults(t, "06-", "serial")[0].([]any)
	for _, r := range serial {
		n := num(t, r, "threads")
		if f, o := num(t, r, "fsyncs"), num(t, r, "ops"); f < o {
			t.Errorf("lesson 6 serial, %v threads: %v fdatasyncs for %v Puts; always makes one per Put", n, f, o)
		}
	}
	busy := func(rs []any) []float64 {
		var out []float64
		for _, r := range rs[0].([]any) {
			out = append(out, ops(r)*num(t, r, "fsync_mean_ns")/1e9)
		}
		return out
	}
	closeToOne := func(x float64) bool { return x >= 0.5 && x <= 1.05 }
	for i, b := range medianOfRuns(t, "06-", "serial", busy, closeToOne) {
		if !closeToOne(b) {
			t.Errorf("lesson 6 serial, %v threads: ops/s × mean fdatasync = %.2f (median of 3 runs); one flush at a time makes it close to 1", num(t, serial[i], "threads"), b)
		}
	}
	if a, b := num(t, serial[2], "latency.put.p99_ns"), num(t, serial[0], "latency.put.p99_ns"); a <= b {
		t.Errorf("lesson 6 serial: p99 with 16 threads %v ns is not above one thread's %v ns", a, b)
	}
	// Lesson 7: a kill leaves batch:100's written records in the page cache.
	kill := cellResults(t, "07-", "kill")[1]
	if num(t, kill, "recovered") < num(t, kill, "durable_acked") {
		t.Errorf("lesson 7 kill batch:100: recovered %v below durable_acked %v", num(t, kill, "recovered"), num(t, kill, "durable_acked"))
	}
	// Lesson 8: the in-memory reads and the durable writes are orders of
	// magnitude apart.
	two := cellResults(t, "08-", "two-numbers")
	if x := ratio(ops(two[0]), ops(two[1])); x < 10 {
		t.Errorf("lesson 8 two-numbers: reads are only %.1fx the durable writes", x)
	}
	// Lesson 10: overloaded, the corrected p99 is on the order of the
	// run's length and far above the uncorrected one.
	o := cellResults(t, "10-", "overload")[0]
	c, u := num(t, o, "latency.put.p99_ns"), num(t, o, "latency_uncorrected.put.p99_ns")
	if c < 0.25e9 || c < 10*u {
		t.Errorf("lesson 10 overload: corrected p99 %.0f ns, uncorrected %.0f ns; the lesson says the corrected one is on the order of the 2 s run and far above", c, u)
	}
	// Once started, each request takes one fdatasync, as in a closed loop.
	started := func(rs []any) []float64 {
		return []float64{num(t, rs[0], "latency_uncorrected.put.p50_ns") / typicalFsync(t, rs[0])}
	}
	if x := medianOfRuns(t, "10-", "overload", started, within2)[0]; !within2(x) {
		t.Errorf("lesson 10 overload: uncorrected p50 is %.2fx the median fdatasync (median of 3 runs); the lesson says each started request takes one fdatasync", x)
	}
}
