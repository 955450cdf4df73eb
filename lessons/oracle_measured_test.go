package lessons_test

import (
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"strings"

	"kvlab/internal/lesson"
	"kvlab/internal/quiz"
)

// The measurement checker: a quiz graded "by measurement" must be able to
// come out differently on a different disk. AnswerProblem refuses a quiz
// whose answer
//
//  1. reads no measured field: one whose value comes from a clock on this
//     machine (latencies, rates, fsync counts, the model's figures fed by
//     them; see MeasuredField) rather than from the run's own spec (ops,
//     units, count, threads, keys) or from an invariant the engine keeps
//     on every disk (a crash test's lost, which must be 0); or
//  2. comes out the same for every one of a set of synthetic results that
//     differ from each other in every numeric field (SyntheticResults): an
//     answer like "count - count*99/100", or one whose measured part
//     cancels out, is the same whatever was measured.
//
// The two checks catch different mistakes: a ratio of two spec fields
// (ops/units) changes with synthetic values but reads nothing measured; an
// answer such as "$0.ops_per_sec * 0" reads a measured field and never
// changes.

// measuredFields are the measured result fields whose names do not end in
// "_ns" (every *_ns field is a time measured here, or a model figure fed
// by one).
var measuredFields = map[string]bool{
	// bench
	"ops_per_sec": true, "units_per_sec": true, "wall_seconds": true,
	"fsyncs": true, "utilization": true, "backlog_units": true,
	// a workload script's line: its units (run calls) per second
	"wu_per_sec": true,
	// a bench result's model, fed by the run's own costs and rate
	"predicted_ops_per_sec": true, "measured_p99_path": true,
	"loss_window_writes": true, "loss_window_ms": true, "write_rate": true,
	// timeline points
	"seconds": true,
	// crash: how far the writers got before the crash, and what came back
	"writes": true, "durable_acked": true, "recovered": true, "lost_acked": true,
	// a bench result's device_io: what this machine's disk counted (a
	// write-through disk counts no flushes, a journal adds writes)
	"write_requests": true, "write_bytes": true, "read_requests": true, "read_bytes": true,
	"flush_requests": true, "write_requests_per_op": true, "flushes_per_op": true,
	"device_bytes_per_logical_byte": true, "busy_ms": true, "busy_fraction": true,
	"queue_ms": true, "mean_in_flight": true,
	// and the same net of the idle baseline taken just before the run
	"net_write_requests": true, "net_write_bytes": true, "net_flush_requests": true,
	"net_write_requests_per_op": true, "net_flushes_per_op": true, "net_device_bytes_per_logical_byte": true,
	"idle_write_requests": true, "idle_flush_requests": true, "idle_write_bytes": true,
	// a bench result's amplification: bytes the engine or the device
	// wrote, bytes on disk, device reads per Get
	"write": true, "space": true, "read": true,
	// a -until-steady result's steady_state: when and how level it settled
	"reached": true, "at_second": true, "spread": true, "warmup_seconds": true,
}

// MeasuredField reports whether a result field (the last field name of a
// $path) holds a value measured on this machine.
func MeasuredField(name string) bool {
	return strings.HasSuffix(name, "_ns") || measuredFields[name]
}

// stringFields are result fields that hold text; the synthetic results
// give the two path fields both of their values and the others one fixed
// value each.
var stringFields = map[string][]string{
	"measured_p99_path": {"slow", "fast"},
	"p99_path":          {"slow", "fast"},
	"kind":              {"bench"}, "spec": {"bench"}, "engine": {"kv"}, "sync": {"always"},
	"workload": {"fillrandom"}, "dist": {"uniform"}, "t_fsync_source": {"run"},
	"fsync_p50_source": {"run_p50"}, "rate_source": {"run"}, "sync_call": {"fdatasync"},
	"fs": {"ext4"}, "device": {"vda"}, "source": {"probe"}, "host": {"h"}, "cpu": {"c"},
	"kernel": {"k"}, "os": {"linux/amd64"}, "go": {"go"}, "dir": {"/tmp"},
}

// syntheticSets is how many synthetic result sets an answer is evaluated
// against; syntheticLen is the length of every array in them (longer when
// an answer indexes further).
const (
	syntheticSets = 8
	syntheticLen  = 8
)

// SyntheticResults builds n (at most 16) result sets holding every path the
// quiz's answer reads. Set k's numeric leaves are spread log-uniformly over
// 16 to 1.6e10 by a hash of (k, path), and each is k modulo 16, so any two
// sets differ in every numeric field; the slow/fast path fields alternate
// between sets. An error says which paths cannot be built together (one
// reads a line as an object, another as an array).
func SyntheticResults(q *quiz.Quiz, n int) ([][]any, error) {
	refs := q.Answer.Refs()
	length := syntheticLen
	for _, r := range refs {
		for _, st := range r.Steps {
			if st.IsIndex {
				length = max(length, st.Index+1, -st.Index)
			}
		}
	}
	lines := q.Lines()
	sets := make([][]any, n)
	for k := range sets {
		rs := make([]any, lines)
		for _, r := range refs {
			root := &rs[r.Line]
			if err := plant(root, r, 0, fmt.Sprintf("$%d", r.Line), k, length); err != nil {
				return nil, fmt.Errorf("quiz %s: %v", q.ID, err)
			}
		}
		sets[k] = rs
	}
	return sets, nil
}

// plant makes *slot hold a structure in which r's steps from i on lead to
// a leaf, creating objects and arrays as the steps need them.
func plant(slot *any, r quiz.Ref, i int, walked string, k, length int) error {
	if i == len(r.Steps) {
		if *slot != nil {
			return nil // another path made it already
		}
		*slot = leaf(r, walked, k, length)
		return nil
	}
	st := r.Steps[i]
	if st.IsIndex {
		if *slot == nil {
			*slot = make([]any, length)
		}
		arr, ok := (*slot).([]any)
		if !ok {
			return fmt.Errorf("%s: %s is read both as an array and as something else", r.Text, walked)
		}
		idx := st.Index
		if idx < 0 {
			idx += len(arr)
		}
		return plant(&arr[idx], r, i+1, fmt.Sprintf("%s[%d]", walked, idx), k, length)
	}
	if *slot == nil {
		*slot = map[string]any{}
	}
	obj, ok := (*slot).(map[string]any)
	if !ok {
		return fmt.Errorf("%s: %s is read both as an object and as something else", r.Text, walked)
	}
	v := obj[st.Key]
	err := plant(&v, r, i+1, walked+"."+st.Key, k, length)
	obj[st.Key] = v
	return err
}

// leaf is the synthetic value of one path in set k.
func leaf(r quiz.Ref, path string, k, length int) any {
	if r.Len {
		arr := make([]any, length)
		for j := range arr {
			arr[j] = map[string]any{}
		}
		return arr
	}
	if vals, ok := stringFields[r.Field()]; ok {
		return vals[k%len(vals)]
	}
	h := fnv.New64a()
	fmt.Fprintf(h, "%d|%s", k, path)
	u := float64(h.Sum64()>>11) / (1 << 53) // [0, 1)
	return 16*math.Round(math.Pow(10, 9*u)) + float64(k%16)
}

// AnswerProblem returns why q's answer does not depend on a measurement,
// or nil when it does. See the comment at the top of this file.
func AnswerProblem(q *quiz.Quiz) error {
	refs := q.Answer.Refs()
	var read []string
	measured := false
	for _, r := range refs {
		f := r.Field()
		if MeasuredField(f) {
			measured = true
		}
		if !slices.Contains(read, f) {
			read = append(read, f)
		}
	}
	if !measured {
		return fmt.Errorf("quiz %s: answer %q reads no measured field (it reads %s): it is the same on every disk; read a latency (*_ns), a rate (ops_per_sec), fsyncs or another field measured here", q.ID, q.Answer, strings.Join(read, ", "))
	}
	sets, err := SyntheticResults(q, syntheticSets)
	if err != nil {
		return err
	}
	var first float64
	for k, rs := range sets {
		v, err := q.Answer.Eval(rs)
		if err != nil {
			return fmt.Errorf("quiz %s: answer %q against synthetic results: %v", q.ID, q.Answer, err)
		}
		if v.IsStr {
			return fmt.Errorf("quiz %s: answer %q gave the string %q, want a number", q.ID, q.Answer, v.Str)
		}
		if k == 0 {
			first = v.Num
		} else if v.Num != first {
			return nil
		}
	}
	return fmt.Errorf("quiz %s: answer %q came out %s for %d synthetic result sets that differ in every measured field: it does not depend on the measurement", q.ID, q.Answer, quiz.FormatNumber(first), syntheticSets)
}

// PredictionCount is one chapter's count of prediction quizzes.
type PredictionCount struct {
	Slug        string
	Predictions int // quizzes answered before the measurement: predict: yes or run:
	Quizzes     int
}

// AtLeastHalf reports whether half or more of the chapter's quizzes are
// predictions (true for a chapter with no quizzes).
func (c PredictionCount) AtLeastHalf() bool { return 2*c.Predictions >= c.Quizzes }

func (c PredictionCount) String() string {
	return fmt.Sprintf("%s: %d of %d quizzes are predictions", c.Slug, c.Predictions, c.Quizzes)
}

// CountPredictions counts, per lesson in the order given, the quizzes
// that are predictions (quiz.Quiz.IsPrediction).
func CountPredictions(ls []*lesson.Lesson) []PredictionCount {
	out := make([]PredictionCount, 0, len(ls))
	for _, l := range ls {
		c := PredictionCount{Slug: l.Slug, Quizzes: len(l.Quizzes)}
		for _, q := range l.Quizzes {
			if q.IsPrediction() {
				c.Predictions++
			}
		}
		out = append(out, c)
	}
	return out
}
