package lessons_test

import (
	"fmt"
	"hash/fnv"
	"math"
	"strconv"
	"strings"
	"time"

	"kvlab/internal/quiz"
)

// The second half of the measurement checker. SyntheticResults varies
// every field independently, so an answer that any real disk pins down
// by a law it cannot break still varies there: ops/s × mean latency is
// the thread count on every disk (Little's law), ops ÷ fsyncs under
// group commit is the thread count, always's ops/s does not grow with
// threads, and the mean of a latency distribution lies between its p50
// and its p99. LawfulResults builds results that keep those laws, as
// different disks would give them for the cell's own lines (their
// threads and sync policy), and LawProblem refuses an answer that comes
// out the same, within 2%, on every one of those disks: it was fixed by
// the lines and the laws, not measured.

// lawfulSets is how many synthetic disks an answer is evaluated on.
const lawfulSets = 8

// disk is one synthetic disk: its fdatasync and write costs and how
// heavy its latency tail is.
type disk struct {
	fsyncNs, writeNs float64
	tail             float64 // p99 ÷ mean
	p50              float64 // p50 ÷ mean, below 1
}

// unit is a number in [0, 1) drawn from the hash of key: FNV-1a, then
// splitmix64's finalizer, so keys that differ in their last byte give
// unrelated numbers.
func unit(key string) float64 {
	h := fnv.New64a()
	h.Write([]byte(key))
	x := h.Sum64()
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return float64(x>>11) / (1 << 53)
}

// diskK is synthetic disk k: costs spread log-uniformly over 20 µs to
// 20 ms (fdatasync) and 1 to 50 µs (write), a tail of 1.5 to 200.
func diskK(k int) disk {
	u := func(what string) float64 { return unit(fmt.Sprintf("disk|%d|%s", k, what)) }
	return disk{
		fsyncNs: 2e4 * math.Pow(1000, u("fsync")),
		writeNs: 1e3 * math.Pow(50, u("write")),
		tail:    1.5 * math.Pow(133, u("tail")),
		p50:     0.3 + 0.65*u("p50"),
	}
}

// lineShape is what the checker reads off a cell line: its sync policy
// and the thread count of each element of its result.
type lineShape struct {
	sync    string
	threads []int
	// pipeline is -pipeline: each thread keeps this many Puts in flight,
	// so the laws see threads x pipeline writers.
	pipeline int
	ops      float64
	seconds  float64
}

// shapeOf reads the flags the laws need off a run-spec line (the
// grammar is harness's; only these flags are read, and a value that does
// not parse keeps the default).
func shapeOf(line string) lineShape {
	sh := lineShape{sync: "always", threads: []int{1}, pipeline: 1, seconds: 1}
	words := strings.Fields(line)
	for i := 0; i+1 < len(words); i++ {
		flag, val := strings.TrimLeft(words[i], "-"), words[i+1]
		switch flag {
		case "sync":
			sh.sync = val
		case "threads":
			var ts []int
			for f := range strings.SplitSeq(val, ",") {
				if n, err := strconv.Atoi(f); err == nil && n > 0 {
					ts = append(ts, n)
				}
			}
			if len(ts) > 0 {
				sh.threads = ts
			}
		case "pipeline":
			if n, err := strconv.Atoi(val); err == nil && n > 0 {
				sh.pipeline = n
			}
		case "ops":
			if n, err := strconv.ParseFloat(val, 64); err == nil {
				sh.ops = n
			}
		case "duration":
			if d, err := time.ParseDuration(val); err == nil {
				sh.seconds, sh.ops = d.Seconds(), 0
			}
		}
	}
	return sh
}

// LawfulResults builds n result sets for q, one per synthetic disk, from
// the lines q reads (its cell's lines, or its run: lines). Every path the
// answer reads is planted as in SyntheticResults; then each result object
// of line L, element E, gets the fields the laws tie together, computed
// for line L's sync policy and element E's threads on that disk.
func LawfulResults(q *quiz.Quiz, lines []string, n int) ([][]any, error) {
	sets, err := SyntheticResults(q, n)
	if err != nil {
		return nil, err
	}
	for k, rs := range sets {
		for l, r := range rs {
			sh := lineShape{sync: "always", threads: []int{1}, pipeline: 1, seconds: 1}
			if l < len(lines) {
				sh = shapeOf(lines[l])
			}
			switch v := r.(type) {
			case map[string]any:
				lawful(v, diskK(k).varied(k, l, 0), sh, sh.threads[0])
			case []any:
				for e, el := range v {
					if m, ok := el.(map[string]any); ok {
						// A sweep's thread counts share a disk; its
						// engines, and a -repeat's rounds, are runs of
						// their own.
						group := e
						if len(sh.threads) > 1 {
							group = e / len(sh.threads)
						}
						lawful(m, diskK(k).varied(k, l, group), sh, sh.threads[e%len(sh.threads)])
					}
				}
			}
		}
	}
	return sets, nil
}

// varied is d as run (k, line, group) met it: the laws hold within one
// run, but two lines (other engines, value sizes, workloads, rounds) are
// not the same run, so their costs and tails differ by up to 2× either way.
func (d disk) varied(k, line, group int) disk {
	f := math.Pow(4, unit(fmt.Sprintf("run|%d|%d|%d", k, line, group))-0.5)
	d.fsyncNs *= f
	d.writeNs /= f
	d.tail = 1 + (d.tail-1)*f
	d.p50 = min(0.95, d.p50*math.Sqrt(f))
	return d
}

// lawful overwrites the law-bound fields present in one result object
// with their values for threads writers of policy sh.sync on disk d. A
// pipelining thread is sh.pipeline writers: that many of its Puts are in
// flight at once.
func lawful(m map[string]any, d disk, sh lineShape, threads int) {
	t := float64(threads * max(sh.pipeline, 1))
	// Throughput by policy: always does one Put (a write and its
	// fdatasync) at a time, whatever the threads; group's flush carries
	// the t writers' Puts; batch:N flushes every N Puts; none and
	// periodic are bound by the writes, on up to two cores.
	var opsPerSec, perFlush float64
	switch {
	case sh.sync == "group":
		opsPerSec, perFlush = t*1e9/(t*d.writeNs+d.fsyncNs), t
	case strings.HasPrefix(sh.sync, "batch:"):
		n, err := strconv.ParseFloat(strings.TrimPrefix(sh.sync, "batch:"), 64)
		if err != nil || n < 1 {
			n = 1
		}
		opsPerSec, perFlush = n*1e9/(n*d.writeNs+d.fsyncNs), n
	case sh.sync == "none" || strings.HasPrefix(sh.sync, "periodic:"):
		opsPerSec, perFlush = min(t, 2)*1e9/d.writeNs, math.Inf(1)
	default: // always
		opsPerSec, perFlush = 1e9/(d.writeNs+d.fsyncNs), 1
	}
	mean := t * 1e9 / opsPerSec // Little's law, closed loop
	ops := sh.ops
	if ops == 0 {
		ops = math.Round(opsPerSec * sh.seconds)
	}
	fsyncs := 0.0
	if !math.IsInf(perFlush, 1) {
		fsyncs = math.Ceil(ops / perFlush)
	}
	set := func(m map[string]any, key string, v float64) {
		if _, ok := m[key]; ok {
			m[key] = v
		}
	}
	set(m, "ops_per_sec", opsPerSec)
	set(m, "units_per_sec", opsPerSec)
	set(m, "ops", ops)
	set(m, "units", ops)
	set(m, "threads", float64(threads))
	set(m, "fsyncs", fsyncs)
	set(m, "wall_seconds", ops/opsPerSec)
	set(m, "fsync_mean_ns", d.fsyncNs)
	// Only the corrected latencies: how far the uncorrected ones fall
	// short depends on the backlog, which no law here fixes.
	for _, key := range []string{"latency"} {
		kinds, _ := m[key].(map[string]any)
		for _, v := range kinds {
			if s, ok := v.(map[string]any); ok {
				set(s, "count", ops)
				set(s, "mean_ns", mean)
				set(s, "p50_ns", mean*d.p50)
				set(s, "p95_ns", mean*(1+(d.tail-1)/3))
				set(s, "p99_ns", mean*d.tail)
				set(s, "p999_ns", mean*d.tail*1.5)
				set(s, "max_ns", mean*d.tail*3)
			}
		}
	}
}

// LawProblem returns why q's answer, computed from the lines it reads,
// comes out the same on every synthetic disk (see LawfulResults), or nil
// when it varies by more than 2%.
func LawProblem(q *quiz.Quiz, lines []string) error {
	sets, err := LawfulResults(q, lines, lawfulSets)
	if err != nil {
		return err
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, rs := range sets {
		v, err := q.Answer.Eval(rs)
		if err != nil {
			return fmt.Errorf("quiz %s: answer %q against lawful synthetic results: %v", q.ID, q.Answer, err)
		}
		if v.IsStr {
			return fmt.Errorf("quiz %s: answer %q gave the string %q, want a number", q.ID, q.Answer, v.Str)
		}
		lo, hi = min(lo, v.Num), max(hi, v.Num)
	}
	if hi-lo > 0.02*max(math.Abs(lo), math.Abs(hi)) {
		return nil
	}
	return fmt.Errorf("quiz %s: answer %q came out %s on each of %d synthetic disks whose flush and write costs and latency tails differ, for the cell's own threads and sync policy: the lines and laws every disk keeps (Little's law, one Put per flush under always, the mean between p50 and p99) fix it, not the measurement", q.ID, q.Answer, quiz.FormatNumber(lo), lawfulSets)
}

// AnswerProblemFor is AnswerProblem, then LawProblem for the lines q
// reads: its cell's lines (cellLines) or its run: lines.
func AnswerProblemFor(q *quiz.Quiz, cellLines []string) error {
	if err := AnswerProblem(q); err != nil {
		return err
	}
	lines := cellLines
	if q.Run != nil {
		lines = q.Run
	}
	return LawProblem(q, lines)
}
