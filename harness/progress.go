package harness

import (
	"slices"
	"sync"
	"time"
)

// Progress is one "about once a second" event of a running line.
type Progress struct {
	Elapsed        time.Duration `json:"-"`
	ElapsedSeconds float64       `json:"elapsed_seconds"`
	Ops            int64         `json:"ops"`         // ops completed so far
	OpsPerSec      float64       `json:"ops_per_sec"` // in the last interval
	P50            int64         `json:"p50_ns"`      // of the last interval's recent ops
	P99            int64         `json:"p99_ns"`
	Engine         string        `json:"engine,omitempty"`
	Run            int           `json:"run,omitempty"` // which sub-run of a sweep/repeat/multi-engine line
	// Phase is "warmup" during a -until-steady warm-up, "" while measuring.
	Phase string `json:"phase,omitempty"`
	// Unit names what Ops counts when it is not ops: "keys" while a
	// script seeds the store, "units" (run calls) while it is measured;
	// "" for ops.
	Unit string `json:"unit,omitempty"`
}

// TimelinePoint is the throughput of one second of a run.
type TimelinePoint struct {
	Second    int     `json:"second"` // 1 for the first second
	Ops       int64   `json:"ops"`
	OpsPerSec float64 `json:"ops_per_sec"` // Ops over the interval's length
	// Seconds is the interval's length: about 1, except the last one,
	// which ends with the run and may be much shorter (and so noisier).
	Seconds float64 `json:"seconds"`
	// Phase marks the points of a -until-steady run: "warmup" in its
	// warmup_timeline, "measured" in its timeline; "" in any other run.
	Phase string `json:"phase,omitempty"`
	// P99Ns is the 99th percentile of the interval's recent latencies
	// (up to ringLen per client, as the progress events' p99), 0 when
	// no op ended in it: a stall shows as an interval with few ops and
	// a high p99, or none.
	P99Ns int64 `json:"p99_ns,omitempty"`
	// MaxNs is the slowest of them: one op that waited out a stall (an
	// election) is the interval's max even where it is too rare for its
	// p99.
	MaxNs int64 `json:"max_ns,omitempty"`
}

// progress watches the workers of one run from its own goroutine. It reads
// only their atomics (liveView), so it never slows them. Each tick it
// records a timeline point and calls the Progress callback, if any. The
// running p50/p99 come from the up to ringLen most recent latencies of
// each worker in that interval, not from every op.
type progress struct {
	workers []*worker
	tick    time.Duration
	engine  string
	report  func(Progress)

	mu       sync.Mutex // guards timeline, lastOps, lastAt and per
	timeline []TimelinePoint
	t0       time.Time
	lastOps  int64
	lastAt   time.Duration
	per      []int64 // each worker's done count at the last tick
	quit     chan struct{}
	finished chan struct{}
}

func startProgress(r *run, workers []*worker, tick time.Duration, engine string) *progress {
	if tick <= 0 {
		tick = time.Second
	}
	return &progress{workers: workers, tick: tick, engine: engine, report: r.cfg.progress,
		per: make([]int64, len(workers)), quit: make(chan struct{}), finished: make(chan struct{})}
}

// begin starts the ticking goroutine; t0 is the wall clock's start.
func (p *progress) begin(t0 time.Time) {
	p.t0 = t0
	go func() {
		defer close(p.finished)
		t := time.NewTicker(p.tick)
		defer t.Stop()
		for {
			select {
			case <-p.quit:
				return
			case now := <-t.C:
				p.sample(now.Sub(p.t0), true)
			}
		}
	}()
}

// end stops the goroutine, adds the last partial interval and returns the
// timeline.
func (p *progress) end(wall time.Duration) []TimelinePoint {
	close(p.quit)
	<-p.finished
	p.sample(wall, false)
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.timeline
}

// sample takes one look at the workers at elapsed time at.
func (p *progress) sample(at time.Duration, live bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var total int64
	var recent []int64
	for i, w := range p.workers {
		done := w.live.done.Load()
		total += done
		from := max(p.per[i], done-ringLen+1)
		for j := from + 1; j <= done; j++ {
			recent = append(recent, w.live.ring[j%ringLen].Load())
		}
		p.per[i] = done
	}
	dt := at - p.lastAt
	delta := total - p.lastOps
	if !live && delta == 0 {
		return // nothing happened since the last tick
	}
	pt := TimelinePoint{Second: len(p.timeline) + 1, Ops: delta, Seconds: dt.Seconds()}
	if dt > 0 {
		pt.OpsPerSec = float64(delta) / dt.Seconds()
	}
	slices.Sort(recent)
	pt.P99Ns = Percentile(recent, 99)
	if len(recent) > 0 {
		pt.MaxNs = recent[len(recent)-1]
	}
	p.timeline = append(p.timeline, pt)
	p.lastOps, p.lastAt = total, at
	if live && p.report != nil {
		p.report(Progress{
			Elapsed: at, ElapsedSeconds: at.Seconds(), Ops: total, OpsPerSec: pt.OpsPerSec,
			P50: Percentile(recent, 50), P99: Percentile(recent, 99), Engine: p.engine,
		})
	}
}
