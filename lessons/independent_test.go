package lessons_test

// The lessons' quizzes grade a student against a figure the quiz
// evaluator computes from the measured results. TestCellsRunAndQuizzesCheck
// answers each quiz with that figure, which alone would only show that the
// evaluator agrees with itself. So each quiz's answer is also computed
// here, in Go, from the result fields decoded into structs of this file
// (not through the evaluator's paths, nor through harness's types), and the
// two figures must agree.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"testing"

	"kvlab/internal/quiz"
)

// lat is one op kind's latency summary.
type lat struct {
	MeanNs float64 `json:"mean_ns"`
	P50Ns  float64 `json:"p50_ns"`
	P95Ns  float64 `json:"p95_ns"`
	P99Ns  float64 `json:"p99_ns"`
	MaxNs  float64 `json:"max_ns"`
	Start  []struct {
		P50Ns float64 `json:"p50_ns"`
	} `json:"start"`
}

// res is one result object: a bench, probe, model or crash result, with
// only the fields the quizzes read.
type res struct {
	OpsPerSec          float64        `json:"ops_per_sec"`
	UnitsPerSec        float64        `json:"units_per_sec"`
	WUPerSec           float64        `json:"wu_per_sec"` // a script line's units per second
	Ops                float64        `json:"ops"`
	Units              float64        `json:"units"`
	Fsyncs             float64        `json:"fsyncs"`
	WallSeconds        float64        `json:"wall_seconds"`
	FsyncMeanNs        float64        `json:"fsync_mean_ns"`
	FsyncP50Ns         float64        `json:"fsync_p50_ns"`
	Rate               float64        `json:"rate"`
	BacklogUnits       float64        `json:"backlog_units"`
	Latency            map[string]lat `json:"latency"`
	LatencyUncorrected map[string]lat `json:"latency_uncorrected"`
	PacerLag           struct {
		MeanNs float64 `json:"mean_ns"`
	} `json:"pacer_lag"`
	ServerLatency map[string]lat `json:"server_latency"`
	Pooled        *struct {
		Latency map[string]lat `json:"latency"`
	} `json:"pooled"`
	Model struct {
		MeasuredP99Path    string  `json:"measured_p99_path"`
		PredictedOpsPerSec float64 `json:"predicted_ops_per_sec"`
	} `json:"model"`
	Timeline []struct {
		OpsPerSec float64 `json:"ops_per_sec"`
	} `json:"timeline"`
	SteadyState struct {
		Reached    bool       `json:"reached"`
		Window     int        `json:"window_seconds"`
		Spread     float64    `json:"spread"`
		Tolerance  float64    `json:"tolerance"`
		LastWindow []struct{} `json:"last_window"`
	} `json:"steady_state"`
	Amplification struct {
		Write float64 `json:"write"`
		Space float64 `json:"space"`
		Read  float64 `json:"read"`
	} `json:"amplification"`
	DeviceIO struct {
		FlushesPerOp        float64 `json:"flushes_per_op"`
		BytesPerLogicalByte float64 `json:"device_bytes_per_logical_byte"`
		NetFlushesPerOp     float64 `json:"net_flushes_per_op"`
		NetBytesPerLogical  float64 `json:"net_device_bytes_per_logical_byte"`
	} `json:"device_io"`
	// replicated engines (lesson 12)
	Replication struct {
		Failover struct {
			ResumedAfterNs float64 `json:"resumed_after_ns"`
		} `json:"failover"`
	} `json:"replication"`
	Fanout struct {
		UnitP99Ns         float64 `json:"unit_p99_ns"`
		UnhedgedUnitP99Ns float64 `json:"unhedged_unit_p99_ns"`
	} `json:"fanout"`
	// model lines
	PredictedOpsPerSec float64 `json:"predicted_ops_per_sec"`
	// probe lines
	Methods []struct {
		P50Ns float64 `json:"p50_ns"`
	} `json:"methods"`
	Write          lat     `json:"write"`
	WriteFdatasync lat     `json:"write_fdatasync"`
	WriteNs        float64 `json:"write_ns"`
	FdatasyncNs    float64 `json:"fdatasync_ns"`
	// crash lines
	Writes    float64           `json:"writes"`
	LostAcked float64           `json:"lost_acked"`
	PerTrial  []json.RawMessage `json:"per_trial"`
	// crash -points lines
	CrashPoints struct {
		Points float64 `json:"points"`
	} `json:"crash_points"`
}

func (r res) put() lat { return r.Latency["put"] }

// line is one cell line's result: one object, or the array of a sweep or
// a -repeat.
type line struct {
	one  res
	many []res
}

func (l *line) UnmarshalJSON(b []byte) error {
	if b = bytes.TrimSpace(b); len(b) > 0 && b[0] == '[' {
		return json.Unmarshal(b, &l.many)
	}
	return json.Unmarshal(b, &l.one)
}

// at is element i of an array line; negative i counts from the end.
func (l line) at(i int) res {
	if i < 0 {
		i += len(l.many)
	}
	return l.many[i]
}

// lines is a cell's (or a run: quiz's) results, line by line.
type lines []line

// r is line i's object (for $i.field).
func (ls lines) r(i int) res { return ls[i].one }

func median(xs ...float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if n := len(s); n%2 == 1 {
		return s[n/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func choice(cond bool, yes, no float64) float64 {
	if cond {
		return yes
	}
	return no
}

// drift is the lowest over the highest of the first four seconds'
// throughput (of the first and last second in a shorter run).
func drift(r res) float64 {
	tl := r.Timeline
	if len(tl) >= 4 {
		return min(tl[0].OpsPerSec, tl[1].OpsPerSec, tl[2].OpsPerSec, tl[3].OpsPerSec) /
			max(tl[0].OpsPerSec, tl[1].OpsPerSec, tl[2].OpsPerSec, tl[3].OpsPerSec, 1)
	}
	first, last := tl[0].OpsPerSec, tl[len(tl)-1].OpsPerSec
	return min(first, last) / max(first, last, 1)
}

// orderRatio is the median ops/s of the timeline's seconds b over that
// of its seconds a (0-based): one order of an A/A test's runs.
// A timeline shorter than eight seconds (a cell scaled down) gives its
// last second over its first, as the quizzes do.
func orderRatio(r res, a, b []int) float64 {
	if tl := r.Timeline; len(tl) < 8 {
		return tl[len(tl)-1].OpsPerSec / max(tl[0].OpsPerSec, 1)
	}
	pick := func(idx []int) []float64 {
		var v []float64
		for _, i := range idx {
			v = append(v, r.Timeline[i].OpsPerSec)
		}
		return v
	}
	return median(pick(b)...) / max(median(pick(a)...), 1)
}

// fivePut99 are the put p99s of the first five runs of an array line.
func fivePut99(l line) []float64 {
	var p []float64
	for i := range 5 {
		p = append(p, l.at(i).put().P99Ns)
	}
	return p
}

// independent computes each lesson quiz's answer from the decoded results,
// as its answer: line says in words. Choice quizzes give the 1-based index.
var independent = map[string]func(ls lines) float64{
	"tail-ratio":       func(ls lines) float64 { return ls.r(0).put().P99Ns / ls.r(0).put().P50Ns },
	"mean-over-p50":    func(ls lines) float64 { return ls.r(0).put().MeanNs / max(ls.r(0).put().P50Ns, 1) },
	"max-vs-mean":      func(ls lines) float64 { return ls.r(0).put().MaxNs / ls.r(0).put().MeanNs },
	"kv-tail":          func(ls lines) float64 { return ls.r(1).put().P99Ns / max(ls.r(1).put().P50Ns, 1) },
	"harness-floor":    func(ls lines) float64 { return ls.r(1).put().P50Ns / max(ls.r(0).put().P50Ns, 1) },
	"keygen-inflation": func(ls lines) float64 { return ls.r(1).put().P50Ns / max(ls.r(0).put().P50Ns, 1) },
	"harness-ceiling":  func(ls lines) float64 { return ls.r(1).OpsPerSec / max(ls[0].at(2).OpsPerSec, 1) },
	"cold-start": func(ls lines) float64 {
		if ls.r(1).put().Start[0].P50Ns >= 2*ls.r(1).put().Start[9].P50Ns {
			return 2
		}
		return 1
	},
	"unsorted-p99":     func(ls lines) float64 { return ls.r(1).put().P99Ns / max(ls.r(0).put().P99Ns, 1) },
	"flush-vs-write":   func(ls lines) float64 { return ls.r(0).WriteFdatasync.MeanNs / max(ls.r(0).Write.MeanNs, 1) },
	"always-vs-batch":  func(ls lines) float64 { return ls.r(1).OpsPerSec / max(ls.r(0).OpsPerSec, 1) },
	"durability-bound": func(ls lines) float64 { return ls.r(0).FsyncMeanNs / max(ls.r(0).put().MeanNs, 1) },
	"engines-ratio": func(ls lines) float64 {
		a, b, c := ls[0].at(0).OpsPerSec, ls[0].at(1).OpsPerSec, ls[0].at(2).OpsPerSec
		return max(a, b, c) / max(min(a, b, c), 1)
	},
	"value-size-ops":  func(ls lines) float64 { return ls.r(0).OpsPerSec / max(ls.r(2).OpsPerSec, 1) },
	"value-size-mbps": func(ls lines) float64 { return ls.r(2).OpsPerSec * 65536 / max(ls.r(0).OpsPerSec*128, 1) },
	"model-by-hand":   func(ls lines) float64 { return 1e9 / (ls.r(0).WriteNs + ls.r(0).FdatasyncNs/16) },
	"predict-batch16": func(ls lines) float64 {
		return median(ls[0].at(0).OpsPerSec, ls[0].at(1).OpsPerSec, ls[0].at(2).OpsPerSec)
	},
	"fork-10":      func(ls lines) float64 { return choice(ls.r(0).Model.MeasuredP99Path == "slow", 2, 1) },
	"fork-100":     func(ls lines) float64 { return choice(ls.r(1).Model.MeasuredP99Path == "slow", 2, 1) },
	"fork-1000":    func(ls lines) float64 { return choice(ls.r(2).Model.MeasuredP99Path == "slow", 2, 1) },
	"periodic-p99": func(ls lines) float64 { return ls.r(0).FsyncP50Ns / max(ls.r(0).put().P99Ns, 1) },
	"loss-window":  func(ls lines) float64 { return ls.r(0).OpsPerSec * (0.010 + ls.r(0).FsyncMeanNs/1e9) },
	"miss-probe":   func(ls lines) float64 { return ls.r(1).OpsPerSec / max(ls.r(0).PredictedOpsPerSec, 1) },
	"cheapest-sync": func(ls lines) float64 {
		m := ls.r(0).Methods // rows 1, 3, 5, 7: the four methods overwriting 128 B
		x := m[7].P50Ns
		if x == 0 { // O_DIRECT refused
			x = 1e18
		}
		p := []float64{m[1].P50Ns, m[3].P50Ns, m[5].P50Ns, x}
		lo, hi := slices.Min(p), slices.Max(p)
		if hi <= 2*lo {
			return 5
		}
		return float64(slices.Index(p, lo) + 1)
	},
	"generator-floor": func(ls lines) float64 { return ls.r(0).put().P99Ns / 1000 },
	"poisson-knee": func(ls lines) float64 {
		for k := range 7 {
			r := ls.r(k)
			if r.put().MeanNs-r.PacerLag.MeanNs > 2*r.LatencyUncorrected["put"].MeanNs {
				return r.Rate
			}
		}
		return 2 * ls.r(6).Rate
	},
	"hockey-knee": func(ls lines) float64 {
		for k := range 5 {
			if r := ls.r(k); r.put().P99Ns > 2*r.LatencyUncorrected["put"].P99Ns {
				return float64(k + 1)
			}
		}
		return 6
	},
	"linear-wrong": func(ls lines) float64 { return 256 * ls[0].at(0).OpsPerSec / max(ls[0].at(8).OpsPerSec, 1) },
	"knee-threads": func(ls lines) float64 { return ls[0].at(8).FsyncMeanNs * ls[0].at(8).OpsPerSec / 1e9 },
	"flusher-busy": func(ls lines) float64 {
		r := ls[0].at(4)
		return r.Fsyncs * r.FsyncMeanNs / 1e9 / max(r.WallSeconds, 0.001)
	},
	"always-16": func(ls lines) float64 {
		r := ls[0].at(2)
		return r.Fsyncs * r.FsyncMeanNs / 1e9 / max(r.WallSeconds, 0.001)
	},
	"littles-latency": func(ls lines) float64 { return 8e6 / max(ls[0].at(3).OpsPerSec, 1) },
	"everysec-gain": func(ls lines) float64 {
		gain := ls.r(1).OpsPerSec / max(ls.r(0).OpsPerSec, 1)
		return choice(gain > 10, 3, choice(gain >= 2, 2, 1))
	},
	"kill-batch-share": func(ls lines) float64 { return ls.r(1).LostAcked / max(ls.r(1).Writes, 1) },
	"kill-none-buffered": func(ls lines) float64 {
		return ls.r(0).LostAcked / max(float64(len(ls.r(0).PerTrial)), 1)
	},
	"power-batch-share":   func(ls lines) float64 { return ls.r(1).LostAcked / max(ls.r(1).Writes, 1) },
	"power-none-vs-batch": func(ls lines) float64 { return ls.r(2).LostAcked / max(ls.r(1).LostAcked, 1) },
	"points-vs-moments": func(ls lines) float64 {
		perPoint := ls.r(1).LostAcked / max(ls.r(1).CrashPoints.Points, 1)
		return ls.r(3).LostAcked / max(float64(len(ls.r(3).PerTrial)), 1) / max(perPoint, 0.01)
	},
	"fsync-fail-loss": func(ls lines) float64 {
		a, b, p := ls.r(0).LostAcked, ls.r(1).LostAcked, ls.r(2).LostAcked
		switch {
		case p > max(a, b):
			return 3
		case b > a:
			return 2
		case a > 0:
			return 1
		}
		return 4
	},
	"headline-ratio": func(ls lines) float64 { return ls.r(0).OpsPerSec / max(ls.r(1).OpsPerSec, 1) },
	"dist-ratio":     func(ls lines) float64 { return ls.r(0).Latency["get"].P50Ns / max(ls.r(1).Latency["get"].P50Ns, 1) },
	"standby-ms":     func(ls lines) float64 { return ls.r(1).put().P50Ns / 1e6 },
	"standby-ratio":  func(ls lines) float64 { return ls.r(1).put().P50Ns / ls.r(0).put().P50Ns },
	"delay-ms":       func(ls lines) float64 { return (ls.r(1).put().P50Ns - ls.r(0).put().P50Ns) / 1e6 },
	"election-s":     func(ls lines) float64 { return ls.r(0).Replication.Failover.ResumedAfterNs / 1e9 },
	"hedge-tail":     func(ls lines) float64 { return ls.r(1).Fanout.UnitP99Ns / ls.r(1).Fanout.UnhedgedUnitP99Ns },
	"hop-us": func(ls lines) float64 {
		w := ls[0].at(1)
		return (w.put().P50Ns - w.ServerLatency["put"].P50Ns) / 1000
	},
	"hop-always-ratio":   func(ls lines) float64 { return ls[0].at(1).OpsPerSec / max(ls[0].at(0).OpsPerSec, 1) },
	"connections-gain":   func(ls lines) float64 { return ls[0].at(2).OpsPerSec / max(ls[0].at(0).OpsPerSec, 1) },
	"pipeline-gain":      func(ls lines) float64 { return ls.r(1).OpsPerSec / max(ls.r(0).OpsPerSec, 1) },
	"sqlite-vs-kv":       func(ls lines) float64 { return ls[0].at(1).OpsPerSec / max(ls[0].at(0).OpsPerSec, 1) },
	"sqlite-normal-gain": func(ls lines) float64 { return ls.r(1).OpsPerSec / max(ls.r(0).OpsPerSec, 1) },
	"amp-write-btree": func(ls lines) float64 {
		return ls[0].at(2).Amplification.Write / max(ls[0].at(0).Amplification.Write, 0.001)
	},
	"settle-held-back": func(ls lines) float64 {
		pebble := ls[0].at(1).SteadyState
		switch {
		case pebble.Reached:
			return 3
		case len(pebble.LastWindow) < pebble.Window:
			return 4
		case pebble.Spread > pebble.Tolerance:
			return 1
		}
		return 2
	},
	"wss-reads-per-get": func(ls lines) float64 { return ls.r(2).Amplification.Read },
	"wss-p50-ratio": func(ls lines) float64 {
		return ls.r(2).Latency["get"].P50Ns / max(ls.r(0).Latency["get"].P50Ns, 1)
	},
	"amp-space-log":         func(ls lines) float64 { return ls[1].at(0).Amplification.Space },
	"amp-read-log":          func(ls lines) float64 { return ls[2].at(0).Amplification.Read },
	"cold-p50":              func(ls lines) float64 { return ls.r(1).Latency["get"].P50Ns / max(ls.r(0).Latency["get"].P50Ns, 1) },
	"cold-p95":              func(ls lines) float64 { return ls.r(1).Latency["get"].P95Ns / max(ls.r(0).Latency["get"].P95Ns, 1) },
	"flush-share-of-budget": func(ls lines) float64 { return 1e9 / max(ls.r(0).WriteFdatasync.MeanNs, 1) },
	"steady-drift":          func(ls lines) float64 { return drift(ls.r(0)) },
	"background-drift":      func(ls lines) float64 { return drift(ls.r(0)) },
	"update-vs-fill":        func(ls lines) float64 { return ls.r(5).UnitsPerSec / max(ls.r(1).OpsPerSec, 1) },
	"batch-ops-ratio":       func(ls lines) float64 { return ls.r(1).OpsPerSec / max(ls.r(0).OpsPerSec, 1) },
	"cart-ops-per-unit":     func(ls lines) float64 { return ls[0].at(1).OpsPerSec / max(ls[0].at(1).WUPerSec, 1) },
	"cart-winner": func(ls lines) float64 {
		// The median wu/s of each engine over the three mirrored
		// rounds (cartOrder); the fastest, kv first on a tie.
		med := func(e string) float64 {
			var v []float64
			for i, name := range cartOrder {
				if name == e {
					v = append(v, ls[0].at(i).WUPerSec)
				}
			}
			return median(v...)
		}
		kv, pebble, sqlite := med("kv"), med("pebble"), med("sqlite")
		return choice(kv >= max(pebble, sqlite), 1, choice(pebble >= sqlite, 2, 3))
	},
	"batch-units-ratio": func(ls lines) float64 { return ls.r(1).UnitsPerSec / max(ls.r(0).UnitsPerSec, 1) },
	"median-change": func(ls lines) float64 {
		before, after := ls[0], ls[1]
		return median(after.at(0).OpsPerSec, after.at(1).OpsPerSec, after.at(2).OpsPerSec) /
			max(median(before.at(0).OpsPerSec, before.at(1).OpsPerSec, before.at(2).OpsPerSec), 1)
	},
	"separated-runs": func(ls lines) float64 {
		var fastestBefore, n float64
		for i := range 5 {
			fastestBefore = max(fastestBefore, ls[0].at(i).OpsPerSec)
		}
		for i := range 5 {
			n += choice(ls[1].at(i).OpsPerSec > fastestBefore, 1, 0)
		}
		return n
	},
	"bbolt-device-flushes": func(ls lines) float64 {
		return ls[0].at(1).DeviceIO.NetFlushesPerOp / max(ls[0].at(0).DeviceIO.NetFlushesPerOp, 0.001)
	},
	"zero-fill-from-the-disk": func(ls lines) float64 { return ls[2].at(0).DeviceIO.NetBytesPerLogical },
	"drift-block":             func(ls lines) float64 { return orderRatio(ls.r(0), []int{0, 1, 2, 3}, []int{4, 5, 6, 7}) },
	"drift-mirrored":          func(ls lines) float64 { return orderRatio(ls.r(0), []int{0, 3, 4, 7}, []int{1, 2, 5, 6}) },
	"p99-mean-vs-median": func(ls lines) float64 {
		p := fivePut99(ls[0])
		return (p[0] + p[1] + p[2] + p[3] + p[4]) / 5 / max(median(p...), 1)
	},
	"p99-pooled-vs-median": func(ls lines) float64 {
		return ls[0].at(-1).Pooled.Latency["put"].P99Ns / max(median(fivePut99(ls[0])...), 1)
	},
	"read-p50-spread": func(ls lines) float64 {
		a, b, c := ls[0].at(0).Latency["get"].P50Ns, ls[0].at(1).Latency["get"].P50Ns, ls[0].at(2).Latency["get"].P50Ns
		return max(a, b, c) / max(min(a, b, c), 1)
	},
	"gentle-utilization": func(ls lines) float64 { return ls.r(0).Rate * ls.r(0).LatencyUncorrected["put"].MeanNs / 1e9 },
	"gentle-correction": func(ls lines) float64 {
		return ls.r(0).put().P99Ns / max(ls.r(0).LatencyUncorrected["put"].P99Ns, 1)
	},
	"overload-hidden": func(ls lines) float64 { return ls.r(0).put().P99Ns / 1e9 / max(ls.r(0).WallSeconds, 0.001) },
	"overload-censored": func(ls lines) float64 {
		return ls.r(0).BacklogUnits / max(ls.r(0).Units+ls.r(0).BacklogUnits, 1)
	},
}

// compareIndependently computes q's answer from rs with its entry in
// independent and returns an error unless the evaluator's figure is the
// same (up to rounding).
func compareIndependently(q *quiz.Quiz, rs []any) error {
	f, ok := independent[q.ID]
	if !ok {
		return fmt.Errorf("quiz %s: no independent computation of its answer in independent_test.go: add one", q.ID)
	}
	raw, err := json.Marshal(rs)
	if err != nil {
		return err
	}
	var ls lines
	if err := json.Unmarshal(raw, &ls); err != nil {
		return fmt.Errorf("quiz %s: decoding the results into structs: %v", q.ID, err)
	}
	v, err := q.Answer.Eval(rs)
	if err != nil {
		return fmt.Errorf("quiz %s: %v", q.ID, err)
	}
	want := f(ls)
	if d := math.Abs(v.Num - want); d > 1e-9*math.Abs(want) && d > 1e-12 {
		return fmt.Errorf("quiz %s: the evaluator computes %v from %q, the result's fields give %v", q.ID, v.Num, q.Answer, want)
	}
	return nil
}

// TestEveryQuizHasAnIndependentAnswer: every quiz of the course has its
// answer computed here too, and nothing here is left over from a quiz
// that is gone.
func TestEveryQuizHasAnIndependentAnswer(t *testing.T) {
	seen := map[string]bool{}
	for _, l := range load(t) {
		for _, q := range l.Quizzes {
			seen[q.ID] = true
			if independent[q.ID] == nil {
				t.Errorf("%s: quiz %s has no independent computation of its answer in independent_test.go", l.Slug, q.ID)
			}
		}
	}
	for id := range independent {
		if !seen[id] {
			t.Errorf("independent_test.go computes quiz %s, which no lesson has", id)
		}
	}
	if len(seen) == 0 {
		t.Fatal("no quizzes loaded")
	}
}

// TestIndependentAnswerCatchesADifference: the comparison passes when the
// evaluator and the fields agree, and fails when they do not (an answer
// that reads p50 where the table reads p99).
func TestIndependentAnswerCatchesADifference(t *testing.T) {
	var r any
	if err := json.Unmarshal([]byte(`{"latency":{"put":{"p50_ns":10,"p99_ns":30}}}`), &r); err != nil {
		t.Fatal(err)
	}
	for answer, agree := range map[string]bool{
		"$0.latency.put.p99_ns / $0.latency.put.p50_ns": true,
		"$0.latency.put.p50_ns / $0.latency.put.p50_ns": false,
	} {
		q, err := quiz.Parse("id: tail-ratio\nquestion: ?\ncell: c\nanswer: " + answer + "\ntolerance: 5%")
		if err != nil {
			t.Fatal(err)
		}
		if err := compareIndependently(q, []any{r}); (err == nil) != agree {
			t.Errorf("answer %s: got %v, want agreement %v", answer, err, agree)
		}
	}
}
