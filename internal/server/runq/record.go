package runq

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"kvlab/harness"
	"kvlab/internal/archive"
)

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
func (r *Runner) record(j *Job, i int, res json.RawMessage, tl *timeline, started, ended time.Time) (int64, error) {
	line := j.Lines[i]
	run := &archive.Run{
		Spec: line, Result: res, Timeline: tl.json(),
		Source: j.From.Source, Lesson: j.From.Lesson, Cell: j.From.Cell, Quiz: j.From.Quiz, Browser: j.From.Browser,
		Version: r.cfg.Version, Host: r.cfg.HostID, Started: started.UTC(), Ended: ended.UTC(),
		Line: i, Own: j.From.Source == "quiz" || i < len(j.From.Own) && j.From.Own[i],
	}
	describe(run, j.Specs[i])
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
// its filter fields and conditions from its result, in the one decode of
// the result after the harness (archive.Run.FillFromResult, as the
// command line does): a bench result's probe (the first one of an array),
// or a probe run's whole result.
func describe(r *archive.Run, sp *harness.Spec) {
	r.Kind, r.SpecFull = sp.Cmd, sp.String()
	r.FillFromResult()
}
