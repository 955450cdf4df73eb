package harness

import (
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// pipeStore is a mapStore that also pipelines: each batch is applied in
// order, and each reply comes perReply after the one before it, as from a
// server that answers a pipeline one request at a time. It records the
// size of every batch.
type pipeStore struct {
	*mapStore
	perReply time.Duration

	mu      sync.Mutex // guards batches
	batches []int
}

var lastPipeStore atomic.Pointer[pipeStore]

// pipeReplyDelay is the perReply of the next testpipe store opened.
var pipeReplyDelay atomic.Int64

func init() {
	RegisterEngine("testpipe", func(dir, sync string) (Store, error) {
		m, err := OpenEngine("testmap", dir, sync)
		if err != nil {
			return nil, err
		}
		s := &pipeStore{mapStore: m.(*mapStore), perReply: time.Duration(pipeReplyDelay.Load())}
		lastPipeStore.Store(s)
		return s, nil
	})
	MarkPipelining("testpipe")
}

func (s *pipeStore) Pipeline(batch []PipeOp, replied func(i int, found bool)) error {
	s.mu.Lock()
	s.batches = append(s.batches, len(batch))
	s.mu.Unlock()
	for i, op := range batch {
		time.Sleep(s.perReply)
		var found bool
		switch op.Kind {
		case OpPut:
			s.Put(op.Key, op.Value)
		case OpGet:
			_, found, _ = s.Get(op.Key)
		case OpDelete:
			s.Delete(op.Key)
		}
		replied(i, found)
	}
	return nil
}

// TestPipelineFlag: -pipeline N is printed back when N > 1, and refused,
// saying why and what is allowed, on an engine inside the process, with
// -rate, and on a workload whose requests cannot go out together.
func TestPipelineFlag(t *testing.T) {
	s, err := ParseSpec("bench -engine testpipe -pipeline 8 -ops 100", DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	if got := s.String(); !strings.Contains(got, " -pipeline 8") {
		t.Errorf("printed %q, want -pipeline 8 in it", got)
	}
	s, err = ParseSpec("bench -engine kv -pipeline 1 -ops 100", DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	if got := s.String(); strings.Contains(got, "pipeline") {
		t.Errorf("-pipeline 1 printed as %q, want it left out (1 is no pipelining, the default)", got)
	}
	for _, tt := range []struct{ line, want string }{
		{"bench -engine testpipe -pipeline 0", "-pipeline 0: must be between 1 and 1024"},
		{"bench -engine testpipe -pipeline 1025", "-pipeline 1025: must be between 1 and 1024"},
		{"bench -engine kv -pipeline 16", "-pipeline 16: engine kv is called inside this process"},
		{"bench -engine testpipe,null -pipeline 16", "engine null is called inside this process"},
		{"bench -engine kv -pipeline 16", "engines that pipeline: testpipe"},
		{"bench -engine testpipe -pipeline 4 -rate 100", "-pipeline 4 with -rate: an open loop starts each unit at its own intended time"},
		{"bench -engine testpipe -pipeline 4 -workload updaterandom", "-workload updaterandom cannot be pipelined: its Put of a key waits for the Get of it"},
		{"bench -engine testpipe -pipeline 4 -workload updaterandom", "workloads that can: fillseq, fillrandom, overwrite, readrandom, readwhilewriting, deleterandom, mixed"},
		{"bench -engine testpipe -pipeline 4 -workload fillbatch", "-workload fillbatch cannot be pipelined: its unit is already -batch requests"},
	} {
		if err := Check(tt.line, DefaultLimits()); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Check(%q) = %v, want an error containing %q", tt.line, err, tt.want)
		}
	}
}

// TestPipelinedRunSendsBatches: each client thread sends its share of the
// units -pipeline at a time (the last batch shorter), every request is
// recorded once, reads are counted as hits, and the result says the depth.
func TestPipelinedRunSendsBatches(t *testing.T) {
	pipeReplyDelay.Store(0)
	for _, tt := range []struct {
		line    string
		batches []int // sorted
		kind    string
	}{
		// 37 units over 2 threads: 19 and 18, in batches of 8.
		{"bench -engine testpipe -pipeline 8 -threads 2 -ops 37 -warmup 0", []int{2, 3, 8, 8, 8, 8}, "put"},
		{"bench -engine testpipe -pipeline 5 -threads 1 -ops 12 -warmup 0 -workload readrandom -keys 50", []int{2, 5, 5}, "get"},
		{"bench -engine testpipe -pipeline 4 -threads 1 -ops 8 -warmup 0 -workload deleterandom -keys 50", []int{4, 4}, "delete"},
	} {
		r := bench(t, tt.line)
		s := lastPipeStore.Load()
		got := slices.Sorted(slices.Values(s.batches))
		if !slices.Equal(got, tt.batches) {
			t.Errorf("%s: batch sizes %v, want %v", tt.line, got, tt.batches)
		}
		units := 0
		for _, n := range tt.batches {
			units += n
		}
		if l := r.Latency[tt.kind]; l == nil || l.Count != int64(units) || r.Units != int64(units) {
			t.Errorf("%s: latency %v, units %d, want %d %s samples and units", tt.line, r.Latency, r.Units, units, tt.kind)
		}
		if r.Pipeline == 0 || !strings.Contains(r.Spec, " -pipeline ") {
			t.Errorf("%s: result pipeline %d, spec %q; want the depth in both", tt.line, r.Pipeline, r.Spec)
		}
		if tt.kind == "get" && (r.HitRate == nil || *r.HitRate != 1) {
			t.Errorf("%s: hit rate %v, want 1 (every preloaded key found)", tt.line, r.HitRate)
		}
	}
	mixed := bench(t, "bench -engine testpipe -pipeline 6 -ops 60 -warmup 0 -workload mixed -keys 50")
	if g, p := mixed.Latency["get"], mixed.Latency["put"]; g == nil || p == nil || g.Count+p.Count != 60 {
		t.Errorf("mixed pipelined: get %v put %v, want 60 samples between them", g, p)
	}
}

// TestPipelinedLatencyFromBatchSend: a pipelined request's latency runs
// from its batch's send to its own reply. With replies 5 ms apart and 4
// requests a batch, the requests wait about 5, 10, 15 and 20 ms: not 5
// each (from the reply before), nor the batch's time divided by 4.
func TestPipelinedLatencyFromBatchSend(t *testing.T) {
	pipeReplyDelay.Store(int64(5 * time.Millisecond))
	defer pipeReplyDelay.Store(0)
	r := bench(t, "bench -engine testpipe -pipeline 4 -threads 1 -ops 8 -warmup 0")
	put := r.Latency["put"]
	if put.P50Ns < int64(10*time.Millisecond) || put.MaxNs < int64(20*time.Millisecond) {
		t.Errorf("put p50 %v, max %v; want at least 10 ms and 20 ms (the second and fourth replies of a batch)",
			time.Duration(put.P50Ns), time.Duration(put.MaxNs))
	}
}
