package harness

import "time"

// What a parsed line will cost before it runs: how many runs it makes,
// how long it must take at the least, and how much memory it may hold.
// A server that runs lines for others (labserver serve) refuses a line
// whose cost does not fit its budget before anything runs.

// SubRuns is the number of runs the line makes: engines x thread counts x
// repeats for bench and sweep, one for the other commands.
func (s *Spec) SubRuns() int {
	switch s.Cmd {
	case "bench", "sweep":
		return len(s.Engines) * len(s.Threads) * s.Repeat
	}
	return 1
}

// MinTime is the least wall-clock time the line's measured part can take,
// known from the spec alone: the sum over its runs of -duration, or of
// -ops divided by -rate for an open loop. Preload, warmup and a closed
// loop's speed depend on the disk and are not counted, so the real time
// is at least this and often more; 0 when the spec alone bounds nothing.
func (s *Spec) MinTime() time.Duration {
	if s.Cmd != "bench" && s.Cmd != "sweep" {
		return 0
	}
	var per time.Duration
	switch {
	case s.Duration > 0:
		per = s.Duration
	case s.Rate > 0:
		per = time.Duration(float64(s.Ops) / s.Rate * float64(time.Second))
	}
	return per * time.Duration(s.SubRuns())
}

// Memory a store holds per distinct key, measured as the peak RSS growth
// of `bench -workload readrandom -ops 1 -value-size 0 -keys 500000` on
// Linux/amd64 (go1.25), rounded up: kv's in-memory hash index (about
// 330 B a key at its peak, as the map grows); bbolt's branch pages and
// freelist (its leaf pages are counted by value size below, since the
// file is mapped into memory); pebble's index and filter blocks (its
// memtable is the fixed cost).
var (
	memPerKey = map[string]int64{"kv": 400, "bbolt": 160, "pebble": 64, "null": 0, "drift": 0}
	// memFixed is what a store holds whatever the data: pebble's memtable
	// and caches.
	memFixed = map[string]int64{"pebble": 96 << 20}
	// memMapped says the store maps its file into memory, so every value
	// it holds is counted as resident (bbolt).
	memMapped = map[string]bool{"bbolt": true}
)

// memUnknownPerKey is assumed for an engine registered by a test or a
// course extension that the table above does not know.
const memUnknownPerKey = 512

// MemoryBytes estimates the most memory the line's runs hold at once, on
// top of the process itself: the key table (16 B a key), each worker's
// visiting order (4 B a unit, at most 4 Mi units a worker), the exact
// latency samples kept (8 B each, at most DefaultExactCap, twice over in
// an open loop, which also keeps the uncorrected latencies) and the
// store's own memory for the distinct keys it will hold. Runs of one line
// follow each other, so the largest run counts, not their sum. It is an
// estimate meant to err high: a line under it has been measured to stay
// under it.
func (s *Spec) MemoryBytes() int64 {
	if s.Cmd != "bench" && s.Cmd != "sweep" {
		return 0
	}
	keys := int64(s.Keys)
	var worst int64
	for _, engine := range s.Engines {
		for _, threads := range s.Threads {
			worst = max(worst, s.runMemory(engine, threads, keys))
		}
	}
	return worst
}

// runMemory is MemoryBytes for one run.
func (s *Spec) runMemory(engine string, threads int, keys int64) int64 {
	const keyTable = keyLen
	units := s.Ops
	if s.Duration > 0 {
		units = 1 << 30 // bounded by the sample cap and the order's cap below
	}
	perWorker := min(max(units/int64(threads), 1), 1<<22)
	order := 4 * perWorker * int64(threads)
	if wl, _ := lookupWorkload(s.Workload); wl.writer {
		order += 4 << 16
	}
	samples := 8 * min(units+s.Warmup, DefaultExactCap)
	if s.Rate > 0 {
		samples *= 2
	}
	perKey, ok := memPerKey[engine]
	if !ok {
		perKey = memUnknownPerKey
	}
	store := memFixed[engine] + perKey*keys
	if memMapped[engine] {
		store += 2 * keys * int64(keyLen+s.ValueSize) // pages are rarely full
	}
	return keyTable*keys + order + samples + store + s.inFlight(threads)
}

// pipelineCommandBytes is what one request costs beyond its key and value
// on the wire and once parsed: RESP's headers, the argument slices.
const pipelineCommandBytes = 64

// inFlight is the memory a pipelining run's requests in flight hold:
// threads x -pipeline commands, each whole in the server's memory
// (kvserver reads a batch before executing it; under -engine kvserver
// that is this process) and again in the buffers on the way. Without a
// pipeline one request per thread is in flight, which is not counted.
func (s *Spec) inFlight(threads int) int64 {
	if s.Pipeline <= 1 {
		return 0
	}
	return 2 * int64(threads) * int64(s.Pipeline) * int64(keyLen+s.ValueSize+pipelineCommandBytes)
}
