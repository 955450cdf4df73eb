package quiz

import (
	"fmt"
	"strings"
)

// # A busy machine grades no prediction
//
// A prediction (predict: yes, predict: reason, a run: quiz) is graded
// against runs the reader did not see, made on their machine as it was
// then. When those runs' own conditions say another program held the
// processors or flushed to the same disk while they ran, the figure is
// that program's as much as the store's: two readers with the same right
// prediction, minutes apart, would get opposite verdicts (the band check
// at load 10–23 with a writer on the disk found eight such quizzes, each
// reader's rounds agreeing among themselves). Lesson 8 teaches to read
// the conditions before the number; the judge does too. Such runs grade
// no prediction: the reply says the machine was busy, and why, and
// neither right nor wrong (Feedback.TooNoisy, Feedback.Busy), as it does
// for rounds that spread wider than the band. A quiz that asks for a
// figure of the reader's own run is graded on that run whatever the
// conditions: nothing about it is left to chance.
//
// The conditions are those every bench result carries (docs/api.md):
//
//   - load_avg, the 1-minute load average when the run started, against
//     cpu.cores: from BusyLoadPerCore runnable tasks per core, a run
//     waits for a processor longer than it runs;
//   - device_io.idle_flush_requests, the flushes the device completed in
//     the idle baseline just before the run, when nothing of the run was
//     writing: from BusyOtherFlushes, another program was flushing to
//     the disk the run measures.

// BusyLoadPerCore is the load average per core at a run's start from
// which a prediction graded on it is not graded.
const BusyLoadPerCore = 2.0

// BusyOtherFlushes is how many flushes another program made in a run's
// idle baseline from which a prediction graded on it is not graded.
const BusyOtherFlushes = 1

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
	if c.loaded > 0 {
		why = append(why, fmt.Sprintf("the load average was up to %.1f on %.0f cores (%d of %d runs from %.0f a core)", c.maxLoad, c.cores, c.loaded, c.runs, BusyLoadPerCore))
	}
	if c.flushed > 0 {
		why = append(why, fmt.Sprintf("another program flushed to the disk just before %d of %d runs (up to %.0f flushes in %.0f ms of idle time)", c.flushed, c.runs, c.maxFlushes, c.idleMs))
	}
	return strings.Join(why, "; ")
}

// busyCount tallies the conditions of the results Busy walks.
type busyCount struct {
	runs, loaded, flushed int
	maxLoad, cores        float64
	maxFlushes, idleMs    float64
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

// add counts one result's conditions: a bench result's (a probe, a
// model or a crash result carries none of them).
func (c *busyCount) add(r map[string]any) {
	if r["kind"] != "bench" {
		return
	}
	c.runs++
	load, _ := r["load_avg"].(float64)
	cpu, _ := r["cpu"].(map[string]any)
	if cores, _ := cpu["cores"].(float64); cores > 0 && load >= BusyLoadPerCore*cores {
		c.loaded++
		if load > c.maxLoad {
			c.maxLoad, c.cores = load, cores
		}
	}
	dev, _ := r["device_io"].(map[string]any)
	if f, ok := dev["idle_flush_requests"].(float64); ok && f >= BusyOtherFlushes {
		c.flushed++
		if f > c.maxFlushes {
			c.maxFlushes, c.idleMs = f, 0
			c.idleMs, _ = dev["idle_ms"].(float64)
		}
	}
}
