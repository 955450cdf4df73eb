package kvserver

import (
	"bytes"
	"fmt"
	"slices"
	"sync"
	"time"

	"kvlab/harness"
)

// maxSamples bounds the exact latencies kept per command between two
// CONFIG RESETSTATs (8 MB each); past it, the percentiles are those of the
// first maxSamples calls, and INFO says so (latency_samples_capped_CMD).
const maxSamples = 1 << 20

// cmdStats is the server-side time of each data command since the last
// reset. It is safe for concurrent use.
type cmdStats struct {
	mu  sync.Mutex // guards cmd
	cmd map[string]*cmdTimes
}

// cmdTimes is one command's record.
type cmdTimes struct {
	calls   int64
	total   time.Duration
	samples []int64 // ns, the first maxSamples calls
}

// statsOrder is the order INFO lists the commands in.
var statsOrder = []string{"set", "get", "del", "mset", "mget", "exists"}

func newCmdStats() *cmdStats { return &cmdStats{cmd: map[string]*cmdTimes{}} }

func (s *cmdStats) record(name string, d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.cmd[name]
	if t == nil {
		t = &cmdTimes{}
		s.cmd[name] = t
	}
	t.calls++
	t.total += d
	if len(t.samples) < maxSamples {
		t.samples = append(t.samples, int64(d))
	}
}

func (s *cmdStats) reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.cmd)
}

// each calls fn for every command with calls since the reset, in INFO's
// order, holding the lock.
func (s *cmdStats) each(fn func(name string, t *cmdTimes)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, name := range statsOrder {
		if t := s.cmd[name]; t != nil {
			fn(name, t)
		}
	}
}

// commandstats writes Redis's INFO commandstats lines.
func (s *cmdStats) commandstats(b *bytes.Buffer) {
	s.each(func(name string, t *cmdTimes) {
		fmt.Fprintf(b, "cmdstat_%s:calls=%d,usec=%d,usec_per_call=%.2f,rejected_calls=0,failed_calls=0\r\n",
			name, t.calls, t.total.Microseconds(), float64(t.total.Nanoseconds())/1e3/float64(t.calls))
	})
}

// latencystats writes Redis 7's INFO latencystats lines: nearest-rank
// percentiles (harness.Percentile) in microseconds with three decimals.
func (s *cmdStats) latencystats(b *bytes.Buffer) {
	s.each(func(name string, t *cmdTimes) {
		sorted := slices.Clone(t.samples)
		slices.Sort(sorted)
		us := func(p float64) float64 { return float64(harness.Percentile(sorted, p)) / 1e3 }
		fmt.Fprintf(b, "latency_percentiles_usec_%s:p50=%.3f,p99=%.3f,p99.9=%.3f\r\n", name, us(50), us(99), us(99.9))
		if int64(len(t.samples)) < t.calls {
			fmt.Fprintf(b, "latency_samples_capped_%s:%d\r\n", name, len(t.samples))
		}
	})
}
