package grader

import (
	"fmt"
	"math"
	"reflect"
	"strconv"
	"time"

	"kvlab/gohost"
	"kvlab/harness/calc"
)

const (
	throughputSig = "func Throughput(n int, tWrite, tFsync time.Duration) float64"
	slowPathSig   = "func P99OnSlowPath(n int) bool"
)

var batchModelExercise = &Exercise{
	Name:  "batch-model",
	Title: "The batch:N model",
	Instructions: `With ` + "`-sync batch:N`" + ` every N-th Put pays for an fdatasync and the others only for a write. N Puts take ` + "`N × T_write + T_fsync`" + `, so

` + "`throughput(N) = 1 / (T_write + T_fsync/N)`" + ` operations per second.

A fraction 1/N of the Puts is slow. Once that fraction reaches 1% the p99 lands among the slow ones: the p99 takes the slow path when ` + "`1/N >= 0.01`" + `.

Implement ` + "`" + throughputSig + "`" + ` (ops per second) and ` + "`" + slowPathSig + "`" + `. They are checked against the harness's own model.`,
	Stub: `package main

import "time"

// Throughput is the batch:n model's operations per second.
func Throughput(n int, tWrite, tFsync time.Duration) float64 {
	return 0
}

// P99OnSlowPath reports whether batch:n's p99 waits for an fdatasync.
func P99OnSlowPath(n int) bool {
	return false
}
`,
	Solution: `package main

import "time"

// Throughput is the batch:n model's operations per second.
func Throughput(n int, tWrite, tFsync time.Duration) float64 {
	perOp := tWrite.Seconds() + tFsync.Seconds()/float64(n)
	return 1 / perOp
}

// P99OnSlowPath reports whether batch:n's p99 waits for an fdatasync.
func P99OnSlowPath(n int) bool {
	return 1/float64(n) >= 0.01
}
`,
	grade: gradeBatchModel,
}

type modelInput struct {
	n              int
	tWrite, tFsync time.Duration
}

// modelInputs span the two figures this machine class shows (a write of
// about a microsecond, an fdatasync of 100-250 µs) and the p99 fork.
var modelInputs = []modelInput{
	{1, time.Microsecond, 200 * time.Microsecond},
	{8, time.Microsecond, 200 * time.Microsecond},
	{64, time.Microsecond, 200 * time.Microsecond},
	{100, 900 * time.Nanosecond, 150 * time.Microsecond},
	{1000, 900 * time.Nanosecond, 150 * time.Microsecond},
	{16, 2 * time.Microsecond, 5 * time.Millisecond},
}

var forkInputs = []int{1, 2, 64, 99, 100, 101, 128, 1000}

func gradeBatchModel(p *program) Result {
	tp, ce := p.Function("Throughput", (func(int, time.Duration, time.Duration) float64)(nil), throughputSig)
	if ce != nil {
		return Result{Error: ce}
	}
	slow, ce := p.Function("P99OnSlowPath", (func(int) bool)(nil), slowPathSig)
	if ce != nil {
		return Result{Error: ce}
	}
	var r Result
	for _, in := range modelInputs {
		pred, err := calc.Batch(in.n, float64(in.tWrite.Nanoseconds()), float64(in.tFsync.Nanoseconds()))
		if err != nil {
			panic("grader: model input rejected by calc.Batch: " + err.Error())
		}
		want := pred.PredictedOpsPerSec
		c := Case{
			Input: fmt.Sprintf("Throughput(%d, %v, %v)", in.n, in.tWrite, in.tFsync),
			Want:  fmtOps(want),
		}
		out, err := gohost.Call(tp, reflect.ValueOf(in.n), reflect.ValueOf(in.tWrite), reflect.ValueOf(in.tFsync))
		if err != nil {
			c.Got = err.Error()
			c.Hint = "Throughput panicked; it needs only arithmetic"
		} else {
			got := out[0].Float()
			c.Got = fmtOps(got)
			c.Pass = closeTo(got, want)
			if !c.Pass {
				c.Hint = throughputHint(in, got, want)
			}
		}
		r.Cases = append(r.Cases, c)
	}
	for _, n := range forkInputs {
		pred, err := calc.Batch(n, 1000, 100000)
		if err != nil {
			panic("grader: model input rejected by calc.Batch: " + err.Error())
		}
		want := pred.P99Path == calc.P99Slow
		c := Case{Input: fmt.Sprintf("P99OnSlowPath(%d)", n), Want: strconv.FormatBool(want)}
		out, err := gohost.Call(slow, reflect.ValueOf(n))
		if err != nil {
			c.Got = err.Error()
		} else {
			got := out[0].Bool()
			c.Got = strconv.FormatBool(got)
			c.Pass = got == want
		}
		if err != nil {
			c.Hint = "P99OnSlowPath panicked"
		} else if !c.Pass {
			if want {
				c.Hint = fmt.Sprintf("1/%d = %.4g ≥ 0.01: at least 1%% of the Puts wait for an fdatasync, so the p99 is one of them", n, 1/float64(n))
			} else {
				c.Hint = fmt.Sprintf("1/%d = %.4g < 0.01: fewer than 1%% of the Puts wait for an fdatasync, so the p99 is a fast one", n, 1/float64(n))
			}
		}
		r.Cases = append(r.Cases, c)
	}
	r.Passed = allPass(r.Cases)
	return r
}

func fmtOps(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) + " ops/s" }

// closeTo compares two throughputs with a relative tolerance that forgives
// the order of floating-point operations and nothing else.
func closeTo(got, want float64) bool {
	return math.Abs(got-want) <= 1e-6*math.Abs(want)
}

// throughputHint recognises the usual slips.
func throughputHint(in modelInput, got, want float64) string {
	tw, tf, n := in.tWrite.Seconds(), in.tFsync.Seconds(), float64(in.n)
	switch {
	case got == 0:
		return "Throughput returned 0: compute 1 / (T_write + T_fsync/N)"
	case closeTo(got*1e9, want) || closeTo(got*1e6, want) || closeTo(got*1e3, want):
		return "a time.Duration counts nanoseconds: use tWrite.Seconds() to get seconds, so the answer is per second"
	case closeTo(got, 1/(tw+tf)):
		return "every Put paid for a whole fdatasync: the fsync is shared by N Puts, T_fsync/N"
	case closeTo(got, 1/(tw*n+tf)):
		return "that is batches per second; each batch holds N Puts"
	case closeTo(got, 1/(tw+tf*n)):
		return "divide T_fsync by N, don't multiply"
	}
	return "throughput = 1 / (T_write + T_fsync/N), with both times in seconds"
}
