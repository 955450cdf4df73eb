package runq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"kvlab/harness"
	"kvlab/harness/calc"
	"kvlab/internal/archive"
)

// Config is what a Runner runs with. Every field but Exec, Public, Logf,
// Version and HostID (this program's: archive.Version, archive.HostID)
// must be set.
type Config struct {
	// RunsDir holds the per-run directories: each line runs in a fresh
	// RunsDir/run-Name-N, removed afterwards.
	RunsDir string
	// Name is this runner's claim on RunsDir, in its directories' names.
	Name string
	// Limits are the caps of each line, as CheckLines checked them.
	Limits harness.Limits
	// Budget bounds each job as a whole; its time is enforced while the
	// job runs.
	Budget Budget
	// Exe is the binary `crash` re-executes; "" = os.Executable().
	Exe string
	// MaxWaiting caps the jobs waiting, over all submitters.
	MaxWaiting int
	// Archive records every finished line, with Version and HostID.
	Archive         archive.Archive
	Version, HostID string
	// Public records and sends each result as others may see it
	// (harness.Output.Public: a probe's without the machine's name), for
	// a server that serves others: what a room sees is what the archive
	// keeps.
	Public bool
	// Exec runs one parsed line; nil = harness.ExecOutput. Tests give a
	// runner they control.
	Exec func(ctx context.Context, sp *harness.Spec, env harness.Env) (harness.Output, error)
	// Logf receives a line when a run could not be recorded.
	Logf func(format string, args ...any)
}

// Runner is the disk's one runner: a queue of jobs and the goroutine that
// runs them one at a time. It is safe for concurrent use.
type Runner struct {
	cfg Config
	q   *queue
	seq atomic.Int64 // numbers the run directories

	// ctx ends at Close: the runner's lifetime, and the parent of no job
	// (each job's is a child of its submitter's), so Close cancels the
	// jobs it drains itself.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup // the run loop
}

// New starts a Runner; Close stops it.
func New(cfg Config) *Runner {
	if cfg.Exec == nil {
		cfg.Exec = harness.ExecOutput
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	if cfg.Version == "" {
		cfg.Version = archive.Version()
	}
	if cfg.HostID == "" {
		cfg.HostID = archive.HostID()
	}
	r := &Runner{cfg: cfg, q: newQueue()}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	r.wg.Add(1)
	go r.loop()
	return r
}

// Submit queues j (made by NewJob) and tells it its place. When the
// queue refuses it (ErrShuttingDown, *QueueFullError), j hears why
// (j.Refused, or an error message) and then done, on its own sink, gives
// back what it held, and Submit returns the refusal; Done is closed
// either way once j is finished. j.Specs must be j.Lines as CheckLines
// parsed them.
func (r *Runner) Submit(j *Job) error {
	if j.done == nil {
		panic(fmt.Sprintf("runq: job %q was not made by NewJob", j.ID))
	}
	if len(j.Specs) != len(j.Lines) {
		panic(fmt.Sprintf("runq: job %q has %d lines and %d specs: submit the specs CheckLines returned", j.ID, len(j.Lines), len(j.Specs)))
	}
	err := r.q.enqueue(j, r.cfg.MaxWaiting)
	if err == nil {
		return nil
	}
	if j.Refused != nil {
		j.Refused(err)
	} else {
		j.Out.Send(ErrorMsg{Type: "error", ID: j.ID, Message: err.Error()})
	}
	j.cancel()
	finish(j, errors.Is(err, ErrShuttingDown))
	return err
}

// Cancel stops j: one not yet submitted will finish cancelled as soon as
// it is, a waiting job is removed and finished here, a running
// one is finished by the runner when the harness returns.
func (r *Runner) Cancel(j *Job) {
	j.cancel()
	if r.q.remove(j) {
		finish(j, true)
	}
}

// PlaceOf finds the job holding ticket and tells its place as the queued
// message would: the runs ahead of it, the running one included; 0 and
// running when it holds the disk. ok is false when no job has the ticket.
func (r *Runner) PlaceOf(ticket string) (pos int, running, ok bool) { return r.q.placeOf(ticket) }

// Counts is the number of jobs waiting, and whether one is running.
func (r *Runner) Counts() (waiting int, running bool) { return r.q.counts() }

// Close refuses new jobs (ErrShuttingDown), cancels the waiting ones
// (each hears done, cancelled) and the running one, and waits for the
// runner to stop. It is safe to call more than once.
func (r *Runner) Close() {
	for _, j := range r.q.drain() {
		j.cancel()
		finish(j, true)
	}
	r.q.cancelRunning()
	r.cancel()
	r.wg.Wait()
}

// loop is the single runner: it owns the disk.
func (r *Runner) loop() {
	defer r.wg.Done()
	for {
		j := r.q.next()
		if j == nil {
			select {
			case <-r.ctx.Done():
				for _, j := range r.q.drain() {
					j.cancel()
					finish(j, true)
				}
				return
			case <-r.q.wake:
				continue
			}
		}
		cancelled := r.runJob(j)
		// The disk is free before anyone hears the job is done, so a
		// client that reacts to done by queueing again is told position 0.
		r.q.finish()
		finish(j, cancelled)
	}
}

// finish sends done and releases whoever waits on the job.
func finish(j *Job, cancelled bool) {
	j.Out.Send(DoneMsg{Type: "done", ID: j.ID, Cancelled: cancelled})
	if j.Release != nil {
		j.Release()
	}
	close(j.done)
}

// runJob runs a job's lines in order, each in a fresh directory that is
// removed afterwards, and records each finished line in the archive. A
// repeated job runs all its lines once per round. The first failing line
// ends the job. It reports whether the job was cancelled; the caller sends
// done.
func (r *Runner) runJob(j *Job) (cancelled bool) {
	if j.ctx.Err() != nil {
		return true
	}
	dir := filepath.Join(r.cfg.RunsDir, fmt.Sprintf("run-%s-%d", r.cfg.Name, r.seq.Add(1)))
	defer os.RemoveAll(dir)
	// One time budget for the whole job, preload and every run of every
	// round included.
	ctx, stop := r.cfg.Budget.withBudget(j.ctx)
	defer stop()
	rounds := max(j.Repeat, 1)
	// The last round runs its lines in either order; Results are in the
	// cell's.
	defer j.sortResults()
	// Rounds run the lines in mirrored order (A B, B A, A B, ...): a
	// drift of the machine in time then lands on each line alike, and a
	// quiz comparing two lines compares them within each round.
	for round := 1; round <= rounds; round++ {
		for _, i := range calc.RoundOrder(len(j.Lines), round) {
			var ok bool
			if ok, cancelled = r.runLine(ctx, j, dir, i, round, rounds); cancelled {
				return true
			} else if !ok {
				return false
			}
		}
	}
	return false
}

// runLine runs line i of j under ctx (the job's budget) and sends its
// result (or error). ok is false when the line failed or the budget ran
// out, which ends the job.
func (r *Runner) runLine(ctx context.Context, j *Job, dir string, i, round, rounds int) (ok, cancelled bool) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		j.err = err
		j.Out.Send(ErrorMsg{Type: "error", ID: j.ID, Line: LineP(i), Message: "creating the run directory: " + err.Error()})
		return false, false
	}
	sm := StartedMsg{Type: "started", ID: j.ID, Line: i, Spec: j.Lines[i]}
	if rounds > 1 {
		sm.Round, sm.Rounds = round, rounds
	}
	j.Out.Send(sm)
	tl := &timeline{}
	env := harness.Env{
		Dir:    dir,
		Limits: r.cfg.Limits,
		Exe:    r.cfg.Exe,
		Source: j.Source,
		Script: j.Script,
		Progress: func(p harness.Progress) {
			tl.add(p)
			j.Out.Send(ProgressMsg{Type: "progress", ID: j.ID, Line: i, Progress: p})
		},
	}
	started := time.Now()
	res, err := r.cfg.Exec(ctx, j.Specs[i], env)
	ended := time.Now()
	os.RemoveAll(dir)
	if r.cfg.Public {
		res = res.Public()
	}
	if j.ctx.Err() != nil {
		return false, true
	}
	if spent := context.Cause(ctx); spent != nil {
		// The budget ran out: what the line measured before it was
		// stopped is still recorded and shown, marked cancelled, then why.
		if err == nil && json.Valid(res.JSON) {
			r.sendResult(j, i, round, rounds, res, tl, started, ended)
		}
		j.err = fmt.Errorf("line %d: %v", i, spent)
		j.Out.Send(ErrorMsg{Type: "error", ID: j.ID, Line: LineP(i), Message: spent.Error()})
		return false, false
	}
	if err != nil {
		j.err = fmt.Errorf("line %d: %v", i, err)
		j.Out.Send(ErrorMsg{Type: "error", ID: j.ID, Line: LineP(i), Message: r.withoutPaths(err.Error())})
		return false, false
	}
	if !json.Valid(res.JSON) {
		j.err = fmt.Errorf("line %d: the harness returned invalid JSON", i)
		j.Out.Send(ErrorMsg{Type: "error", ID: j.ID, Line: LineP(i), Message: j.err.Error()})
		return false, false
	}
	r.sendResult(j, i, round, rounds, res, tl, started, ended)
	return true, false
}

// withoutPaths words msg for the page: the server's own directories
// (the run's, under RunsDir) are named by what they are, not by their
// path, which would tell every reader the server's layout and often its
// user's name.
func (r *Runner) withoutPaths(msg string) string {
	if r.cfg.RunsDir == "" {
		return msg
	}
	re := regexp.MustCompile(regexp.QuoteMeta(r.cfg.RunsDir) + `[^\s:;,()"']*`)
	return re.ReplaceAllString(msg, "the run's directory")
}

// sendResult records line i's result and then sends it with its run_id.
// The measurement is over: recording it cannot perturb it.
func (r *Runner) sendResult(j *Job, i, round, rounds int, res harness.Output, tl *timeline, started, ended time.Time) {
	id, _ := r.record(j, i, res, tl, started, ended)
	if j.started.IsZero() {
		j.started = started.UTC()
	}
	if round == rounds {
		j.results = append(j.results, res.JSON)
		j.runIDs = append(j.runIDs, id)
		j.resultLines = append(j.resultLines, i)
	}
	m := ResultMsg{Type: "result", ID: j.ID, Line: i, Result: res.JSON, RunID: id}
	if rounds > 1 {
		m.Round = round
	}
	j.Out.Send(m)
}

// Recording: every line the runner runs is stored in the run archive once
// it has finished, with where it came from. The runner records after the
// harness has returned, so the archive write is outside every timed
// region; it is inside the runner's turn, so a result message carrying
// run_id is sent only once the record is committed: a page that was told
// a run_id can find it after any crash.

// timeline collects a line's progress events while it runs. The runner's
// Progress callback appends to it; it is safe for concurrent use.
type timeline struct {
	mu  sync.Mutex // guards evs
	evs []harness.Progress
}

func (t *timeline) add(p harness.Progress) {
	t.mu.Lock()
	t.evs = append(t.evs, p)
	t.mu.Unlock()
}

func (t *timeline) json() json.RawMessage {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.evs) == 0 {
		return json.RawMessage("[]")
	}
	b, err := json.Marshal(t.evs)
	if err != nil {
		panic("runq: progress events do not marshal: " + err.Error())
	}
	return b
}

// record stores the job's finished line i in the archive, with its index
// and whether it is the lesson's own, and returns its id, or 0 and the
// error when it could not be stored (the run is still reported; it just
// has no permalink).
func (r *Runner) record(j *Job, i int, res harness.Output, tl *timeline, started, ended time.Time) (int64, error) {
	line := j.Lines[i]
	run := &archive.Run{
		Spec: line, Result: res.JSON, Timeline: tl.json(),
		Source: j.From.Source, Lesson: j.From.Lesson, Cell: j.From.Cell, Quiz: j.From.Quiz, Browser: j.From.Browser,
		Version: r.cfg.Version, Host: r.cfg.HostID, Started: started.UTC(), Ended: ended.UTC(),
		Line: i, Own: j.From.Source == "quiz" || i < len(j.From.Own) && j.From.Own[i],
	}
	describe(run, j.Specs[i], res.Head)
	// The record must not be lost to a cancelled client: it has its own
	// short deadline, and Close waits for the runner before the archive
	// is closed.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	id, err := r.cfg.Archive.Add(ctx, run)
	if err != nil {
		r.cfg.Logf("archive: recording %q: %v", line, err)
		return 0, err
	}
	return id, nil
}

// describe fills a run's kind and full spec from its parsed spec, and
// its filter fields and conditions from its result's head, which the
// harness made as it encoded the result: the fields
// archive.Run.FillFromResult would read off the JSON (an array's
// distinct values comma-joined; a bench result's probe, the first one
// of an array, or a probe run's whole result). The result is not
// decoded again.
func describe(r *archive.Run, sp *harness.Spec, h harness.Head) {
	r.Kind, r.SpecFull = sp.Cmd, sp.String()
	r.Engine = strings.Join(h.Engines, ",")
	r.Sync = strings.Join(h.Syncs, ",")
	r.Workload = strings.Join(h.Workloads, ",")
	r.Probe = h.Probe
}
