package runq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"kvlab/harness"
	"kvlab/internal/archive"
)

// memArchive keeps the runs the runner records; nothing else is called.
type memArchive struct {
	archive.Archive
	mu   sync.Mutex // guards runs
	runs []*archive.Run
}

func (a *memArchive) Add(ctx context.Context, r *archive.Run) (int64, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.runs = append(a.runs, r)
	return int64(len(a.runs)), nil
}

// sink keeps every message it is sent. It is safe for concurrent use.
type sink struct {
	mu   sync.Mutex // guards msgs
	msgs []any
}

func (s *sink) Send(v any) {
	s.mu.Lock()
	s.msgs = append(s.msgs, v)
	s.mu.Unlock()
}

// types is the type of each message kept, space separated.
func (s *sink) types() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, m := range s.msgs {
		out = append(out, strings.TrimSuffix(strings.TrimPrefix(fmt.Sprintf("%T", m), "runq."), "Msg"))
	}
	return strings.Join(out, " ")
}

func newTestRunner(t *testing.T, maxWaiting int, exec func(ctx context.Context, sp *harness.Spec, env harness.Env) (harness.Output, error)) (*Runner, *memArchive) {
	t.Helper()
	arch := &memArchive{}
	r := New(Config{RunsDir: filepath.Join(t.TempDir(), "runs"), Name: "t", Limits: harness.DefaultLimits(), Budget: DefaultBudget(),
		MaxWaiting: maxWaiting, Archive: arch, Version: "test", HostID: "test", Exec: exec})
	t.Cleanup(r.Close)
	return r, arch
}

// job is a checked job of lines, its messages kept by out.
func job(t *testing.T, id string, class Class, out Sink, lines ...string) *Job {
	t.Helper()
	specs, _, err := CheckLines(lines, 0, harness.DefaultLimits(), DefaultBudget())
	if err != nil {
		t.Fatal(err)
	}
	j := NewJob(context.Background())
	j.ID, j.Class, j.Out, j.Lines, j.Specs, j.From = id, class, out, lines, specs, Origin{Source: "cell"}
	return j
}

// A job the queue refuses hears why and then done on its own sink, once,
// gives back what it held, and is finished; a Refused hook speaks in
// place of the plain error, and done still follows on the same sink.
func TestSubmitRefusedSameSink(t *testing.T) {
	r, _ := newTestRunner(t, 0, nil) // no job may wait
	for _, hook := range []bool{false, true} {
		out := &sink{}
		j := job(t, "r", Cell, out, "bench -engine null -ops 10")
		released := 0
		j.Release = func() { released++ }
		var heard error
		if hook {
			j.Refused = func(err error) { heard = err; out.Send("refused") }
		}
		err := r.Submit(j)
		var full *QueueFullError
		if !errors.As(err, &full) {
			t.Fatalf("Submit: %v, want a *QueueFullError", err)
		}
		want := "Error Done"
		if hook {
			want = "string Done"
			if heard != err {
				t.Errorf("Refused heard %v, want %v", heard, err)
			}
		}
		if got := out.types(); got != want {
			t.Errorf("hook %v: the sink heard %q, want %q", hook, got, want)
		}
		select {
		case <-j.Done():
		default:
			t.Errorf("hook %v: Done is not closed after a refusal", hook)
		}
		if released != 1 {
			t.Errorf("hook %v: Release called %d times, want 1", hook, released)
		}
	}
}

// Jobs run in the order they came, except that a follower's job waits
// behind every presenter's and cell's job queued with it.
func TestQueueOrderByClass(t *testing.T) {
	gate := make(chan struct{})
	var mu sync.Mutex
	var ran []int64 // each run's -ops, in run order
	exec := func(ctx context.Context, sp *harness.Spec, env harness.Env) (harness.Output, error) {
		mu.Lock()
		ran = append(ran, sp.Ops)
		mu.Unlock()
		if sp.Ops == 1 {
			<-gate // holds the disk while the others queue
		}
		return harness.Output{JSON: []byte(`{"kind":"bench"}`), Head: harness.Head{Kind: "bench"}}, nil
	}
	r, _ := newTestRunner(t, 10, exec)
	hold := job(t, "hold", Cell, Discard{}, "bench -engine null -ops 1")
	if err := r.Submit(hold); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Millisecond) {
		if _, running := r.Counts(); running {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the first job never started")
		}
	}
	var jobs []*Job
	for i, c := range []Class{Follower, Cell, Follower, Presenter, Cell} {
		j := job(t, fmt.Sprint(i), c, Discard{}, fmt.Sprintf("bench -engine null -ops %d", 10+i))
		if err := r.Submit(j); err != nil {
			t.Fatal(err)
		}
		jobs = append(jobs, j)
	}
	close(gate)
	for _, j := range jobs {
		<-j.Done()
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []int64{1, 11, 13, 14, 10, 12}; !slices.Equal(ran, want) {
		t.Errorf("ran -ops %v, want %v: cells and presenters in order, then followers in order", ran, want)
	}
}

// Each line is parsed once: the runner runs the very specs CheckLines
// returned, and records each line's full spec from them.
func TestSpecsTravelWithTheJob(t *testing.T) {
	var got []*harness.Spec
	exec := func(ctx context.Context, sp *harness.Spec, env harness.Env) (harness.Output, error) {
		got = append(got, sp) // the runner runs one line at a time
		return harness.Output{JSON: []byte(`{"kind":"bench"}`), Head: harness.Head{Kind: "bench"}}, nil
	}
	r, arch := newTestRunner(t, 1, exec)
	out := &sink{}
	j := job(t, "s", Cell, out, "bench -engine null -ops 10", "bench -engine null -ops 20 -threads 2")
	if err := r.Submit(j); err != nil {
		t.Fatal(err)
	}
	<-j.Done()
	if j.Err() != nil || len(got) != 2 || got[0] != j.Specs[0] || got[1] != j.Specs[1] {
		t.Fatalf("ran %v (err %v), want the job's own specs %v", got, j.Err(), j.Specs)
	}
	arch.mu.Lock()
	defer arch.mu.Unlock()
	for i, run := range arch.runs {
		if run.SpecFull != j.Specs[i].String() || run.Kind != "bench" || run.Spec != j.Lines[i] {
			t.Errorf("run %d recorded spec %q kind %q line %q, want %q, bench, %q", i, run.SpecFull, run.Kind, run.Spec, j.Specs[i].String(), j.Lines[i])
		}
	}
	if want := "Queued Started Result Started Result Done"; out.types() != want {
		t.Errorf("the sink heard %q, want %q", out.types(), want)
	}
}

// Close cancels the running job and the waiting ones, each of which
// hears done (cancelled) on its own sink, and refuses later jobs.
func TestCloseCancelsEverything(t *testing.T) {
	exec := func(ctx context.Context, sp *harness.Spec, env harness.Env) (harness.Output, error) {
		<-ctx.Done() // runs until cancelled
		return harness.Output{}, ctx.Err()
	}
	r, _ := newTestRunner(t, 5, exec)
	running, waiting := &sink{}, &sink{}
	j1 := job(t, "running", Cell, running, "bench -engine null -ops 10")
	j2 := job(t, "waiting", Cell, waiting, "bench -engine null -ops 10")
	if r.Submit(j1) != nil || r.Submit(j2) != nil {
		t.Fatal("Submit refused a job")
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Millisecond) {
		if _, busy := r.Counts(); busy {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the first job never started")
		}
	}
	r.Close()
	for _, j := range []*Job{j1, j2} {
		select {
		case <-j.Done():
		default:
			t.Errorf("job %s: not finished after Close", j.ID)
		}
	}
	for name, s := range map[string]*sink{"running": running, "waiting": waiting} {
		s.mu.Lock()
		last, _ := s.msgs[len(s.msgs)-1].(DoneMsg)
		s.mu.Unlock()
		if !last.Cancelled {
			t.Errorf("%s job: last message %v, want done, cancelled", name, last)
		}
	}
	if err := r.Submit(job(t, "late", Cell, Discard{}, "bench -engine null -ops 10")); !errors.Is(err, ErrShuttingDown) {
		t.Errorf("Submit after Close: %v, want ErrShuttingDown", err)
	}
}

// A line's error reaches the page without the server's paths: the run
// directory is named by what it is. Before, an engine's error showed
// every reader where the server keeps its runs (and its user's home).
func TestErrorsWithoutServerPaths(t *testing.T) {
	var runsDir string
	r, _ := newTestRunner(t, 4, func(ctx context.Context, sp *harness.Spec, env harness.Env) (harness.Output, error) {
		return harness.Output{}, fmt.Errorf("open resp://127.0.0.1:1 in %s: resp: refused; its log: %s", filepath.Join(env.Dir, "kvlab-resp-1"), filepath.Join(env.Dir, "pg.log"))
	})
	runsDir = r.cfg.RunsDir
	out := &sink{}
	j := job(t, "a", Cell, out, "bench -engine null -ops 10")
	if err := r.Submit(j); err != nil {
		t.Fatal(err)
	}
	<-j.Done()
	out.mu.Lock()
	defer out.mu.Unlock()
	var msg string
	for _, m := range out.msgs {
		if e, ok := m.(ErrorMsg); ok {
			msg = e.Message
		}
	}
	if msg == "" || strings.Contains(msg, runsDir) || strings.Contains(msg, "pg.log") || !strings.Contains(msg, "the run's directory") {
		t.Errorf("error message %q, want it without %s", msg, runsDir)
	}
}

// The runner files a result from the head the harness made beside it and
// does not decode the JSON again: the recorded engine, sync, workload
// and conditions are the head's. A runner for a server that serves
// others records and sends the result's public form, the head's Public.
func TestRecordsFromTheHead(t *testing.T) {
	out := harness.Output{JSON: json.RawMessage(`{"kind":"bench","engine":"json-says","sync":"json-says"}`),
		Head: harness.Head{Kind: "bench", Engines: []string{"kv", "null"}, Syncs: []string{"always"}, Workloads: []string{"fillrandom"},
			Probe: json.RawMessage(`{"fs":"head-says"}`), Public: json.RawMessage(`{"kind":"bench","public":true}`)}}
	for _, public := range []bool{false, true} {
		arch := &memArchive{}
		r := New(Config{RunsDir: filepath.Join(t.TempDir(), "runs"), Name: "t", Limits: harness.DefaultLimits(), Budget: DefaultBudget(),
			MaxWaiting: 1, Archive: arch, Version: "test", HostID: "test", Public: public,
			Exec: func(context.Context, *harness.Spec, harness.Env) (harness.Output, error) { return out, nil }})
		s := &sink{}
		j := job(t, "h", Cell, s, "bench -engine null -ops 10")
		if err := r.Submit(j); err != nil {
			t.Fatal(err)
		}
		<-j.Done()
		r.Close()
		want := out.JSON
		if public {
			want = out.Head.Public
		}
		arch.mu.Lock()
		if len(arch.runs) != 1 {
			t.Fatalf("public %v: recorded %d runs, want 1", public, len(arch.runs))
		}
		run := arch.runs[0]
		arch.mu.Unlock()
		if run.Engine != "kv,null" || run.Sync != "always" || run.Workload != "fillrandom" || string(run.Probe) != `{"fs":"head-says"}` || string(run.Result) != string(want) {
			t.Errorf("public %v: recorded engine %q sync %q workload %q probe %s result %s; want the head's kv,null, always, fillrandom, {\"fs\":\"head-says\"} and %s",
				public, run.Engine, run.Sync, run.Workload, run.Probe, run.Result, want)
		}
		s.mu.Lock()
		for _, m := range s.msgs {
			if rm, ok := m.(ResultMsg); ok && string(rm.Result) != string(want) {
				t.Errorf("public %v: sent result %s, want %s", public, rm.Result, want)
			}
		}
		s.mu.Unlock()
	}
}
