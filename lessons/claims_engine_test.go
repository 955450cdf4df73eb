package lessons_test

// Claims the lessons make about the engine and the instrument that no cell
// can show on demand (a failing fdatasync, the syncs of "none", the power
// cut's model, a histogram library's rounding), checked here on the
// crashable in-memory filesystem or the library itself. The lessons name
// these tests.

import (
	"bufio"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/HdrHistogram/hdrhistogram-go"

	"kvlab/engine"
	"kvlab/harness/calc"
)

// errInjected is the fdatasync failure the tests inject.
var errInjected = errors.New("injected EIO")

// Lesson 7, "When fdatasync fails": the first error is sticky, nothing is
// retried and then acknowledged, DurableSeq never covers the failed write,
// and a reopened store holds every write acknowledged before the failure.
func TestFsyncFailureIsSticky(t *testing.T) {
	if !strings.Contains(string(lessonByPrefix(t, "07-").Body), "TestFsyncFailureIsSticky") {
		t.Errorf("lesson 7 does not name this test, which pins its fdatasync-failure claims")
	}
	mem := engine.NewMemFS()
	var failSync atomic.Bool
	mem.Fault = func(op, name string) error {
		if op == "sync" && failSync.Load() && strings.HasSuffix(name, ".seg") {
			return errInjected
		}
		return nil
	}
	db, err := engine.Open("/kv", engine.Options{Sync: engine.SyncPolicy{Mode: engine.SyncAlways}, FS: mem})
	if err != nil {
		t.Fatal(err)
	}
	const before = 20
	for i := range before {
		if err := db.Put(fmt.Appendf(nil, "k%d", i), fmt.Appendf(nil, "v%d", i)); err != nil {
			t.Fatalf("Put %d before the fault: %v", i, err)
		}
	}
	durable := db.Stats().DurableSeq

	failSync.Store(true)
	err = db.Put([]byte("k-failed"), []byte("v-failed"))
	if err == nil {
		t.Fatal("the Put whose fdatasync failed returned no error")
	}
	if !errors.Is(err, errInjected) {
		t.Errorf("the failed Put's error %v does not wrap the fdatasync error", err)
	}
	if got := db.Stats().DurableSeq; got != durable {
		t.Errorf("DurableSeq moved from %d to %d across a failed fdatasync", durable, got)
	}

	failSync.Store(false) // the fault is gone: a retry would now succeed
	for i := range 3 {
		err := db.Put(fmt.Appendf(nil, "after%d", i), []byte("v"))
		if !errors.Is(err, engine.ErrFailed) || !errors.Is(err, errInjected) {
			t.Errorf("Put %d after the fault cleared: got %v, want ErrFailed wrapping the first error", i, err)
		}
	}
	if got := db.Stats().DurableSeq; got != durable {
		t.Errorf("DurableSeq moved from %d to %d after the failure: something was retried and acknowledged", durable, got)
	}
	db.Close()

	// A power cut now, and a reopen: every write acknowledged before the
	// failure is there with its value.
	after := mem.Crash(false, nil)
	db, err = engine.Open("/kv", engine.Options{Sync: engine.SyncPolicy{Mode: engine.SyncAlways}, FS: after})
	if err != nil {
		t.Fatalf("reopening after the failure and a power cut: %v", err)
	}
	defer db.Close()
	for i := range before {
		v, err := db.Get(fmt.Appendf(nil, "k%d", i))
		if err != nil || string(v) != fmt.Sprintf("v%d", i) {
			t.Errorf("k%d after reopening: got %q, %v; want v%d", i, v, err, i)
		}
	}
}

// Lesson 4: "none" still fdatasyncs when it seals a full segment and when
// it compacts.
func TestNoneSyncsOnSealAndCompaction(t *testing.T) {
	mem := engine.NewMemFS()
	var syncs atomic.Int64
	mem.Fault = func(op, name string) error {
		if op == "sync" && strings.HasSuffix(name, ".seg") {
			syncs.Add(1)
		}
		return nil
	}
	db, err := engine.Open("/kv", engine.Options{
		Sync: engine.SyncPolicy{Mode: engine.SyncNone}, FS: mem,
		SegmentSize: engine.MinSegmentSize, Preallocate: -1, // no zero-fill syncs: only seals count
	})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	syncs.Store(0)
	val := make([]byte, 128)
	for i := 0; db.Stats().Segments < 3; i++ {
		if i > 10000 {
			t.Fatal("no segment was sealed after 10,000 Puts")
		}
		if err := db.Put(fmt.Appendf(nil, "k%d", i%50), val); err != nil {
			t.Fatal(err)
		}
	}
	if syncs.Load() == 0 {
		t.Errorf("none sealed %d segments without an fdatasync", db.Stats().Segments-1)
	}
	n := syncs.Load()
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	if syncs.Load() == n {
		t.Errorf("none compacted without an fdatasync")
	}
}

// Lesson 7's power-cut model, on MemFS itself: a reboot finds every synced
// byte, then a prefix of the bytes written after the last sync, cut at a
// random point — sometimes none of them, sometimes all.
func TestPowerCutKeepsSyncedBytesAndARandomPrefix(t *testing.T) {
	synced := []byte(strings.Repeat("S", 100))
	unsynced := []byte(strings.Repeat("U", 100))
	var sawNone, sawAll, sawPart bool
	for seed := range uint64(300) {
		mem := engine.NewMemFS()
		if err := mem.MkdirAll("/d", 0o755); err != nil {
			t.Fatal(err)
		}
		f, err := mem.OpenFile("/d/f", os.O_CREATE|os.O_RDWR, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		if err := mem.SyncDir("/d"); err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteAt(synced, 0); err != nil {
			t.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteAt(unsynced, int64(len(synced))); err != nil {
			t.Fatal(err)
		}
		after := mem.Crash(true, rand.New(rand.NewPCG(seed, 1)))
		g, err := after.OpenFile("/d/f", os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		size, _ := g.Size()
		got := make([]byte, size)
		g.ReadAt(got, 0)
		want := append(append([]byte(nil), synced...), unsynced...)
		if size < int64(len(synced)) || size > int64(len(want)) || string(got) != string(want[:size]) {
			t.Fatalf("seed %d: after the power cut the file is %q; want the synced bytes and a prefix of the unsynced ones", seed, got)
		}
		switch kept := size - int64(len(synced)); {
		case kept == 0:
			sawNone = true
		case kept == int64(len(unsynced)):
			sawAll = true
		default:
			sawPart = true
		}
	}
	if !sawNone || !sawAll || !sawPart {
		t.Errorf("over 300 power cuts: kept none %v, all %v, part %v of the unsynced bytes; want each to happen", sawNone, sawAll, sawPart)
	}
}

// Lesson 2 attributes the rounding to one HdrHistogram port,
// hdrhistogram-go, and says nearest rank differs from it on p91 of 1..10.
func TestHdrHistogramGoPortRounds(t *testing.T) {
	h := hdrhistogram.New(1, 1000, 3)
	sorted := make([]int64, 10)
	for i := range sorted {
		sorted[i] = int64(i + 1)
		if err := h.RecordValue(sorted[i]); err != nil {
			t.Fatal(err)
		}
	}
	if got := h.ValueAtQuantile(91); got != 9 {
		t.Errorf("hdrhistogram-go p91 of 1..10: got %d, the lesson says 9", got)
	}
	if got := calc.Percentile(sorted, 91); got != 10 {
		t.Errorf("nearest-rank p91 of 1..10: got %d, the lesson says 10", got)
	}
	body := string(lessonByPrefix(t, "02-").Body)
	if !strings.Contains(body, "hdrhistogram-go") {
		t.Errorf("lesson 2 does not name the port whose rounding it describes")
	}
	if strings.Contains(body, "HdrHistogram, a widely used latency histogram, rounds") {
		t.Errorf("lesson 2 still attributes one port's rounding to HdrHistogram as a whole")
	}
}

// figureRE finds numbers in prose: 1,643 or 276 or 3.1 or 99.9;
// unitFigureRE the ones a unit follows.
var (
	figureRE     = regexp.MustCompile(`\d[\d,]*(?:\.\d+)?`)
	unitFigureRE = regexp.MustCompile(`(\d[\d,]*(?:\.\d+)?)\s*(?:ns|µs|ms|s|MB|GB|ops/s|tps|transactions)\b`)
)

// Every quoted figure with three or more significant digits in a lesson's
// prose (outside code, cells and quizzes) comes from testdata/references.md
// (a copy of the project's shared REFERENCES.md) to the precision it is
// quoted with, or is one of the few the course derives itself, listed
// below with where each comes from.
func TestQuotedFiguresAreSourced(t *testing.T) {
	refs, err := os.ReadFile("testdata/references.md")
	if err != nil {
		t.Fatal(err)
	}
	var sources []float64
	for _, s := range figureRE.FindAllString(string(refs), -1) {
		if f, err := strconv.ParseFloat(strings.ReplaceAll(s, ",", ""), 64); err == nil {
			sources = append(sources, f)
		}
	}
	derived := map[string]string{
		"128":  "the harness's default value size",
		"0.99": "the arithmetic of 1 − 0.99^100, worked on the page",
		"100":  "a hundred requests, worked on the page",
		"210":  "the hand-worked sample list of lesson 2",
		"1.6":  "1/64 as a percentage, worked on the page",
		"498":  "99 × 2 ms + 300 ms, worked on the page",
		"101":  "the exercise's values 1..101",
		"512":  "65536 / 128, the cell's two value sizes",
		"256":  "a batch size in the model's worked example",
		"4096": "a batch size in the model's worked example",
		"15":   "the hand-worked sample list of lesson 2",
		"99":   "the hundred queued requests of lesson 10's stall, worked on the page",
	}
	for _, l := range load(t) {
		text := prose(string(l.Body))
		figures := figureRE.FindAllString(text, -1)
		// Two significant digits are enough to be a quote when a unit
		// follows: 3.1 ms, 48 MB, 8.7 ms.
		var short []string
		for _, m := range unitFigureRE.FindAllStringSubmatch(text, -1) {
			if sigDigits(m[1]) == 2 {
				short = append(short, m[1])
			}
		}
		for i, s := range append(figures, short...) {
			if i < len(figures) && sigDigits(s) < 3 || derived[s] != "" {
				continue
			}
			if !sourced(s, sources) {
				t.Errorf("%s: the figure %s is not in testdata/references.md to the precision quoted; source it or remove it", l.Slug, s)
			}
		}
	}
}

// prose is what md shows as text: everything but fenced blocks and inline
// code, plus the question and explain lines of its quizzes.
func prose(md string) string {
	var b strings.Builder
	in, inQuiz := false, false
	sc := bufio.NewScanner(strings.NewReader(md))
	for sc.Scan() {
		line := sc.Text()
		if t := strings.TrimSpace(line); strings.HasPrefix(t, "```") {
			in = !in
			inQuiz = in && strings.TrimSpace(strings.TrimPrefix(t, "```")) == "quiz"
			continue
		}
		if !in || inQuiz && (strings.HasPrefix(line, "question:") || strings.HasPrefix(line, "explain:")) {
			b.WriteString(line)
			b.WriteByte('\n')
		}
	}
	return regexp.MustCompile("`[^`]*`").ReplaceAllString(b.String(), "")
}

// sigDigits counts significant digits of a figure as written: 1,643 has 4,
// 2,000 has 1, 3.1 has 2, 99.9 has 3.
func sigDigits(s string) int {
	s = strings.ReplaceAll(s, ",", "")
	intPart, frac, hasFrac := strings.Cut(s, ".")
	intPart = strings.TrimLeft(intPart, "0")
	if !hasFrac {
		return len(strings.TrimRight(intPart, "0"))
	}
	if intPart == "" {
		return len(strings.TrimLeft(frac, "0"))
	}
	return len(intPart) + len(frac)
}

// sourced reports whether s equals a source figure rounded to the
// precision s is written with, in the same unit or a thousand times apart
// (276 µs vs 0.276 ms, 274 ms vs 274372.0 µs).
func sourced(s string, sources []float64) bool {
	q, err := strconv.ParseFloat(strings.ReplaceAll(s, ",", ""), 64)
	if err != nil {
		return false
	}
	step := 1.0
	if _, frac, ok := strings.Cut(s, "."); ok {
		step = 1 / float64(pow10(len(frac)))
	}
	for _, r := range sources {
		for _, v := range []float64{r, r / 1000, r * 1000} {
			if d := q - v; d <= step/2+1e-9 && d >= -step/2-1e-9 {
				return true
			}
		}
	}
	return false
}

func pow10(n int) int {
	p := 1
	for range n {
		p *= 10
	}
	return p
}
