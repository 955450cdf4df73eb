package harness

import (
	"kvlab/harness/calc"
	"time"
)

// BenchResult is one bench run: the JSON object of kind "bench". The field
// names are a contract (DESIGN.md, "JSON result"): add, never rename.
type BenchResult struct {
	Kind        string  `json:"kind"` // "bench"
	Spec        string  `json:"spec"` // the run as a line that reproduces it
	Engine      string  `json:"engine"`
	Sync        string  `json:"sync"` // SourceSync ("own") for a store that syncs by its own code
	Workload    string  `json:"workload"`
	Threads     int     `json:"threads"`
	Ops         int64   `json:"ops"`   // primitive key accesses measured
	Units       int64   `json:"units"` // workload steps measured
	WallSeconds float64 `json:"wall_seconds"`
	OpsPerSec   float64 `json:"ops_per_sec"`   // Ops / WallSeconds (unless a dishonest rule says otherwise)
	UnitsPerSec float64 `json:"units_per_sec"` // Units / WallSeconds
	ValueSize   int     `json:"value_size"`
	Keys        int     `json:"keys"`
	Dist        string  `json:"dist"`
	Warmup      int64   `json:"warmup"`         // units run and discarded before measuring
	Rate        float64 `json:"rate,omitempty"` // intended units/s of an open-loop run
	// Pipeline is -pipeline N: requests each client sent on its connection
	// before reading their replies; absent (0) when it did not pipeline.
	Pipeline int `json:"pipeline,omitempty"`
	// Interpreted says the store's code ran in the Go interpreter (a
	// source engine, -engine mine): its figures include the interpreter's
	// own cost, which -engine mine-null shows alone.
	Interpreted bool `json:"interpreted,omitempty"`

	// Latency by op kind: "put", "get", "delete", "scan". In a -rate run it is
	// measured from each unit's intended start; LatencyUncorrected from
	// the actual start, beside it.
	Latency            map[string]*LatencySummary `json:"latency"`
	LatencyUncorrected map[string]*LatencySummary `json:"latency_uncorrected,omitempty"`

	HitRate *float64 `json:"hit_rate,omitempty"` // found / Gets, for workloads that read

	// Cache is what -cache cold evicted before the timed region and what
	// stayed resident (cache.go); absent on a warm run.
	Cache *CacheReport `json:"cache,omitempty"`

	Fsyncs int64 `json:"fsyncs"` // during the timed region; 0 when not counted
	// FsyncsCounted is false for an engine that cannot report its syncs
	// (bbolt syncs inside its own commit): then Fsyncs 0 means "unknown",
	// not "none".
	FsyncsCounted bool    `json:"fsyncs_counted"`
	FsyncMeanNs   float64 `json:"fsync_mean_ns"`
	// The distribution of every data-file sync the harness timed in the
	// timed region (synctimes.go): nearest-rank percentiles over all the
	// samples. FsyncSamples 0 means the store's syncs are not timed
	// (bbolt) or there were none; the three figures are then 0. Unlike the
	// mean, p50 is not moved by one slow flush.
	FsyncSamples int64 `json:"fsync_samples"`
	FsyncP50Ns   int64 `json:"fsync_p50_ns"`
	FsyncP99Ns   int64 `json:"fsync_p99_ns"`
	FsyncMaxNs   int64 `json:"fsync_max_ns"`
	BytesWritten int64 `json:"bytes_written"`

	// FsyncsByCause splits the fdatasyncs of the timed region by why the
	// store made them (kv only; absent for a store that does not say):
	// "commit" (the sync policy's own), "seal" (rotation), "prealloc"
	// (after zero-filling ahead of the writes, under the write lock),
	// "compaction", "hint", "open". For kv the values sum to
	// fsync_samples; fsyncs is "commit" + "seal" (+ 1 per compaction).
	FsyncsByCause map[string]int64 `json:"fsyncs_by_cause,omitempty"`

	// DeviceIO is what the block device under the run directory counted
	// in the timed region (diskstats.go): write requests, bytes, flushes
	// and their ratios per op, or why there is no device to read.
	DeviceIO *DeviceIO `json:"device_io,omitempty"`
	// Amplification: write, space and read amplification of the measured
	// part, each with its source (amp.go).
	Amplification *Amplification `json:"amplification,omitempty"`
	// EngineMetrics are the engine's own gauges and counters at the end
	// of the measured part (kv: compaction debt, disk and live bytes,
	// compaction bytes; pebble: compaction debt, L0 files, write stalls,
	// WAL and compaction bytes); absent for an engine that keeps none.
	EngineMetrics map[string]int64 `json:"engine_metrics,omitempty"`
	// EngineConfig says what a store set for this run's writers
	// (WriterTuner: bbolt's group batch size and delay); absent for a
	// store that tunes nothing.
	EngineConfig string `json:"engine_config,omitempty"`

	// CPU is what the machine's processors did in the timed region
	// (cpustat.go): how busy they were, this process's share, and the
	// time a hypervisor took from them (steal), or why it is not known.
	CPU *CPUUse `json:"cpu,omitempty"`

	// ServerLatency is what the server behind a client store timed itself
	// (server.go), by op kind; ServerLatencySource names where it came
	// from. ServerLatencyUnavailable says why a ServerTimer store's server
	// gave no figures.
	ServerLatency            map[string]*ServerLatency `json:"server_latency,omitempty"`
	ServerLatencySource      string                    `json:"server_latency_source,omitempty"`
	ServerLatencyUnavailable string                    `json:"server_latency_unavailable,omitempty"`

	// Replication, for a replicated engine (-engine pg-sync, etcd), is
	// its members, who led, each member's flushes per commit and the
	// network between them (replication.go).
	Replication *ReplicationReport `json:"replication,omitempty"`
	// Fanout, for a -fanout K run, is the single requests' latency and
	// how many units were slower than a single request's p99, beside the
	// prediction for independent requests (fanout.go).
	Fanout *FanoutReport `json:"fanout,omitempty"`

	// The reopen workload (reopen.go): how long the Open of a store
	// whose files were dropped from the page cache took, and the Close
	// after it; for kv, the memory its index holds per key (the key
	// included) and the floor of that Open measured in the same run.
	OpenSeconds      float64          `json:"open_seconds,omitempty"`
	CloseSeconds     float64          `json:"close_seconds,omitempty"`
	IndexBytesPerKey float64          `json:"index_bytes_per_key,omitempty"`
	OpenFloor        *OpenFloorReport `json:"open_floor,omitempty"`

	Model    *BenchModel     `json:"model,omitempty"` // for batch:N and periodic:D
	Timeline []TimelinePoint `json:"timeline"`
	// SteadyState, in a -until-steady run, says whether and when the
	// warm-up reached steady state (steady.go), or why not, with the last
	// window of samples as evidence; WarmupTimeline is the warm-up's
	// seconds, each marked "warmup" (the measured timeline's are marked
	// "measured"). Both absent in any other run.
	SteadyState    *SteadyState    `json:"steady_state,omitempty"`
	WarmupTimeline []TimelinePoint `json:"warmup_timeline,omitempty"`
	Probe          *ProbeBrief     `json:"probe,omitempty"`
	// LoadAvg is the machine's 1-minute load average just before the run
	// (Linux /proc/loadavg; 0 where unknown). Above the core count, other
	// work was competing for the CPU and the disk: say so with the number.
	LoadAvg float64 `json:"load_avg,omitempty"`

	Cancelled bool `json:"cancelled,omitempty"` // stopped early; figures cover what ran
	Capped    bool `json:"capped,omitempty"`    // a -duration run stopped at the byte cap before its time was up
	// BacklogUnits, in an open-loop -duration run, is how many units were
	// due to start before the deadline but never started because the
	// run fell behind the rate (Behind says who did). Their latency (the
	// worst of the run) is in no table: non-zero means the tables
	// understate the tail.
	BacklogUnits int64 `json:"backlog_units,omitempty"`
	// Utilization, in an open-loop run, is rate x mean service time: the
	// intended units per second times the mean time a unit took from its
	// actual start (the uncorrected latencies), i.e. how many units were
	// being served at once on average if the store kept up. Near or above
	// 1 with -threads 1 the queue grows without bound and the corrected
	// latencies (and backlog_units) show it, even when the achieved rate
	// looks right.
	Utilization float64  `json:"utilization,omitempty"`
	Dishonest   []string `json:"dishonest,omitempty"` // timing rules this run broke on purpose
	Run         int      `json:"run,omitempty"`       // 1-based index within a -repeat
	// Round is the round of an interleaved -repeat this run belongs to
	// (1-based; the same as Run): in each round every configuration of the
	// line runs once, in mirrored order (calc.RoundOrder). StartedAt is
	// when the run began (UTC), so the order is on the record.
	Round     int       `json:"round,omitempty"`
	StartedAt time.Time `json:"started_at,omitzero"`
	// Paired, on the last result of each configuration of a -repeat line
	// but the first (several engines or thread counts), compares its
	// throughput with the first configuration's round by round: the
	// median of the per-round ratios and their range.
	Paired *PairedRatio `json:"paired,omitempty"`
	Dir    string       `json:"dir,omitempty"` // with -keep: where the data stayed
	// Pooled, on the last result of each -repeat group (one engine and
	// thread count) only, is the latency of all the group's runs' samples
	// together (pool.go): not the median of their percentiles.
	Pooled *Pooled `json:"pooled,omitempty"`

	// The open-loop pacer's account of itself (pacer.go), -rate runs only.
	// PacerLag is the generator's own lateness per unit: from the moment
	// the worker was free to start the unit (its intended start, or the
	// end of the worker's previous unit if later) to its actual start.
	PacerLag *PacerLag `json:"pacer_lag,omitempty"`
	// GeneratorLate is true when the generator's delay p99 (at least the
	// pacer-lag p99; PacerLag.DelayP99Ns) exceeds GeneratorLateFraction of
	// the corrected p99 (of the op kind with the highest): the corrected
	// tail is mostly the load generator's lateness, not the store's
	// latency.
	GeneratorLate bool `json:"generator_late,omitempty"`
	// Behind, when BacklogUnits > 0, names who fell behind the rate:
	// "generator" when GeneratorLate, else "store".
	Behind string `json:"behind,omitempty"`
}

// PacerLag summarizes an open loop's pacer lag, in nanoseconds.
type PacerLag struct {
	Count  int64   `json:"count"` // paced units
	MeanNs float64 `json:"mean_ns"`
	P50Ns  int64   `json:"p50_ns"`
	P99Ns  int64   `json:"p99_ns"`
	MaxNs  int64   `json:"max_ns"`
	Exact  bool    `json:"exact"` // as in LatencySummary
	// DelayP99Ns is the p99 of the generator's delay: how much later each
	// unit ended than it would have with a generator that is never late
	// (its lateness including what carried over to the units after it).
	DelayP99Ns int64 `json:"delay_p99_ns"`
}

// BenchModel is the model's prediction printed next to a measurement.
type BenchModel struct {
	PredictedOpsPerSec float64 `json:"predicted_ops_per_sec"`
	// Bookkeeping is true when both inputs came from this run itself
	// (T_write from its wall time or mean Put, T_fsync its mean
	// fdatasync): PredictedOpsPerSec then restates the run's own
	// throughput (N*T_write + T_fsync is its wall time for N Puts) and
	// checks the bookkeeping, not the model. A prediction is made before
	// the run, from figures measured without it: the model line.
	Bookkeeping  bool    `json:"bookkeeping,omitempty"`
	TWriteNs     float64 `json:"t_write_ns"`
	TWriteSource string  `json:"t_write_source"` // "run_wall", "run_mean", "run_service" (this run's mean Put outside the flush: runTWrite) or "probe" (the probe's write(2))
	TFsyncNs     float64 `json:"t_fsync_ns"`
	TFsyncSource string  `json:"t_fsync_source"` // "run" (this run's fsync mean) or "probe"
	P99Path      string  `json:"p99_path"`       // where the model puts p99: "slow" or "fast"
	// MeasuredP99Path is where the run's put p99 landed: "slow" when it is
	// at least P99ThresholdNs, the geometric mean of the put p50 and the
	// median fdatasync (calc.MeasuredP99Path; one slow flush cannot move
	// it), else "fast".
	MeasuredP99Path string  `json:"measured_p99_path,omitempty"`
	P99ThresholdNs  float64 `json:"p99_threshold_ns"`
	// FsyncP50Source names the median fdatasync the threshold used:
	// "run_p50" (fsync_p50_ns of this run), "run" (this run's mean: its
	// syncs were counted, not timed), "probe" (the probe's) or "none" (the
	// run made no fdatasync: every p99 is fast).
	FsyncP50Source string `json:"fsync_p50_source"`
	// LossWindowWrites are the acknowledged writes a power cut can lose:
	// N-1 for batch:N; for periodic:D, WriteRate x (D + T_fsync), the
	// writes acknowledged since the last completed fdatasync started.
	LossWindowWrites float64 `json:"loss_window_writes"`
	LossWindowMs     float64 `json:"loss_window_ms"`
	// RateSource is "run": WriteRate is this run's Puts per second
	// (latency.put.count / wall_seconds).
	RateSource string  `json:"rate_source"`
	WriteRate  float64 `json:"write_rate"`

	// TFsyncCase, when TFsyncSource is "probe", is which of the probe's
	// cases the engine pays (ProbeFsyncFor): "overwrite" (kv),
	// "append" (pebble) or "append+overwrite" (bbolt, both per commit).
	TFsyncCase string `json:"t_fsync_case,omitempty"`
}

// ProbeBrief is the part of a probe a bench result carries: the conditions
// the number was measured under.
type ProbeBrief struct {
	FS          string  `json:"fs"`
	Device      string  `json:"device"`
	Rotational  bool    `json:"rotational"`
	WriteNs     float64 `json:"write_ns"`
	FdatasyncNs float64 `json:"fdatasync_ns"`
	SyncCall    string  `json:"sync_call,omitempty"` // as in ProbeResult
	Cores       int     `json:"cores"`
	Go          string  `json:"go"`

	// FdatasyncOverwriteNs is the probe's flush into allocated space (as
	// in ProbeResult); FdatasyncNs is the appending one.
	FdatasyncOverwriteNs float64 `json:"fdatasync_overwrite_ns"`
}

// summarizeRun turns the workers' recorders into a result.
func summarizeRun(cfg *runConfig, all []*worker, wall time.Duration, timeline []TimelinePoint) *BenchResult {
	res := &BenchResult{
		Kind: "bench", Engine: cfg.engine, Sync: cfg.sync, Workload: cfg.workload,
		Threads: cfg.threads, ValueSize: cfg.valueSize, Keys: cfg.keys, Dist: cfg.dist,
		Warmup: cfg.warmup, Rate: cfg.rate, WallSeconds: wall.Seconds(), Timeline: timeline,
		Dishonest: cfg.dishonest.rules(),
	}
	if cfg.dishonest.noWarmup {
		res.Warmup = 0
	}
	if cfg.pipeline > 1 {
		res.Pipeline = cfg.pipeline
	}
	if res.Timeline == nil {
		res.Timeline = []TimelinePoint{}
	}
	sumNs := res.addLatencies(cfg, all)
	res.addUnits(cfg, all)
	res.addPacerLag(cfg, all)
	// Throughput from the one outer wall clock...
	secs := wall.Seconds()
	if cfg.dishonest.throughputFromSamples {
		// ...or, breaking the rule on purpose, from the sum of the samples:
		// it leaves out the time between ops and counts overlapping
		// threads' time several times over.
		secs = sumNs / 1e9
	}
	if secs > 0 {
		res.OpsPerSec = float64(res.Ops) / secs
		res.UnitsPerSec = float64(res.Units) / secs
	}
	return res
}

// opRecorders are the op kinds a result reports, each with the worker's
// recorder of corrected latencies and of uncorrected ones (nil outside a
// -rate run).
var opRecorders = []struct {
	name string
	get  func(*worker) (*recorder, *recorder)
}{
	{"put", func(w *worker) (*recorder, *recorder) { return w.put, w.uput }},
	{"get", func(w *worker) (*recorder, *recorder) { return w.get, w.uget }},
	{"delete", func(w *worker) (*recorder, *recorder) { return w.del, w.udel }},
	{"scan", func(w *worker) (*recorder, *recorder) { return w.scan, w.uscan }},
}

// addLatencies summarizes each op kind's latencies over every worker,
// counts the ops, hands the recorders to the -repeat pool if any, and
// returns the sum of every latency in nanoseconds.
func (res *BenchResult) addLatencies(cfg *runConfig, all []*worker) (sumNs float64) {
	res.Latency = map[string]*LatencySummary{}
	pooled := map[string][]*recorder{}
	for _, k := range opRecorders {
		var recs, uncs []*recorder
		for _, w := range all {
			r, u := k.get(w)
			recs = append(recs, r)
			if u != nil {
				uncs = append(uncs, u)
			}
		}
		pooled[k.name] = recs
		s := summarize(recs, cfg.dishonest.unsortedPercentile)
		if s.Count == 0 {
			continue
		}
		if len(recs) > 0 {
			s.Start = startBlocks(recs[0])
		}
		res.Latency[k.name] = &s
		res.Ops += s.Count
		sumNs += s.MeanNs * float64(s.Count)
		if len(uncs) > 0 {
			if res.LatencyUncorrected == nil {
				res.LatencyUncorrected = map[string]*LatencySummary{}
			}
			u := summarize(uncs, cfg.dishonest.unsortedPercentile)
			res.LatencyUncorrected[k.name] = &u
		}
	}
	if cfg.pool != nil {
		cfg.pool.add(pooled)
	}
	return sumNs
}

// addUnits counts the clients' units and backlog, the hit rate of a
// workload that reads, and an open loop's utilization.
func (res *BenchResult) addUnits(cfg *runConfig, all []*worker) {
	var gets, hits, serviceNs int64
	for _, w := range all {
		if w.role == roleClient {
			res.Units += w.units
			res.BacklogUnits += w.backlog
			if cfg.rate > 0 {
				for _, u := range []*recorder{w.uput, w.uget, w.udel, w.uscan} {
					serviceNs += u.sum
				}
			}
		}
		gets += w.gets
		hits += w.hits
	}
	if wl, _ := lookupWorkload(cfg.workload); wl.reads && gets > 0 {
		h := float64(hits) / float64(gets)
		res.HitRate = &h
	}
	if cfg.rate > 0 && res.Units > 0 {
		res.Utilization = cfg.rate * float64(serviceNs) / float64(res.Units) / 1e9
	}
}

// addPacerLag summarizes an open loop's pacer lag over the clients and
// decides who was late (GeneratorLate) and, when units were left due,
// who fell behind (Behind). It needs the latencies and backlog already
// summarized.
func (res *BenchResult) addPacerLag(cfg *runConfig, all []*worker) {
	if cfg.rate <= 0 {
		return
	}
	var lags, delays []*recorder
	for _, w := range all {
		if w.role == roleClient && w.lag != nil {
			lags, delays = append(lags, w.lag), append(delays, w.delay)
		}
	}
	s := summarize(lags, false)
	if s.Count == 0 {
		return
	}
	d := summarize(delays, false)
	res.PacerLag = &PacerLag{Count: s.Count, MeanNs: s.MeanNs, P50Ns: s.P50Ns, P99Ns: s.P99Ns, MaxNs: s.MaxNs, Exact: s.Exact, DelayP99Ns: d.P99Ns}
	res.GeneratorLate = generatorLate(d.P99Ns, worstP99(res.Latency))
	if res.BacklogUnits > 0 {
		res.Behind = "store"
		if res.GeneratorLate {
			res.Behind = "generator"
		}
	}
}

// PairedRatio is one configuration of a -repeat line compared with the
// line's first, round by round (calc.PairRatios): Ratio is the median of
// Ratios, this configuration's Metric divided by Against's in the same
// round.
type PairedRatio struct {
	Metric         string `json:"metric"`          // "ops_per_sec"
	Against        string `json:"against"`         // the first configuration's engine
	AgainstThreads int    `json:"against_threads"` // and thread count
	calc.Paired
}
