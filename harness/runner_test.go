package harness

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestThroughputIsOpsOverWallClock(t *testing.T) {
	for _, line := range []string{
		"bench -engine null -ops 20000",
		"bench -engine null -ops 20000 -threads 3",
		"bench -engine testmap -workload updaterandom -ops 3000 -threads 2",
		"bench -engine testmap -workload readwhilewriting -ops 3000",
	} {
		t.Run(line, func(t *testing.T) {
			r := bench(t, line)
			if r.WallSeconds <= 0 {
				t.Fatalf("wall_seconds = %v, want > 0", r.WallSeconds)
			}
			if got, want := r.OpsPerSec, float64(r.Ops)/r.WallSeconds; math.Abs(got-want) > 1e-9*want {
				t.Errorf("ops_per_sec = %v, want ops/wall_seconds = %v", got, want)
			}
			if got, want := r.UnitsPerSec, float64(r.Units)/r.WallSeconds; math.Abs(got-want) > 1e-9*want {
				t.Errorf("units_per_sec = %v, want units/wall_seconds = %v", got, want)
			}
			var sum int64
			for _, s := range r.Latency {
				sum += s.Count
			}
			if sum != r.Ops {
				t.Errorf("latency counts sum to %d, want ops = %d", sum, r.Ops)
			}
			var tl int64
			for _, p := range r.Timeline {
				tl += p.Ops
			}
			if tl != r.Ops {
				t.Errorf("timeline ops sum to %d, want ops = %d", tl, r.Ops)
			}
		})
	}
}

func TestUnitsAndOpsPerWorkload(t *testing.T) {
	tests := []struct {
		line           string
		units, ops     int64 // ops -1: at least units
		kinds          []string
		wantHitRateOne bool
	}{
		{"bench -engine testmap -workload fillseq -ops 500", 500, 500, []string{"put"}, false},
		{"bench -engine testmap -workload fillrandom -ops 500", 500, 500, []string{"put"}, false},
		{"bench -engine testmap -workload overwrite -ops 500", 500, 500, []string{"put"}, false},
		{"bench -engine testmap -workload readrandom -ops 500", 500, 500, []string{"get"}, true},
		{"bench -engine testmap -workload deleterandom -ops 500", 500, 500, []string{"delete"}, false},
		{"bench -engine testmap -workload updaterandom -ops 500", 500, 1000, []string{"get", "put"}, true},
		{"bench -engine testmap -workload fillbatch -ops 500", 500, 8000, []string{"put"}, false},
		{"bench -engine testmap -workload fillbatch -batch 3 -ops 500 -threads 2", 500, 1500, []string{"put"}, false},
		{"bench -engine testmap -workload mixed -ops 500", 500, 500, []string{"get", "put"}, true},
		// The writer's Puts count as ops, but how many it gets in is a race.
		{"bench -engine testmap -workload readwhilewriting -ops 500", 500, -1, []string{"get"}, true},
		{"bench -engine testmap -workload readrandom -ops 500 -dist zipfian", 500, 500, []string{"get"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.line, func(t *testing.T) {
			r := bench(t, tt.line)
			if r.Units != tt.units {
				t.Errorf("units = %d, want %d", r.Units, tt.units)
			}
			if tt.ops >= 0 && r.Ops != tt.ops {
				t.Errorf("ops = %d, want %d", r.Ops, tt.ops)
			}
			if tt.ops < 0 && r.Ops < r.Units {
				t.Errorf("ops = %d, want at least units = %d", r.Ops, r.Units)
			}
			for _, k := range tt.kinds {
				if r.Latency[k] == nil {
					t.Errorf("latency[%q] missing; have %v", k, keys(r.Latency))
				}
			}
			if tt.ops >= 0 && len(r.Latency) != len(tt.kinds) {
				t.Errorf("latency kinds = %v, want %v", keys(r.Latency), tt.kinds)
			}
			if tt.wantHitRateOne && (r.HitRate == nil || *r.HitRate != 1) {
				t.Errorf("hit_rate = %v, want 1 (every key was preloaded)", r.HitRate)
			}
		})
	}
}

func keys[V any](m map[string]V) []string {
	var k []string
	for s := range m {
		k = append(k, s)
	}
	return k
}

func TestFillseqWritesAscendingKeys(t *testing.T) {
	p := planWorker("fillseq", "uniform", 0, 1, 100, 100, 8, 1)
	for i, k := range p.order {
		if int(k) != i {
			t.Fatalf("order[%d] = %d, want %d", i, k, i)
		}
	}
	var kt = newKeyTable(3)
	if got := string(kt.key(2)); got != "0000000000000002" {
		t.Errorf("key(2) = %q, want 0000000000000002", got)
	}
}

func TestWarmupNotInResults(t *testing.T) {
	r := bench(t, "bench -engine testmap -workload fillrandom -ops 1000 -warmup 300")
	s := lastMapStore.Load()
	if got, want := s.puts.Load(), int64(1300); got != want {
		t.Errorf("store saw %d puts, want %d (1000 measured + 300 warmup)", got, want)
	}
	if r.Latency["put"].Count != 1000 || r.Ops != 1000 {
		t.Errorf("measured count %d, ops %d; want 1000 and 1000 (warmup excluded)", r.Latency["put"].Count, r.Ops)
	}
	if r.Warmup != 300 {
		t.Errorf("warmup = %d, want 300", r.Warmup)
	}

	r = bench(t, "bench -engine testmap -workload fillrandom -ops 1000 -warmup 300 -dishonest-no-warmup")
	if got := lastMapStore.Load().puts.Load(); got != 1000 {
		t.Errorf("with -dishonest-no-warmup the store saw %d puts, want 1000", got)
	}
	if r.Warmup != 0 || len(r.Dishonest) != 1 || r.Dishonest[0] != "no-warmup" {
		t.Errorf("warmup %d dishonest %v, want 0 and [no-warmup]", r.Warmup, r.Dishonest)
	}
}

func TestCancellationStopsPromptly(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var cancelledAt atomic.Int64
	// Cancel at the first progress event, about a second into measuring.
	progress := func(Progress) {
		if cancelledAt.CompareAndSwap(0, time.Now().UnixNano()) {
			cancel()
		}
	}
	raw, err := Exec(ctx, "bench -engine null -duration 60s", Env{Dir: t.TempDir(), Progress: progress})
	if err != nil {
		t.Fatalf("Exec: %v", err)
	}
	if cancelledAt.Load() == 0 {
		t.Fatal("no progress event arrived, so nothing was cancelled")
	}
	// A correctness bound on cancellation, with a wide margin for a busy machine.
	if took := time.Since(time.Unix(0, cancelledAt.Load())); took > 20*time.Second {
		t.Errorf("a cancelled 60 s run returned %v after the cancel, want well under 20 s (a run that ignored it would take 60 s)", took)
	}
	var r BenchResult
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatal(err)
	}
	if !r.Cancelled {
		t.Error("cancelled = false, want true")
	}
	if r.Ops == 0 || r.Latency["put"] == nil || r.Latency["put"].Count != r.Ops {
		t.Errorf("ops %d; want what was measured before the cancel reported", r.Ops)
	}
	if r.WallSeconds >= 60 {
		t.Errorf("wall_seconds %v: the run went on to its deadline", r.WallSeconds)
	}
}

func TestProgressEvents(t *testing.T) {
	var events []Progress
	cfg := runConfig{engine: "null", sync: "none", workload: "fillrandom", dist: "uniform", threads: 2,
		duration: 400 * time.Millisecond, maxUnits: 1 << 30, valueSize: 8, keys: 1000, dir: t.TempDir(),
		tick: 10 * time.Millisecond, progress: func(p Progress) { events = append(events, p) }}
	r, err := runOne(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(events) < 2 {
		t.Fatalf("got %d progress events in 400 ms at a 10 ms tick, want at least 2", len(events))
	}
	for i := 1; i < len(events); i++ {
		if events[i].Ops < events[i-1].Ops {
			t.Errorf("event %d: ops went back from %d to %d", i, events[i-1].Ops, events[i].Ops)
		}
	}
	busy := 0
	for _, e := range events {
		if e.Ops > r.Ops {
			t.Errorf("event %+v: more ops than the run's %d", e, r.Ops)
		}
		// An interval in which ops completed has their p50 and p99.
		if e.OpsPerSec > 0 {
			busy++
			if e.P50 <= 0 || e.P99 < e.P50 {
				t.Errorf("event %+v: want 0 < p50 <= p99", e)
			}
		}
	}
	if busy == 0 {
		t.Error("no progress event saw any ops")
	}
}

func TestOpenLoopCorrectedAtLeastUncorrected(t *testing.T) {
	r := bench(t, "bench -engine null -ops 300 -rate 20000")
	c, u := r.Latency["put"], r.LatencyUncorrected["put"]
	if c == nil || u == nil {
		t.Fatalf("latency %v, latency_uncorrected %v: want both for a -rate run", r.Latency, r.LatencyUncorrected)
	}
	if c.Count != u.Count {
		t.Errorf("counts differ: %d corrected, %d uncorrected", c.Count, u.Count)
	}
	// Each op's corrected latency is at least its uncorrected one, so every
	// order statistic is too.
	for i := range c.Spectrum {
		if c.Spectrum[i].Ns < u.Spectrum[i].Ns {
			t.Errorf("p%v: corrected %d < uncorrected %d", c.Spectrum[i].P, c.Spectrum[i].Ns, u.Spectrum[i].Ns)
		}
	}
	// 300 units at 20000/s cannot finish in less than 299 intervals.
	if min := 299.0 / 20000; r.WallSeconds < min {
		t.Errorf("wall %v s, want at least %v s at the requested rate", r.WallSeconds, min)
	}
}

func TestDishonestThroughputFromSamples(t *testing.T) {
	r := bench(t, "bench -engine null -ops 5000 -threads 2 -dishonest-throughput-from-samples")
	var sum float64
	for _, s := range r.Latency {
		sum += s.MeanNs * float64(s.Count)
	}
	if got, want := r.OpsPerSec, float64(r.Ops)/(sum/1e9); math.Abs(got-want) > 1e-6*want {
		t.Errorf("ops_per_sec = %v, want ops / sum of samples = %v", got, want)
	}
	if len(r.Dishonest) != 1 || r.Dishonest[0] != "throughput-from-samples" {
		t.Errorf("dishonest = %v, want [throughput-from-samples]", r.Dishonest)
	}
}

func TestDishonestTimeKeygenAndUnsorted(t *testing.T) {
	r := bench(t, "bench -engine testmap -ops 500 -dishonest-time-keygen -dishonest-unsorted-percentile")
	want := []string{"time-keygen", "unsorted-percentile"}
	if len(r.Dishonest) != 2 || r.Dishonest[0] != want[0] || r.Dishonest[1] != want[1] {
		t.Errorf("dishonest = %v, want %v", r.Dishonest, want)
	}
	// The keys built inside the timed region must be the same keys.
	if n := len(lastMapStore.Load().m); n == 0 || n > 500 {
		t.Errorf("store holds %d keys, want 1..500", n)
	}
}

func TestRunErrorStops(t *testing.T) {
	_, err := Exec(context.Background(), "bench -engine testfail -ops 1000", Env{Dir: t.TempDir()})
	if err == nil {
		t.Fatal("a store whose Put fails: got nil error")
	}
}

func init() {
	RegisterEngine("testfail", func(dir, sync string) (Store, error) { return failStore{}, nil })
}

type failStore struct{ nullStore }

func (failStore) Put(k, v []byte) error { return errTest }

var errTest = &testErr{}

type testErr struct{}

func (*testErr) Error() string { return "test: put refused" }

// TestExecProgressNumbersSubRuns checks that a sweep's progress events
// say which of its runs they come from. The events tick every 10 ms, not
// every second: with a one-second tick a run of 1.1 s has one tick, and
// on a busy machine the tick can still be waiting when the run ends; the
// ticker then stops without reporting it, and a run shows no event.
func TestExecProgressNumbersSubRuns(t *testing.T) {
	var runs []int
	var mu = make(chan struct{}, 1)
	_, err := Exec(context.Background(), "sweep -engine null -threads 1,2 -duration 500ms", Env{Dir: t.TempDir(), tick: 10 * time.Millisecond, Progress: func(p Progress) {
		mu <- struct{}{}
		runs = append(runs, p.Run)
		<-mu
	}})
	if err != nil {
		t.Fatal(err)
	}
	saw := map[int]bool{}
	for _, r := range runs {
		saw[r] = true
	}
	if !saw[1] || !saw[2] || saw[0] {
		t.Errorf("progress run numbers %v, want events from runs 1 and 2 only", runs)
	}
}

func TestCancelledBeforeMeasuring(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if raw, err := Exec(ctx, "bench -engine null -ops 100", Env{Dir: t.TempDir()}); err == nil {
		t.Errorf("cancelled before starting: got %s and nil error, want an error", raw)
	}
}

func TestDurationRunStopsAtByteCap(t *testing.T) {
	lim := DefaultLimits()
	lim.MaxTotalBytes = 1000 * (keyLen + 128) // room for 1000 units, warmup aside
	raw, err := Exec(context.Background(), "bench -engine null -duration 30s -warmup 0", Env{Dir: t.TempDir(), Limits: lim})
	if err != nil {
		t.Fatal(err)
	}
	var r BenchResult
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatal(err)
	}
	if r.Units != 1000 || !r.Capped {
		t.Errorf("units %d capped %v, want 1000 and true", r.Units, r.Capped)
	}
}

// TestFsyncsCountedTellsNoneFromUncounted checks that a result tells "no fsyncs" apart from "this
// engine cannot count them": kv reports its syncs, the test map store does
// not.
func TestFsyncsCountedTellsNoneFromUncounted(t *testing.T) {
	for _, tc := range []struct {
		line        string
		wantCounted bool
		wantSyncs   bool
	}{
		{"bench -engine kv -sync always -workload fillrandom -ops 50", true, true},
		{"bench -engine kv -sync none -workload fillrandom -ops 50", true, false},
		{"bench -engine testmap -sync always -workload fillrandom -ops 50", false, false},
	} {
		t.Run(tc.line, func(t *testing.T) {
			r := bench(t, tc.line)
			if r.FsyncsCounted != tc.wantCounted {
				t.Errorf("fsyncs_counted: got %v, want %v", r.FsyncsCounted, tc.wantCounted)
			}
			if got := r.Fsyncs > 0; got != tc.wantSyncs {
				t.Errorf("fsyncs > 0: got %v (%d), want %v", got, r.Fsyncs, tc.wantSyncs)
			}
			var b strings.Builder
			if err := Write(&b, "table", r); err != nil {
				t.Fatal(err)
			}
			if got := strings.Contains(b.String(), "fsyncs not counted"); got == tc.wantCounted {
				t.Errorf("table says \"fsyncs not counted\": %v, want %v\n%s", got, !tc.wantCounted, b.String())
			}
		})
	}
}

// TestTimelineCoversTheRun checks that the timeline's intervals add up to
// the run's wall clock and its ops to the run's ops, so a short last
// interval is visible as short rather than passed off as a whole second.
func TestTimelineCoversTheRun(t *testing.T) {
	r := bench(t, "bench -engine null -duration 1300ms -threads 2")
	var secs float64
	var ops int64
	for _, p := range r.Timeline {
		secs += p.Seconds
		ops += p.Ops
	}
	if math.Abs(secs-r.WallSeconds) > 0.01 {
		t.Errorf("timeline seconds add up to %.4f, want wall_seconds %.4f", secs, r.WallSeconds)
	}
	if ops != r.Ops {
		t.Errorf("timeline ops add up to %d, want %d", ops, r.Ops)
	}
	if n := len(r.Timeline); n < 2 || r.Timeline[n-1].Seconds > 0.9 {
		t.Errorf("a 1.3 s run: got %d points, last %.3f s long; want at least 2 and a short last one", n, r.Timeline[n-1].Seconds)
	}
}
