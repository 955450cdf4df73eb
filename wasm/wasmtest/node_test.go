package wasmtest

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"kvlab/internal/browsertest"
	"kvlab/wasm/grader"
)

// nodeResult mirrors what testdata/node-runner.js prints.
type nodeResult struct {
	ReadyMs float64 `json:"ready_ms"`
	Results []struct {
		Result    *jsResult `json:"result"`
		TimedOut  bool      `json:"timed_out"`
		Dead      bool      `json:"dead"`
		RunMs     float64   `json:"run_ms"`
		RestartMs float64   `json:"restart_ms"`
	} `json:"results"`
}

// jsResult is the object kvlabGrader.run returns to JavaScript.
type jsResult struct {
	Exercise string `json:"exercise"`
	Passed   bool   `json:"passed"`
	Summary  string `json:"summary"`
	Error    *struct {
		Line int    `json:"line"`
		Col  int    `json:"col"`
		Msg  string `json:"msg"`
	} `json:"error"`
	Cases []struct {
		Input, Want, Got, Hint string
		Pass                   bool
	} `json:"cases"`
	Mutants []struct {
		Name   string `json:"name"`
		Caught bool   `json:"caught"`
	} `json:"mutants"`
}

type job struct {
	Name    string `json:"name"`
	Src     string `json:"src"`
	LimitMs int    `json:"limit_ms"`
}

func solution(t testing.TB, name string) string {
	e, err := grader.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	return e.Solution
}

// offByOne is the grader tests' Percentile that forgets the -1 on the rank.
var offByOne = func() string {
	b, err := os.ReadFile("../grader/testdata/offbyone.go.txt")
	if err != nil {
		panic(err)
	}
	return string(b)
}()

const syntaxErr = `package main

func Percentile(sorted []int64, p float64) int64 {
	return 1 +
}
`

// deadlock blocks every goroutine: the Go runtime itself stops.
const deadlock = `package main

func Percentile(sorted []int64, p float64) int64 {
	ch := make(chan int64)
	return <-ch
}
`

const endless = `package main

func Percentile(sorted []int64, p float64) int64 {
	i := 0
	for i >= 0 {
		i = (i + 1) % 10
	}
	return 0
}
`

// TestNodeWorker runs the compiled worker under Node.js in a worker
// thread and checks what each job returns. The endless loop gets the
// page's 2 s limit; the other jobs a limit a busy machine cannot reach,
// so only the loop is ever stopped.
func TestNodeWorker(t *testing.T) {
	const roomy = 60000 // ms
	node, err := exec.LookPath("node")
	if err != nil {
		browsertest.Missing(t, "node is not installed (apt-get install nodejs)")
	}
	wasm, wasmExec := buildWasm(t)
	jobs := []job{
		{"percentile", solution(t, "percentile"), roomy},
		{"percentile", offByOne, roomy},
		{"percentile", syntaxErr, roomy},
		{"percentile", endless, 2000},
		{"percentile", solution(t, "percentile"), roomy}, // on the fresh worker
		{"percentile-tests", solution(t, "percentile-tests"), roomy},
		{"mean-vs-tail", solution(t, "mean-vs-tail"), roomy},
		{"batch-model", solution(t, "batch-model"), roomy},
		{"percentile", solution(t, "percentile"), roomy}, // a later run, warm
		{"percentile", deadlock, roomy},
		{"percentile", solution(t, "percentile"), roomy}, // on the worker after the crash
		{"durable-ack", solution(t, "durable-ack"), roomy},
		{"torn-tail", solution(t, "torn-tail"), roomy},
		{"atomic-replace", solution(t, "atomic-replace"), roomy},
		// The largest workload of the crash exercises (seed 905, the
		// grader's TestWorkloadBounds), graded whole by the solutions and
		// failed, then shrunk, by a torn-tail Open that truncates nothing.
		{"durable-ack", solution(t, "durable-ack") + largest, roomy},
		{"torn-tail", solution(t, "torn-tail") + largest, roomy},
		{"torn-tail", noTruncate(t) + largest, roomy},
	}
	b, _ := json.Marshal(jobs)
	jobsFile := filepath.Join(t.TempDir(), "jobs.json")
	if err := os.WriteFile(jobsFile, b, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, "testdata/node-runner.js", wasmExec, wasm, jobsFile)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, stderr.String())
	}
	var res nodeResult
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("node output: %v\n%s", err, out)
	}
	if got, want := len(res.Results), len(jobs); got != want {
		t.Fatalf("got %d results, want %d", got, want)
	}
	r := res.Results

	for _, i := range []int{0, 4, 5, 6, 7, 8, 10, 11, 12, 13, 14, 15} {
		if r[i].Result == nil || !r[i].Result.Passed {
			t.Errorf("job %d (%s solution): got %+v, want passed", i, jobs[i].Name, r[i].Result)
		}
	}

	if off := r[1].Result; off == nil || off.Passed || len(off.Cases) == 0 {
		t.Errorf("off-by-one: got %+v, want a failed run with cases", off)
	} else if c := off.Cases[0]; c.Pass || c.Want != "50" || c.Got != "51" {
		t.Errorf("off-by-one first case: got %+v, want want=50 got=51 failing", c)
	}

	if se := r[2].Result; se == nil || se.Error == nil {
		t.Errorf("syntax error: got %+v, want an error", se)
	} else if se.Error.Line != 5 || se.Error.Col != 1 || !strings.Contains(se.Error.Msg, "syntax error") {
		t.Errorf("syntax error: got %d:%d %q, want 5:1 syntax error", se.Error.Line, se.Error.Col, se.Error.Msg)
	}

	if !r[3].TimedOut || r[3].Result != nil {
		t.Errorf("endless loop: got timed_out=%v result=%+v, want stopped by the limit", r[3].TimedOut, r[3].Result)
	}
	if r[3].RestartMs <= 0 {
		t.Errorf("endless loop: restart_ms = %v, want the fresh worker's start time", r[3].RestartMs)
	}
	if dl := r[9]; !dl.Dead || dl.Result == nil || dl.Result.Error == nil || !strings.Contains(dl.Result.Error.Msg, "deadlock") {
		t.Errorf("deadlock: got dead=%v result=%+v, want a dead worker and an error naming the deadlock", dl.Dead, dl.Result)
	}
	if nt := r[16].Result; nt == nil || nt.Passed || !strings.Contains(nt.Summary, "cases pass") {
		t.Errorf("torn-tail without truncation, largest workload: got %+v, want a failed run", nt)
	}
	for i, x := range r {
		t.Logf("job %d %s: %.0f ms", i, jobs[i].Name, x.RunMs)
	}
	t.Logf("node worker: ready %.0f ms; first run %.0f ms; later run %.0f ms; restart after the 2 s stop %.0f ms",
		res.ReadyMs, r[0].RunMs, r[8].RunMs, r[3].RestartMs)
}

// largest is the line that grades a crash exercise on its largest
// workload.
const largest = "\n// kvlab:seed 905\n"

// noTruncate is the torn-tail solution without the truncation of the tail.
func noTruncate(t *testing.T) string {
	sol := solution(t, "torn-tail")
	cut := "\tif good < len(data) {\n\t\t// A torn tail: cut it off, so new records follow the last good one.\n\t\tif err := s.log.Truncate(int64(good)); err != nil {\n\t\t\treturn nil, err\n\t\t}\n\t}\n"
	if !strings.Contains(sol, cut) {
		t.Fatal("the torn-tail solution has no truncation to take out")
	}
	return strings.Replace(sol, cut, "", 1)
}

func lookupStub(name string) (string, error) {
	e, err := grader.Lookup(name)
	return e.Stub, err
}
