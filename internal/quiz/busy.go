package quiz

import (
	"fmt"
	"strings"
)

// # A busy machine grades no prediction
//
// A prediction (predict: yes, predict: reason, a run: quiz) is graded
// against runs the reader did not see, made on their machine as it was
// then. When those runs' own conditions say other programs held the
// processors or wrote to the same disk while they ran, the figure is
// those programs' as much as the store's: two readers with the same
// right prediction, minutes apart, would get opposite verdicts (the band
// check at load 7–23 with a writer on the disk found eight such
// quizzes, each reader's rounds agreeing among themselves). Lesson 8
// teaches to read the conditions before the number; the judge does too.
// Such runs grade no prediction: the reply says the machine was busy,
// and why, and neither right nor wrong (Feedback.TooNoisy,
// Feedback.Busy), as it does for rounds that spread wider than the band.
// A quiz that asks for a figure of the reader's own run is graded on that
// run whatever the conditions: nothing about it is left to chance.
//
// The conditions are the idle baseline's, which every bench result and
// every probe line's result on a disk of its own carries (docs/api.md):
// the harness sits idle before each run's store opens (200 ms, or the
// run's -duration up to 1 s) and reads what the machine did without it:
//
//   - cpu.idle_busy_fraction, the share of the processors other programs
//     used: from BusyOtherCPU, they held a quarter of the machine or
//     more (on two cores, half of one). A quiet machine shows 0–10 %
//     (413 of 422 runs of a band check); its 9 runs at 23–48 % (the
//     test's database servers starting beside lesson 1) gave p99/p50
//     ratios of 10.5 and 12.9 where the quiet rounds gave 1.7–2.7;
//   - device_io.idle_write_bytes and idle_flush_requests over idle_ms:
//     from BusyOtherWriteBytesPerSec or BusyOtherFlushesPerSec, another
//     program was streaming writes or flushing to the disk the run
//     measures. A journal's commit every few seconds stays below them
//     (one flush in a 200 ms baseline is 5 a second), and the page
//     cache's backlog, an earlier run's writes the kernel sends to the
//     disk when it pleases, is written back before the baseline starts
//     (device_io.writeback_ms), so it is not taken for another writer.
const (
	BusyOtherCPU              = 0.25
	BusyOtherWriteBytesPerSec = 4 << 20
	BusyOtherFlushesPerSec    = 10
)

// Busy says why the results of a run or of rounds (each results[N] the
// decoded JSON of a line, a result or an array of them) were measured on
// a machine too busy to grade a prediction on them, or "" when they were
// not.
func Busy(results ...[]any) string {
	var c busyCount
	for _, rs := range results {
		c.walk(rs)
	}
	var why []string
	if c.cpuBusy > 0 {
		why = append(why, fmt.Sprintf("other programs held up to %.0f%% of the processors just before %d of %d runs", 100*c.maxCPU, c.cpuBusy, c.runs))
	}
	if c.diskBusy > 0 {
		why = append(why, fmt.Sprintf("another program was writing to the disk just before %d of %d runs (up to %.1f MB/s and %.0f flushes/s)", c.diskBusy, c.runs, c.maxBytes/1e6, c.maxFlushes))
	}
	return strings.Join(why, "; ")
}

// busyCount tallies the conditions of the results Busy walks.
type busyCount struct {
	runs, cpuBusy, diskBusy      int
	maxCPU, maxBytes, maxFlushes float64
}

func (c *busyCount) walk(v any) {
	switch x := v.(type) {
	case []any:
		for _, e := range x {
			c.walk(e)
		}
	case map[string]any:
		c.add(x)
	}
}

// add counts one result's conditions: a bench result's, or a probe
// line's (whose cpu names the processor model, and cpu_use holds its
// time); a model or a crash result carries none of them.
func (c *busyCount) add(r map[string]any) {
	cpuKey := "cpu"
	switch r["kind"] {
	case "bench":
	case "probe":
		cpuKey = "cpu_use"
		if r[cpuKey] == nil && r["device_io"] == nil {
			return // a bench run's own conditions probe, or an older line's
		}
	default:
		return
	}
	c.runs++
	cpu, _ := r[cpuKey].(map[string]any)
	if f, ok := cpu["idle_busy_fraction"].(float64); ok && f >= BusyOtherCPU {
		c.cpuBusy++
		c.maxCPU = max(c.maxCPU, f)
	}
	dev, _ := r["device_io"].(map[string]any)
	ms, _ := dev["idle_ms"].(float64)
	if ms <= 0 {
		return
	}
	bytes, _ := dev["idle_write_bytes"].(float64)
	flushes, _ := dev["idle_flush_requests"].(float64)
	bps, fps := bytes/(ms/1000), flushes/(ms/1000)
	if bps >= BusyOtherWriteBytesPerSec || fps >= BusyOtherFlushesPerSec {
		c.diskBusy++
		c.maxBytes, c.maxFlushes = max(c.maxBytes, bps), max(c.maxFlushes, fps)
	}
}
