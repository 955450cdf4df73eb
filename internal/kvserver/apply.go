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
// wait for the same fdatasync (inFlight).
//
// Concurrent writes reach the engine's log in any order, which is only
// harmless for distinct keys. When a key repeats in ws (redis-benchmark's
// SET test writes one key over and over), the order of its writes must
// hold, in the log as in the replies, and the pipeline must still share
// one commit: ordered does that.
func (s *Server) applyWrites(ws []write) []result {
	res := make([]result, len(ws))
	if s.policy.Mode != engine.SyncGroup {
		for i, w := range ws {
			res[i] = s.put(w)
		}
		return res
	}
	seen := make(map[string]bool, len(ws))
	for _, w := range ws {
		if seen[string(w.key)] {
			s.ordered(ws, res)
			return res
		}
		seen[string(w.key)] = true
	}
	s.submitMu.RLock()
	defer s.submitMu.RUnlock()
	s.inFlight(ws, res)
	return res
}

// inFlight applies ws, whose keys are distinct, concurrently.
func (s *Server) inFlight(ws []write, res []result) {
	if len(ws) == 1 {
		res[0] = s.put(ws[0])
		return
	}
	var wg sync.WaitGroup
	for i, w := range ws {
		wg.Go(func() { res[i] = s.put(w) })
	}
	wg.Wait()
}

// ordered applies ws concurrently under group, yet puts them into the
// engine's log in order where a key repeats: a write whose key an earlier
// write of ws also touches is started only once every earlier write is
// in the log (its seq counted in Stats().LastSeq). Meanwhile it holds
// s.submitMu for writing, so that no other connection's write is counted.
// The goroutines then wait for their fdatasync together, after submitMu
// is released.
func (s *Server) ordered(ws []write, res []result) {
	s.submitMu.Lock()
	base := s.db.Stats().LastSeq
	var (
		wg      sync.WaitGroup
		failed  atomic.Int64 // writes that returned an error (maybe never appended)
		pending = map[string]bool{}
	)
	// settle waits until each of the first n writes is in the log or has
	// failed.
	settle := func(n int) {
		for s.db.Stats().LastSeq-base+uint64(failed.Load()) < uint64(n) {
			runtime.Gosched()
		}
		clear(pending)
	}
	for i, w := range ws {
		if pending[string(w.key)] {
			settle(i)
		}
		pending[string(w.key)] = true
		wg.Go(func() {
			if res[i] = s.put(w); res[i].err != nil {
				failed.Add(1)
			}
		})
	}
	settle(len(ws))
	s.submitMu.Unlock()
	wg.Wait()
}

// put applies one write and times it.
func (s *Server) put(w write) result {
	start := time.Now()
	var err error
	if w.del {
		err = s.db.Delete(w.key)
	} else {
		err = s.db.Put(w.key, w.value)
	}
	return result{err: err, took: time.Since(start)}
}
