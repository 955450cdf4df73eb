package kvserver

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"kvlab/engine"
)

// write is one Put or Delete that a command asked for.
type write struct {
	key, value []byte
	del        bool
}

// result is what applying one write gave: its error and how long the
// engine took over it.
type result struct {
	err  error
	took time.Duration
}

// applyWrites applies ws to the engine in order and returns each one's
// result. It is the one place where the server's writes meet the engine:
// a pipeline's writes (session.commit) and a transaction's (EXEC) both
// come here, and the engine's atomic batch (engine.Batch with
// (*DB).Apply) plugs in here once the engine has it: EXEC's writes then
// become one Apply, durable all together or not at all.
//
// Until then a transaction is atomic for other clients, not against a
// crash: EXEC holds s.txMu for writing while it reads, writes and waits
// for durability, so no other connection reads or writes in between, but
// a crash in the middle of its writes can keep some of them (under
// group, the flusher may sync part of them before the rest are queued).
//
// Under every policy but group it calls Put or Delete for each write, one
// after the other. Under group a Put returns only once an fdatasync
// covered it, so calling them one after the other would cost one
// fdatasync each: a pipeline would lose group commit. So each write runs
// on its own goroutine, as concurrent clients' writes do, and all of them
// wait for the same fdatasync. Order still holds: writes go to the engine
// in order under s.submitMu, and a write whose key an earlier write of ws
// also touches is only started once every earlier write is in the
// engine's log (its seq counted in Stats().LastSeq), so the log holds a
// key's writes in the pipeline's order, however often it repeats, and the
// whole pipeline still shares one commit.
func (s *Server) applyWrites(ws []write) []result {
	res := make([]result, len(ws))
	if s.policy.Mode != engine.SyncGroup {
		for i, w := range ws {
			start := time.Now()
			res[i].err = s.put(w)
			res[i].took = time.Since(start)
		}
		return res
	}

	// REQUIRES: every write to s.db goes through here, so that under
	// submitMu no seq is appended but those of this call.
	s.submitMu.Lock()
	base := s.db.Stats().LastSeq
	var (
		wg       sync.WaitGroup
		failed   atomic.Int64 // writes that returned an error (maybe never appended)
		inFlight = map[string]bool{}
	)
	// settle waits until every write started so far is in the log or
	// has failed.
	settle := func(started int) {
		for s.db.Stats().LastSeq-base+uint64(failed.Load()) < uint64(started) {
			runtime.Gosched()
		}
		clear(inFlight)
	}
	for i, w := range ws {
		if inFlight[string(w.key)] {
			settle(i)
		}
		inFlight[string(w.key)] = true
		wg.Go(func() {
			start := time.Now()
			if res[i].err = s.put(w); res[i].err != nil {
				failed.Add(1)
			}
			res[i].took = time.Since(start)
		})
	}
	settle(len(ws))
	s.submitMu.Unlock()
	wg.Wait()
	return res
}

// put applies one write.
func (s *Server) put(w write) error {
	if w.del {
		return s.db.Delete(w.key)
	}
	return s.db.Put(w.key, w.value)
}
