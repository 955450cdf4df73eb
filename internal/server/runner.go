package server

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"kvlab/harness"
)

var runSeq atomic.Int64

// runLoop is the single runner: it owns the disk. Close stops it.
func (s *Server) runLoop() {
	defer s.wg.Done()
	for {
		j := s.q.next()
		if j == nil {
			select {
			case <-s.ctx.Done():
				for _, j := range s.q.drain() {
					j.cancel()
					finishJob(j, true)
				}
				return
			case <-s.q.wake:
				continue
			}
		}
		cancelled := s.runJob(j)
		// The disk is free before anyone hears the job is done, so a
		// client that reacts to done by queueing again is told position 0.
		s.q.finish()
		finishJob(j, cancelled)
	}
}

// finishJob sends done and releases whoever waits on the job.
func finishJob(j *job, cancelled bool) {
	j.out.send(doneMsg{Type: "done", ID: j.id, Cancelled: cancelled})
	if j.owner != nil {
		j.owner.forget(j)
	}
	if j.release != nil {
		j.release()
	}
	close(j.done)
}

// runJob runs a job's lines in order, each in a fresh directory that is
// removed afterwards, and records each finished line in the archive. A
// repeated job runs all its lines once per round. The first failing line
// ends the job. It reports whether the job was cancelled; the caller sends
// done.
func (s *Server) runJob(j *job) (cancelled bool) {
	if j.ctx.Err() != nil {
		return true
	}
	dir := filepath.Join(s.cfg.DataDir, "runs", fmt.Sprintf("run-%s-%d", s.owner.name, runSeq.Add(1)))
	defer os.RemoveAll(dir)
	// One time budget for the whole job, preload and every run of every
	// round included.
	ctx, stop := s.cfg.Budget.withBudget(j.ctx)
	defer stop()
	rounds := max(j.repeat, 1)
	for round := 1; round <= rounds; round++ {
		for i := range j.lines {
			var ok bool
			if ok, cancelled = s.runLine(ctx, j, dir, i, round, rounds); cancelled {
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
func (s *Server) runLine(ctx context.Context, j *job, dir string, i, round, rounds int) (ok, cancelled bool) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		j.err = err
		j.out.send(errorMsg{Type: "error", ID: j.id, Line: lineP(i), Message: "creating the run directory: " + err.Error()})
		return false, false
	}
	j.out.send(startedMsg{Type: "started", ID: j.id, Line: i, Spec: j.lines[i]})
	tl := &timeline{}
	env := harness.Env{
		Dir:    dir,
		Limits: s.cfg.Limits,
		Exe:    s.cfg.Exe,
		Source: j.source,
		Progress: func(p harness.Progress) {
			tl.add(p)
			j.out.send(progressMsg{Type: "progress", ID: j.id, Line: i, Progress: p})
		},
	}
	started := time.Now()
	res, err := s.exec(ctx, j.lines[i], env)
	ended := time.Now()
	os.RemoveAll(dir)
	if s.roomMode() {
		// What the room sees is what the archive keeps: its pages are public.
		res = redactForRoom(res)
	}
	if j.ctx.Err() != nil {
		return false, true
	}
	if spent := context.Cause(ctx); spent != nil {
		// The budget ran out: what the line measured before it was
		// stopped is still recorded and shown, marked cancelled, then why.
		if err == nil && json.Valid(res) {
			s.sendResult(j, i, round, rounds, res, tl, started, ended)
		}
		j.err = fmt.Errorf("line %d: %v", i, spent)
		j.out.send(errorMsg{Type: "error", ID: j.id, Line: lineP(i), Message: spent.Error()})
		return false, false
	}
	if err != nil {
		j.err = fmt.Errorf("line %d: %v", i, err)
		j.out.send(errorMsg{Type: "error", ID: j.id, Line: lineP(i), Message: err.Error()})
		return false, false
	}
	if !json.Valid(res) {
		j.err = fmt.Errorf("line %d: the harness returned invalid JSON", i)
		j.out.send(errorMsg{Type: "error", ID: j.id, Line: lineP(i), Message: j.err.Error()})
		return false, false
	}
	s.sendResult(j, i, round, rounds, res, tl, started, ended)
	return true, false
}

// sendResult records line i's result and then sends it with its run_id.
// The measurement is over: recording it cannot perturb it.
func (s *Server) sendResult(j *job, i, round, rounds int, res json.RawMessage, tl *timeline, started, ended time.Time) {
	id, _ := s.record(j, i, res, tl, started, ended)
	if j.started.IsZero() {
		j.started = started.UTC()
	}
	if round == rounds {
		j.results = append(j.results, res)
		j.runIDs = append(j.runIDs, id)
	}
	m := resultMsg{Type: "result", ID: j.id, Line: i, Result: res, RunID: id}
	if rounds > 1 {
		m.Round = round
	}
	j.out.send(m)
}

// cancelJob stops a job: a waiting one is removed and finished here, a
// running one is finished by the runner when the harness returns.
func (s *Server) cancelJob(j *job) {
	j.cancel()
	if s.q.remove(j) {
		finishJob(j, true)
	}
}
