package mine

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"kvlab/harness"
	"kvlab/harness/harnesstest"
)

// solution is the durable-ack exercise's model answer: the store the
// page's Measure button runs when a reader has solved it. The file is a
// copy (the harness does not import the browser's grader), kept equal to
// the exercise's by the grader's TestMineTestdataIsTheSolution.
func solution(t testing.TB) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "durable-ack.go.txt"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// edit returns src with old replaced by new, which must be there once.
func edit(t *testing.T, src, old, new string) string {
	t.Helper()
	if strings.Count(src, old) != 1 {
		t.Fatalf("%q is in the solution %d times, want once", old, strings.Count(src, old))
	}
	return strings.Replace(src, old, new, 1)
}

// putSync is the fdatasync of the solution's Put.
const putSync = "\tif err := s.log.Sync(); err != nil {\n\t\t// After a failed fdatasync Linux marks the pages clean: a retry\n\t\t// succeeds without writing them. The error must stick.\n\t\ts.err = err\n\t\treturn err\n\t}\n\ts.index[key] = value"

// bench runs line with source through harness.Exec, as the server does.
func bench(t *testing.T, line, source string) (*harness.BenchResult, error) {
	t.Helper()
	raw, err := harnesstest.Exec(context.Background(), line, harness.Env{Dir: t.TempDir(), Source: source})
	if err != nil {
		return nil, err
	}
	var r harness.BenchResult
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	return &r, nil
}

// The reference solution on the real disk: one fdatasync per Put, as the
// browser's grader counts them, labelled as interpreted and as syncing
// by its own rule.
func TestSolutionOnTheRealDisk(t *testing.T) {
	r, err := bench(t, "bench -engine mine -workload fillrandom -ops 300", solution(t))
	if err != nil {
		t.Fatal(err)
	}
	puts := r.Latency["put"].Count
	if puts != 300 || r.OpsPerSec <= 0 || r.Latency["put"].P99Ns <= 0 {
		t.Errorf("puts %d, ops/s %.0f, p99 %d ns; want 300 Puts measured", puts, r.OpsPerSec, r.Latency["put"].P99Ns)
	}
	if r.Fsyncs != puts || r.FsyncsByCause["fdatasync"] != puts || r.FsyncsByCause["fsync-dir"] != 0 {
		t.Errorf("fsyncs %d (%v) for %d Puts, want one fdatasync per Put", r.Fsyncs, r.FsyncsByCause, puts)
	}
	if !r.Interpreted || r.Sync != harness.SourceSync || r.Engine != "mine" {
		t.Errorf("engine %q sync %q interpreted %v, want mine, %q, true", r.Engine, r.Sync, r.Interpreted, harness.SourceSync)
	}
	if r.BytesWritten < puts*(8+16+128) {
		t.Errorf("bytes written %d, want at least the %d Puts' records", r.BytesWritten, puts)
	}
}

// A store that never syncs is measured too, and shows zero syncs; on
// mine-null the same code costs only the interpreter.
func TestNoSyncAndNull(t *testing.T) {
	nosync := edit(t, solution(t), putSync, "\ts.index[key] = value")
	for _, tt := range []struct{ engine, src string }{{"mine", nosync}, {"mine-null", solution(t)}} {
		r, err := bench(t, "bench -engine "+tt.engine+" -workload fillrandom -ops 300", tt.src)
		if err != nil {
			t.Fatalf("%s: %v", tt.engine, err)
		}
		if r.Fsyncs != 0 || r.Latency["put"].Count != 300 {
			t.Errorf("%s: %d fsyncs over %d Puts, want 0 over 300", tt.engine, r.Fsyncs, r.Latency["put"].Count)
		}
	}
}

// A store whose Open reopens what the preload wrote: a readrandom run
// opens the store twice, the second time from the disk alone, and every
// Get finds its key.
func TestReopenReadsBack(t *testing.T) {
	r, err := bench(t, "bench -engine mine -workload readrandom -ops 200 -keys 100", solution(t))
	if err != nil {
		t.Fatal(err)
	}
	if r.HitRate == nil || *r.HitRate != 1 {
		t.Errorf("hit rate %v, want 1: every preloaded key found after a reopen", r.HitRate)
	}
}

// Code that goes wrong ends the run with an error that says how, and
// the process goes on (this test's process among them).
func TestBadCodeEndsTheRun(t *testing.T) {
	// Long enough that loading the code and a good call never reach it
	// on a busy machine (load 20), short enough for the endless loop.
	defer func(d time.Duration) { callLimit = d }(callLimit)
	callLimit = 2 * time.Second
	sol := solution(t)
	putStart := "func (s *Store) Put(key, value string) error {\n"
	tests := []struct{ name, src, want string }{
		{"endless loop in Put", edit(t, sol, putStart, putStart+"\tfor {\n\t}\n"), `Put("`},
		{"panic in Put", edit(t, sol, putStart, putStart+"\tvar m map[string]int\n\tm[key] = 1\n"), "panic"},
		{"go statement", edit(t, sol, putStart, putStart+"\tgo s.log.Sync()\n"), "a go statement cannot run on the real disk"},
		{"range over an int", edit(t, sol, putStart, putStart+"\tn := 3\n\tfor i := range n {\n\t\t_ = i\n\t}\n"), "range over an int is not supported"},
		{"a name with ..", edit(t, sol, `fs.Create("log")`, `fs.Create("../log")`), "a file name must be a plain name"},
		{"an absolute path", edit(t, sol, `fs.Create("log")`, `fs.Create("/tmp/log")`), "a file name must be a plain name"},
		{"an import of os", edit(t, sol, "\t\"hash/crc32\"\n", "\t\"hash/crc32\"\n\t\"os\"\n"), `import "os" is not available`},
		{"Delete", sol, "has no Delete"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			line := "bench -engine mine -workload fillrandom -ops 50"
			if tt.name == "Delete" {
				line = "bench -engine mine -workload deleterandom -ops 50 -keys 50"
			}
			_, err := bench(t, line, tt.src)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// A recursion that never ends is stopped by the stack watch: Go ends the
// whole process (this test's) when a stack passes its limit, and the
// call limit here is too long to come first.
func TestRecursionIsStopped(t *testing.T) {
	defer func(d time.Duration) { callLimit = d }(callLimit)
	callLimit = time.Minute
	putStart := "func (s *Store) Put(key, value string) error {\n"
	src := edit(t, solution(t), putStart, "func deep(n int) int {\n\treturn deep(n+1) + 1\n}\n\n"+putStart+"\tdeep(0)\n")
	_, err := bench(t, "bench -engine mine -workload fillrandom -ops 50", src)
	if err == nil || !strings.Contains(err.Error(), "a recursion that never ends?") {
		t.Errorf("error %v, want the stack watch's", err)
	}
}

// The endless loop is stopped by its own limit, and names the limit.
func TestEndlessLoopNamesTheLimit(t *testing.T) {
	defer func(d time.Duration) { callLimit = d }(callLimit)
	callLimit = 2 * time.Second // see TestBadCodeEndsTheRun
	putStart := "func (s *Store) Put(key, value string) error {\n"
	_, err := bench(t, "bench -engine mine -workload fillrandom -ops 50", edit(t, solution(t), putStart, putStart+"\tfor {\n\t}\n"))
	if err == nil || !strings.Contains(err.Error(), "was still running after 2s: a loop that never ends?") {
		t.Errorf("error %v, want the call limit named", err)
	}
}

// Cancelling the run stops a store stuck in a loop, long before the call
// limit. The limit is raised to a minute for the test, so that loading
// the code on a busy machine (seconds at load 20) never counts against
// it: a run that ignored the cancel would take the whole minute.
func TestCancelStopsALoop(t *testing.T) {
	defer func(d time.Duration) { callLimit = d }(callLimit)
	callLimit = time.Minute
	putStart := "func (s *Store) Put(key, value string) error {\n"
	src := edit(t, solution(t), putStart, putStart+"\tfor {\n\t}\n")
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	start := time.Now()
	harnesstest.Exec(ctx, "bench -engine mine -workload fillrandom -ops 50", harness.Env{Dir: t.TempDir(), Source: src})
	if d := time.Since(start); d >= callLimit/2 {
		t.Errorf("the cancelled run took %v, want it stopped well before the call limit %v", d, callLimit)
	}
}

// The source: a file on the command line, never on a server's line; and
// a run with none says how to give it.
func TestSource(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "store.go")
	if err := os.WriteFile(file, []byte(solution(t)), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errw bytes.Buffer
	code := harness.RunCLIRecorded(context.Background(), []string{"bench", "-engine", "mine", "-src", file, "-ops", "50", "-dir", dir, "-format", "json"}, &out, &errw, nil)
	if code != 0 || !strings.Contains(out.String(), `"interpreted": true`) {
		t.Errorf("exit %d, stdout %q, stderr %q; want a result marked interpreted", code, out.String(), errw.String())
	}
	tests := []struct{ line, source, want string }{
		{"bench -engine mine -src " + file + " -ops 50", "", "cannot read a file of the machine it runs on"},
		{"bench -engine mine -ops 50", "", `press "Measure on this disk"`},
		{"bench -engine kv -src " + file + " -ops 50", "", "only an engine that runs your code takes it"},
		{"bench -engine mine -ops 50", strings.Repeat("/", harness.MaxSourceBytes+1), "must be at most"},
	}
	for _, tt := range tests {
		_, err := harnesstest.Exec(context.Background(), tt.line, harness.Env{Dir: dir, Source: tt.source})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want one containing %q", tt.line, err, tt.want)
		}
	}
}

// hugeChild names the environment variable under which this test binary,
// started again by TestHugeAllocations, runs one case and prints its error.
const hugeChild = "KVLAB_MINE_HUGE_CASE"

// hugeCases are stores whose one allocation Go could not give: before the
// bound counted bytes, each ended the process with "fatal error: runtime:
// out of memory" (no recover catches it), so each runs in a process of
// its own, and must end with the run's error naming the limit.
func hugeCases(t *testing.T) map[string]string {
	sol := solution(t)
	putStart := "func (s *Store) Put(key, value string) error {\n"
	in := func(body string) string { return edit(t, sol, putStart, putStart+body) }
	return map[string]string{
		"make of a slice of 8 MiB arrays":   in("\tbig := make([][1 << 20]int64, 1<<16)\n\t_ = big\n"),
		"make of a named big array type":    edit(t, sol, putStart, "type page [1 << 20]int64\n\n"+putStart+"\tpages := make([]page, 0, 1<<16)\n\t_ = pages\n"),
		"new of a 1 GiB array":              in("\tp := new([1 << 30]byte)\n\t_ = p\n"),
		"new of nested arrays":              in("\tp := new([1 << 24][1 << 20]byte)\n\t_ = p\n"),
		"a var of a huge array type":        in("\tvar a [1 << 24][1 << 20]byte\n\t_ = a\n"),
		"a composite literal of a huge one": in("\tn := len([1 << 24][1 << 20]int64{})\n\t_ = n\n"),
	}
}

// Allocations too large for the machine end the run with an error that
// names the limit; the process (a child of this test's) goes on.
func TestHugeAllocations(t *testing.T) {
	cases := hugeCases(t)
	if name := os.Getenv(hugeChild); name != "" {
		_, err := bench(t, "bench -engine mine -workload fillrandom -ops 5", cases[name])
		fmt.Printf("RUN ERROR: %v\n", err)
		return
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for name := range cases {
		t.Run(name, func(t *testing.T) {
			cmd := exec.Command(exe, "-test.run=^TestHugeAllocations$", "-test.count=1")
			cmd.Env = append(os.Environ(), hugeChild+"="+name)
			out, err := cmd.CombinedOutput()
			text := string(out)
			if err != nil {
				if i := strings.Index(text, "fatal error"); i >= 0 {
					text = text[i:min(len(text), i+200)]
				}
				t.Fatalf("the process running the store ended (%v): %s", err, text)
			}
			if !strings.Contains(text, "RUN ERROR: ") || !strings.Contains(text, "one allocation of a store here may be at most 64 MiB") {
				t.Errorf("output %q, want the run's error naming the 64 MiB limit", text)
			}
		})
	}
}
