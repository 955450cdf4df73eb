package harness

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// Pipelining: -pipeline N.
//
// A client of a server need not wait for one reply before it sends its
// next request. It can write N requests, send them in one go, and then
// read the N replies, which the server answers in the order it was asked
// (RESP does; so do HTTP/1.1 and PostgreSQL's extended protocol). The
// round trip is then paid once per batch instead of once per request, and
// a server that executes what it has read together can make a batch share
// one flush: kvserver under group runs a pipeline's SETs at once, so they
// wait on the same fdatasync; redis-server under appendfsync always fsyncs
// once for every write it read in one turn of its event loop. A pipeline
// is a batch that the client makes.
//
// With -pipeline N each client thread does its units N at a time on its
// own connection: it sends N requests, then reads the N replies. The last
// batch of a -ops run may be shorter; a -duration run stops after the
// batch that ends past the deadline. readwhilewriting's background writer
// is not pipelined: it is the load the readers run beside.
//
// A pipelined request's latency runs from the moment its batch starts to
// be sent (the clock is read before the first request is written) to the
// moment its own reply has been read. Request k of a batch so includes
// the time the server took for the k-1 before it, as it would for an
// application that pipelined them: nobody has its answer sooner. It is
// not the server's time for the request alone (server_latency has that),
// nor the batch's time divided by N, which would make a pipeline look N
// times faster per request than anyone waiting on it sees.
//
// Only a store that talks to a server over a connection can pipeline. An
// in-process store's Put is a function call that returns when it is done:
// there is no connection to send the next request on before the first is
// answered, and its way to batch is its sync policy (-sync batch:N, or
// group with several threads). A line that asks an in-process engine to
// pipeline is refused before anything runs.

// maxPipeline bounds -pipeline: as many commands as kvserver executes as
// one batch and RESP lets one array hold.
const maxPipeline = 1024

// OpKind is what one request of a pipelined batch does.
type OpKind uint8

const (
	OpPut    OpKind = iota // store Value under Key
	OpGet                  // read Key
	OpDelete               // remove Key
)

// PipeOp is one request of a pipelined batch. Key and Value belong to the
// caller and stay valid until Pipeline returns.
type PipeOp struct {
	Kind  OpKind
	Key   []byte
	Value []byte // OpPut only
}

// Pipeliner is implemented by stores that reach their data over a
// connection and can send many requests on it before reading a reply.
type Pipeliner interface {
	// Pipeline sends every request of batch on one connection, which no
	// other caller uses meanwhile, before reading any reply; then it reads
	// the replies in order and calls replied(i, found) as the reply to
	// batch[i] has been read (found: a Get found its key). It returns the
	// first error: a failed send or read (the connection is then dropped),
	// or an error reply (the rest are still read, so the connection stays
	// in step). Safe for concurrent use, each caller with its own batch.
	Pipeline(batch []PipeOp, replied func(i int, found bool)) error
}

// pipelining names the engines (by -engine name, or by URL scheme as
// "resp://") whose stores are Pipeliners. Written only from init
// functions (MarkPipelining), so read without a lock.
var pipelining = map[string]bool{}

// MarkPipelining records that the registered engine name, or every
// engine of the URL scheme name when it ends in "://", opens a store
// that implements Pipeliner, so -pipeline N is allowed on it. It is
// meant to be called from init functions.
func MarkPipelining(name string) {
	enginesMu.Lock()
	defer enginesMu.Unlock()
	pipelining[name] = true
}

// pipelines says whether engine e (a registered name or a URL) can
// pipeline.
func pipelines(e string) bool {
	if sch, _, ok := strings.Cut(e, "://"); ok {
		return pipelining[sch+"://"]
	}
	return pipelining[e]
}

// pipeliningEngines lists what -engine can pipeline, for error text: the
// registered names, sorted, then each scheme's example.
func pipeliningEngines() string {
	enginesMu.Lock()
	defer enginesMu.Unlock()
	var names, ex []string
	for n := range pipelining {
		if sch, ok := strings.CutSuffix(n, "://"); ok {
			if s, ok := schemes[sch]; ok {
				ex = append(ex, s.example)
			}
			continue
		}
		names = append(names, n)
	}
	sort.Strings(names)
	sort.Strings(ex)
	if len(names)+len(ex) == 0 {
		return "none is registered in this build"
	}
	return strings.Join(append(names, ex...), ", ")
}

func pipelineFlag() flagDef {
	return flagDef{name: "pipeline", usage: "requests each client sends on its connection before reading their replies; latency runs from the batch's send to each reply (engines over a socket: kvserver, redis, resp://; default 1, none)",
		fill: func(s *Spec, a arg, _ Limits) error {
			n, err := a.int(1, 1, maxPipeline)
			s.Pipeline = int(n)
			if err != nil || n == 1 {
				return err
			}
			return checkPipeline(s)
		},
		show: func(s *Spec, _ runOf) (string, bool) { return itoa(s.Pipeline), s.Pipeline > 1 }}
}

// checkPipeline refuses a -pipeline N > 1 that the line's engines,
// workload or loop cannot honour, saying why.
func checkPipeline(s *Spec) error {
	for _, e := range s.Engines {
		if !pipelines(e) {
			return fmt.Errorf("-pipeline %d: engine %s is called inside this process: a Put is a function call that returns when it is done, so there is no connection to send the next request on before the first is answered (in process, batch with -sync batch:N, or with -sync group and several threads); engines that pipeline: %s",
				s.Pipeline, e, pipeliningEngines())
		}
	}
	if s.Rate > 0 {
		return fmt.Errorf("-pipeline %d with -rate: an open loop starts each unit at its own intended time, a pipeline sends %d at once; give one or the other", s.Pipeline, s.Pipeline)
	}
	wl, _ := lookupWorkload(s.Workload)
	unpiped := func(st step) bool { return st == stepUpdate || st == stepScan || st == stepBatch }
	if unpiped(wl.step) {
		var ok []string
		for _, w := range workloads {
			if !unpiped(w.step) {
				ok = append(ok, w.name)
			}
		}
		why := "its Put of a key waits for the Get of it (a read-modify-write cannot send both at once)"
		switch wl.step {
		case stepScan:
			why = "a scan is not one request of a pipeline"
		case stepBatch:
			why = "its unit is already -batch requests, and a pipeline counts each request it sends as a unit"
		}
		return fmt.Errorf("-pipeline %d: -workload %s cannot be pipelined: %s; workloads that can: %s", s.Pipeline, s.Workload, why, strings.Join(ok, ", "))
	}
	return nil
}

// pipelinerFor returns the store as a Pipeliner when the run pipelines,
// and nil when it does not.
func pipelinerFor(cfg *runConfig, store Store) (Pipeliner, error) {
	if cfg.pipeline <= 1 {
		return nil, nil
	}
	p, ok := store.(Pipeliner)
	if !ok {
		return nil, fmt.Errorf("-pipeline %d: engine %s opened a store that cannot pipeline; engines that can: %s", cfg.pipeline, cfg.engine, pipeliningEngines())
	}
	return p, nil
}

// pipeState is a pipelining client's batch, made once, before the timed
// region, so the timed loop allocates nothing. Not safe for concurrent
// use: it belongs to one worker.
type pipeState struct {
	p     Pipeliner
	batch []PipeOp      // the batch being sent; capacity -pipeline
	start time.Duration // when the batch started to be sent, on the worker's clock
	end   time.Duration // when the last reply so far was read
	// replied records batch[i]'s latency, start to now (Pipeline's
	// callback, made once).
	replied func(i int, found bool)
}

// newPipeState makes w's batch for pipelining through p.
func (w *worker) newPipeState(p Pipeliner) *pipeState {
	ps := &pipeState{p: p, batch: make([]PipeOp, 0, w.cfg.pipeline)}
	ps.replied = func(i int, found bool) {
		switch ps.batch[i].Kind {
		case OpPut:
			ps.end = w.done(w.put, nil, ps.start, 0)
		case OpGet:
			w.gets++
			if found {
				w.hits++
			}
			ps.end = w.done(w.get, nil, ps.start, 0)
		case OpDelete:
			ps.end = w.done(w.del, nil, ps.start, 0)
		}
	}
	return ps
}

// loopPipelined is loop for a pipelining client: n units from plan
// position from, -pipeline at a time, each batch one Pipeline call.
// Each request's latency is recorded as its reply is read, from its
// batch's start (the file comment says why).
func (w *worker) loopPipelined(r *run, keys keyTable, from, n int64, deadline time.Duration) {
	ps := w.pipe
	order := w.plan.order
	pos := int(from % int64(len(order)))
	for i := int64(0); i < n; {
		if r.stop.Load() {
			return
		}
		// Assembling the batch (N slice headers, nothing allocated
		// unless -dishonest-time-keygen asks) counts as sending it.
		ps.start = w.clk.now()
		ps.batch = ps.batch[:0]
		for ; i < n && len(ps.batch) < cap(ps.batch); i, pos = i+1, pos+1 {
			if pos == len(order) {
				pos = 0
			}
			key := keys.key(order[pos])
			val := w.plan.value(int(i), w.cfg.valueSize)
			if w.cfg.dishonest.timeKeygen {
				key, val = buildKeyValue(order[pos], val)
			}
			op := PipeOp{Kind: OpPut, Key: key, Value: val}
			switch {
			case w.step == stepGet, w.step == stepMixed && w.plan.isRead[pos%len(w.plan.isRead)]:
				op = PipeOp{Kind: OpGet, Key: key}
			case w.step == stepDelete:
				op = PipeOp{Kind: OpDelete, Key: key}
			}
			ps.batch = append(ps.batch, op)
		}
		if err := ps.p.Pipeline(ps.batch, ps.replied); err != nil {
			w.err = fmt.Errorf("%s %s: -pipeline %d: %w", w.cfg.engine, w.cfg.workload, w.cfg.pipeline, err)
			r.halt()
			return
		}
		w.units += int64(len(ps.batch))
		if deadline > 0 && ps.end > deadline {
			return
		}
	}
}
