package kvserver

import (
	"sync"
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
// a pipeline's writes (session.commit) and a transaction's (EXEC, with
// atomic set) both come here.
//
// A transaction's writes are one engine.Batch, which (*DB).Apply writes
// as one record: after a crash the store holds all of them or none, and
// they cost one write and, under always or group, one fdatasync.
//
// A pipeline's writes are separate writes, as a Redis pipeline's are.
// Under every policy but group they are applied one after the other:
// under always each SET pays its own fdatasync. Under group a Put returns
// only once an fdatasync covered it, so one after the other would cost
// an fdatasync each and lose group commit. So each write runs on its own
// goroutine, as concurrent clients' writes do, and all of them wait for
// the same fdatasync. Concurrent writes reach the log in any order, which
// is harmless only for distinct keys: when a key repeats in ws
// (redis-benchmark's SET test writes one key over and over), the writes
// go as one Batch instead, whose records keep their order, in the log as
// in the index, and share one commit.
func (s *Server) applyWrites(ws []write, atomic bool) []result {
	res := make([]result, len(ws))
	if atomic {
		s.batch(ws, res)
		return res
	}
	if s.policy.Mode != engine.SyncGroup {
		for i, w := range ws {
			res[i] = s.put(w)
		}
		return res
	}
	seen := make(map[string]bool, len(ws))
	for _, w := range ws {
		if seen[string(w.key)] {
			s.batch(ws, res)
			return res
		}
		seen[string(w.key)] = true
	}
	if len(ws) == 1 {
		res[0] = s.put(ws[0])
		return res
	}
	var wg sync.WaitGroup
	for i, w := range ws {
		wg.Go(func() { res[i] = s.put(w) })
	}
	wg.Wait()
	return res
}

// batch applies ws as one engine.Batch: every write gets the batch's
// error and time.
func (s *Server) batch(ws []write, res []result) {
	var b engine.Batch
	for _, w := range ws {
		if w.del {
			b.Delete(w.key)
		} else {
			b.Put(w.key, w.value)
		}
	}
	start := time.Now()
	err := s.db.Apply(&b)
	took := time.Since(start)
	for i := range res {
		res[i] = result{err: err, took: took}
	}
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
