package kvserver

import (
	"bufio"
	"bytes"
	"errors"
	"time"

	"kvlab/engine"
	"kvlab/internal/resp"
)

// Limits of one connection's batch (see session).
const (
	// maxPipeline bounds the commands executed as one batch.
	maxPipeline = 1024
	// maxHeld bounds the reply bytes a batch holds back while its writes
	// are not yet applied; past it the batch is committed and its replies
	// go out. A reply is bounded by it plus one value (MaxValueSize):
	// an MGET commits between its values.
	maxHeld = 256 << 10
	// maxBatchArgs bounds the argument bytes of a batch's commands.
	maxBatchArgs = 1 << 20
	// maxTxReply bounds the reply of one EXEC, which cannot be sent in
	// parts before its writes are applied; a longer one aborts the
	// transaction before anything is applied.
	maxTxReply = 32 << 20
	// maxQueued bounds the commands queued after MULTI (and
	// resp.MaxCommand their bytes together).
	maxQueued = 1024
)

// session is one connection's state. It is used by the connection's
// goroutine only.
//
// A batch is the commands the connection had sent, complete, before the
// server would wait for more: a pipeline. They run in order; their reads
// (GET, EXISTS, MGET) run at once and see the batch's earlier writes
// through overlay; their writes are collected in writes and applied
// together by commit (applyWrites), so under group they share one
// fdatasync. Replies are held in held until commit, since a write's
// reply may go only after the write is applied.
type session struct {
	s  *Server
	id int64
	w  *bufio.Writer // the connection's writer

	name []byte // CLIENT SETNAME

	// The batch.
	held    bytes.Buffer      // replies not yet sent
	writes  []write           // writes not yet applied, in order
	waiting []pendingReply    // replies in held that depend on writes
	overlay map[string][]byte // key -> value written by writes (nil: deleted)
	cmds    int               // commands in the batch
	args    int               // their argument bytes
	tx      bool              // running EXEC: s.txMu is held for writing
	txFull  bool              // EXEC's reply passed maxTxReply

	// MULTI.
	multi  bool       // between MULTI and EXEC or DISCARD
	queued [][][]byte // the commands queued since MULTI
	// queuedBytes is the argument bytes of queued, at most resp.MaxCommand.
	queuedBytes int
	dirty       bool // a command was refused while queuing: EXEC aborts
}

// pendingReply is a reply in held, bytes [from, to), that stands only if
// the writes [first, first+n) succeed; else it is replaced by the first
// one's error.
type pendingReply struct {
	from, to int
	first, n int
	cmd      string        // for INFO commandstats, "" for none
	readTook time.Duration // the command's time before its writes (DEL's lookups)
}

func newSession(s *Server, w *bufio.Writer) *session {
	return &session{s: s, id: s.nextID.Add(1), w: w, overlay: map[string][]byte{}}
}

// get reads key as the batch sees it: its own pending writes first, then
// the engine.
func (ss *session) get(key []byte) ([]byte, error) {
	if v, ok := ss.overlay[string(key)]; ok {
		if v == nil {
			return nil, engine.ErrNotFound
		}
		return v, nil
	}
	if !ss.tx {
		ss.s.txMu.RLock()
		defer ss.s.txMu.RUnlock()
	}
	return ss.s.db.Get(key)
}

// exists reports whether key exists as the batch sees it.
func (ss *session) exists(key []byte) (bool, error) {
	_, err := ss.get(key)
	if errors.Is(err, engine.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// queueWrite adds a write to the batch.
func (ss *session) queueWrite(w write) {
	ss.writes = append(ss.writes, w)
	if w.del {
		ss.overlay[string(w.key)] = nil
	} else {
		ss.overlay[string(w.key)] = w.value
	}
}

// room is called between the values of a long reply (MGET): if the
// batch holds more than maxHeld bytes of replies, it commits, so that
// what is held goes out. In EXEC, whose reply cannot go out in parts, it
// reports false once the reply passed maxTxReply.
func (ss *session) room() bool {
	if ss.tx {
		if ss.held.Len() > maxTxReply {
			ss.txFull = true
		}
		return !ss.txFull
	}
	if ss.held.Len() > maxHeld {
		ss.commit()
	}
	return true
}

// full reports whether the batch should be committed before the next
// command.
func (ss *session) full() bool {
	return ss.cmds >= maxPipeline || ss.held.Len() > maxHeld || ss.args > maxBatchArgs
}

// commit applies the batch's writes, writes its replies to the
// connection's writer (a write that failed replaces its command's reply
// with the error) and starts an empty batch.
func (ss *session) commit() {
	var res []result
	if len(ss.writes) > 0 {
		if !ss.tx {
			ss.s.txMu.RLock()
		}
		res = ss.s.applyWrites(ss.writes, ss.tx)
		if !ss.tx {
			ss.s.txMu.RUnlock()
		}
	}
	b := ss.held.Bytes()
	at := 0
	for _, p := range ss.waiting {
		ss.w.Write(b[at:p.from])
		var err error
		took := p.readTook
		for _, r := range res[p.first : p.first+p.n] {
			if err == nil {
				err = r.err
			}
			if ss.s.policy.Mode == engine.SyncGroup {
				took = max(took, p.readTook+r.took) // its writes ran at once
			} else {
				took += r.took
			}
		}
		if err != nil {
			resp.WriteError(ss.w, "ERR "+err.Error())
		} else {
			ss.w.Write(b[p.from:p.to])
		}
		if p.cmd != "" {
			ss.s.stats.record(p.cmd, took)
		}
		at = p.to
	}
	ss.w.Write(b[at:])
	ss.reset()
}

// reset empties the batch.
func (ss *session) reset() {
	if ss.held.Cap() > 2*maxHeld {
		ss.held = bytes.Buffer{} // give back the memory of a large reply
	}
	ss.held.Reset()
	clear(ss.writes) // drop the references to keys and values
	ss.writes = ss.writes[:0]
	ss.waiting = ss.waiting[:0]
	clear(ss.overlay)
	ss.cmds, ss.args = 0, 0
}
