package harness

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"kvlab/harness/calc"
)

// The replication model: `labserver model -replicas N -net-delay D`.
//
// A synchronous commit waits for the leader's flush and for a quorum of
// followers to have the record: with k the followers a commit waits for
// (pg-sync: 1, ANY 1 or FIRST 1; etcd: a majority of the members less the
// leader, 1 of 2 or 2 of 4),
//
//	commit ≈ T_fixed + max(T_leader, RTT + T_k)
//
// where T_fixed is what a commit costs besides the flushes and the trip
// (the client's request and answer, parsing and applying it, the
// replication's own steps: replication_fixed.go), T_leader the leader's
// flush, RTT the round trip to a follower and T_k the k-th fastest
// follower's flush. On one machine every member
// flushes to one disk at one cost, so T_k = T_leader = T_fsync, and the
// formula is RTT + T_fsync. PostgreSQL's walsender sends only WAL the
// primary has flushed, so there the two flushes add up: T_fsync + RTT +
// T_fsync. A follower that only writes (pg-sync remote_write) costs RTT
// with no flush; a commit that waits for no follower (local, none) costs
// the leader's flush alone.
//
// Group commit crosses the wire: commits that arrive while one is on its
// way wait for the next flush and the next round trip together, and etcd
// pipelines rounds. With T clients in a closed loop, each waiting one
// commit at a time, Little's law gives throughput = T / commit: the
// flushes and round trips are shared, so the commit latency stays near one
// client's while the batches grow. That holds until something per request
// runs out (the CPU that parses, applies and answers each one; the disk's
// bandwidth), which the model leaves out: at 0 ms delay on loopback, with
// many clients, that is what a measurement shows instead.
//
// The inputs are measured here: T_fsync by a quick probe of the data
// directory, the case each engine pays (replicaFsync), T_fixed by the
// engine's own commits with the flushes taken out (probeCommitFixed:
// its data on a memory filesystem, no delay), and RTT through the
// harness's delaying proxy with the line's delay (MeasureRTT, which the
// peers package provides; 0 without a delay: loopback's tens of
// microseconds are left out). The members' flushes share this machine's
// disk, where they may queue behind each other; the formula leaves that
// out, and a bench run's device_flushes_per_commit shows how many there
// were.

// replicatedModels are the engines the replication model covers.
var replicatedModels = []struct {
	name     string
	replicas []int // -replicas allowed; the first is the default
	syncs    []string
}{
	{"pg-sync", []int{1, 2}, []string{"always", "remote_write", "remote_apply", "local", "none"}},
	{"etcd", []int{2, 4}, []string{"always"}},
}

// MeasureRTT measures the round trip through the harness's delaying proxy
// with a network's settings. The peers package sets it (netproxy.go); nil
// in a program without it, when the model takes twice the delay.
var MeasureRTT func(ctx context.Context, n NetOptions) (*NetReport, error)

// ReplicationPrediction is one engine's prediction in a model result's
// "replication" array.
type ReplicationPrediction struct {
	Engine   string `json:"engine"`
	Sync     string `json:"sync"`
	Replicas int    `json:"replicas"`
	// Waits is how many followers a commit waits for (the k of the
	// formula); WaitsFor and LeaderFlushFirst as in a bench result's
	// replication object.
	Waits            int    `json:"waits"`
	WaitsFor         string `json:"waits_for"`
	LeaderFlushFirst bool   `json:"leader_flush_first"`
	// The inputs: T_fsync (the probe's case TFsyncCase: "overwrite" or
	// "append") and the round trip (RTTSource "proxy_p50", "twice_delay"
	// or "none").
	TFsyncNs   float64 `json:"t_fsync_ns"`
	TFsyncCase string  `json:"t_fsync_case"`
	// TFixedNs is the commit's fixed term (replication_fixed.go), from
	// TFixedSource: "memory_commit_p50" (the median commit of the same
	// engine with its data on a memory filesystem: probeCommitFixed),
	// "given" (-t-fixed) or "none" (no figure: TFixedNote says why, and
	// the prediction leaves the term out).
	TFixedNs     float64 `json:"t_fixed_ns"`
	TFixedSource string  `json:"t_fixed_source"`
	TFixedNote   string  `json:"t_fixed_note,omitempty"`
	RTTNs        float64 `json:"rtt_ns"`
	RTTSource    string  `json:"rtt_source"`
	// Formula is the commit formula with the figures put in.
	Formula  string  `json:"formula"`
	CommitNs float64 `json:"commit_ns"`
	// Threads is the prediction at each -threads: T / commit.
	Threads []ReplicationThreads `json:"threads"`
}

// ReplicationThreads is the predicted throughput of T clients.
type ReplicationThreads struct {
	Threads   int     `json:"threads"`
	CommitNs  float64 `json:"commit_ns"`
	OpsPerSec float64 `json:"ops_per_sec"`
}

// replicaFsync is the probe's T_fsync for a replicated engine's log, and
// its case: PostgreSQL zero-fills each WAL segment when it makes it
// (wal_init_zero), so a commit's flush overwrites allocated space; etcd
// preallocates its WAL segments with fallocate, whose unwritten extents
// each flush must convert, which costs as an append does.
func replicaFsync(engine string, b *ProbeBrief) (ns float64, kind string) {
	if engine == "pg-sync" && b.FdatasyncOverwriteNs > 0 {
		return b.FdatasyncOverwriteNs, "overwrite"
	}
	return b.FdatasyncNs, "append"
}

// commitModel is the commit latency of one client: the formula of the
// file comment for what a commit waits for, with fixed (T_fixed) added
// when it is not 0.
func commitModel(waitsFor string, leaderFirst bool, tf, rtt, fixed float64) (ns float64, formula string) {
	ns, formula = flushAndTrip(waitsFor, leaderFirst, tf, rtt)
	if fixed > 0 {
		ns += fixed
		formula = "T_fixed + " + formula
		if i := strings.Index(formula, " = "); i >= 0 {
			formula = formula[:i] + " = " + calc.FormatNs(fixed) + " + " + formula[i+len(" = "):]
		}
	}
	return ns, formula
}

// flushAndTrip is the formula's flushes and round trip, T_fixed aside.
func flushAndTrip(waitsFor string, leaderFirst bool, tf, rtt float64) (ns float64, formula string) {
	f, r := calc.FormatNs(tf), calc.FormatNs(rtt)
	switch {
	case waitsFor == "leader_only":
		return tf, "T_fsync = " + f
	case waitsFor == "follower_write" && leaderFirst:
		return tf + rtt, fmt.Sprintf("T_fsync + RTT = %s + %s", f, r)
	case waitsFor == "follower_write":
		return max(tf, rtt), fmt.Sprintf("max(T_fsync, RTT) = max(%s, %s)", f, r)
	case leaderFirst:
		return 2*tf + rtt, fmt.Sprintf("T_fsync + RTT + T_fsync = %s + %s + %s (the primary flushes before it sends)", f, r, f)
	}
	return max(tf, rtt+tf), fmt.Sprintf("max(T_leader, RTT + T_k) = max(%s, %s + %s)", f, r, f)
}

// waitsFor is what a commit of engine under sync waits for.
func waitsFor(engine, sync string) (string, bool) {
	if engine == "etcd" {
		return "follower_flush", false
	}
	switch sync {
	case "always", "remote_apply":
		return "follower_flush", true
	case "remote_write":
		return "follower_write", true
	}
	return "leader_only", true
}

// replicationModelLine answers a model line with -replicas, -net-delay or
// -engine: one prediction per engine.
func replicationModelLine(ctx context.Context, s *Spec, dir string) (*ModelResult, error) {
	m := &ModelResult{Kind: "model", Source: "probe", TFsyncSource: "probe"}
	var brief *ProbeBrief
	if !s.has("t-fsync") {
		var err error
		if brief, err = quickProbe(ctx, dir); err != nil {
			return nil, err
		}
	} else {
		m.Source, m.TFsyncSource = "given", "given"
	}
	rtt, rttSource := 0.0, "none"
	if s.Net.Active() {
		rtt, rttSource = float64(2*s.Net.Delay), "twice_delay"
		if MeasureRTT != nil {
			rep, err := MeasureRTT(ctx, s.Net)
			if err != nil {
				return nil, fmt.Errorf("model: measuring the round trip: %w", err)
			}
			rtt, rttSource = float64(rep.RTTP50Ns), "proxy_p50"
		}
	}
	threads := s.Threads
	if len(threads) == 0 {
		threads = []int{1}
	}
	for _, e := range s.Engines {
		p := ReplicationPrediction{Engine: e, Sync: s.Sync, Replicas: s.Replicas, RTTNs: rtt, RTTSource: rttSource}
		for _, rm := range replicatedModels {
			if rm.name == e && p.Replicas == 0 {
				p.Replicas = rm.replicas[0]
			}
		}
		p.Waits = 1
		if e == "etcd" {
			p.Waits = (p.Replicas + 1) / 2 // a majority of Replicas+1 members, less the leader
		}
		p.WaitsFor, p.LeaderFlushFirst = waitsFor(e, s.Sync)
		if brief != nil {
			p.TFsyncNs, p.TFsyncCase = replicaFsync(e, brief)
		} else {
			p.TFsyncNs, p.TFsyncCase = float64(s.TFsync), "given"
		}
		p.TFixedSource = "given"
		p.TFixedNs = float64(s.TFixed)
		if !s.has("t-fixed") {
			ft, err := probeCommitFixed(ctx, e, s.Sync, p.Replicas)
			if err != nil {
				return nil, fmt.Errorf("model: %w", err)
			}
			p.TFixedNs, p.TFixedSource, p.TFixedNote = ft.Ns, "memory_commit_p50", ft.Note
			if ft.Note != "" {
				p.TFixedSource = "none"
			}
		}
		p.CommitNs, p.Formula = commitModel(p.WaitsFor, p.LeaderFlushFirst, p.TFsyncNs, p.RTTNs, p.TFixedNs)
		for _, t := range threads {
			th := ReplicationThreads{Threads: t, CommitNs: p.CommitNs}
			if p.CommitNs > 0 {
				th.OpsPerSec = float64(t) * 1e9 / p.CommitNs
			}
			p.Threads = append(p.Threads, th)
		}
		m.Replication = append(m.Replication, p)
	}
	return m, nil
}

// isReplicationModel says whether a model line asks for the replication
// model: it names a replicated engine, -replicas, a network or -t-fixed.
func isReplicationModel(s *Spec) bool {
	for _, f := range []string{"engine", "replicas", "net-delay", "net-jitter", "net", "t-fixed"} {
		if s.has(f) {
			return true
		}
	}
	return false
}

// modelReplicationFlags are the model's flags for the replication model;
// they come before -sync, which they make optional.
func modelReplicationFlags() []flagDef {
	names := make([]string, len(replicatedModels))
	for i, rm := range replicatedModels {
		names[i] = rm.name
	}
	return []flagDef{
		{name: "engine", usage: "the replication model: predict a commit of " + strings.Join(names, ", ") + " (a comma list; default both when -replicas or -net-delay is given)",
			fill: func(s *Spec, a arg, _ Limits) error {
				if !isReplicationModel(s) {
					return nil
				}
				s.Engines = names
				if a.given {
					s.Engines = strings.Split(a.v, ",")
				}
				for _, e := range s.Engines {
					if !slices.Contains(names, e) {
						return fmt.Errorf("-engine %s: the model predicts the replicated engines only: %s", e, strings.Join(names, ", "))
					}
				}
				return nil
			},
			show: func(s *Spec, _ runOf) (string, bool) { return strings.Join(s.Engines, ","), s.has("engine") }},
		{name: "replicas", usage: "the replication model: copies besides the leader (pg-sync 1 or 2, etcd 2 or 4; default each engine's first)",
			fill: func(s *Spec, a arg, _ Limits) error {
				if !a.given {
					return nil
				}
				n, err := a.int(0, 1, 8)
				if err != nil {
					return err
				}
				for _, rm := range replicatedModels {
					if slices.Contains(s.Engines, rm.name) && !slices.Contains(rm.replicas, int(n)) {
						return fmt.Errorf("-replicas %d: -engine %s takes %s (name the engine: -engine %s)", n, rm.name, joinInts(rm.replicas), otherModel(rm.name))
					}
				}
				s.Replicas = int(n)
				return nil
			},
			show: func(s *Spec, _ runOf) (string, bool) { return itoa(s.Replicas), s.Replicas > 0 }},
		{name: "net-delay", usage: "the replication model: one-way delay between the servers, e.g. 1ms (the round trip is measured through the harness's proxy)",
			fill: func(s *Spec, a arg, _ Limits) (err error) {
				s.Net.Delay, err = a.duration(0, 0, maxNetDelay)
				return err
			},
			show: func(s *Spec, _ runOf) (string, bool) { return s.Net.Delay.String(), s.has("net-delay") }},
		{name: "t-fixed", usage: "the replication model: a commit's cost besides the flushes and the round trip, e.g. 400us (default: the engine's median commit with its data on a memory filesystem)",
			fill: func(s *Spec, a arg, _ Limits) (err error) {
				s.TFixed, err = a.duration(0, 0, 10*time.Second)
				return err
			},
			show: func(s *Spec, _ runOf) (string, bool) { return s.TFixed.String(), s.has("t-fixed") }},
		{name: "threads", usage: "the replication model: concurrent clients, a comma list (default 1)",
			fill: func(s *Spec, a arg, lim Limits) error {
				if !a.given {
					return nil
				}
				return s.parseThreads(a.v, lim)
			},
			show: func(s *Spec, r runOf) (string, bool) {
				ts := make([]string, len(s.Threads))
				for i, t := range s.Threads {
					ts[i] = itoa(t)
				}
				return strings.Join(ts, ","), s.has("threads")
			}},
	}
}

// otherModel names the replicated engine that is not name.
func otherModel(name string) string {
	if name == "etcd" {
		return "pg-sync"
	}
	return "etcd"
}

// writeReplicationModel prints a replication model's predictions.
func writeReplicationModel(w io.Writer, m *ModelResult) {
	for _, p := range m.Replication {
		fmt.Fprintf(w, "model %s -sync %s -replicas %d: a commit waits for %d follower(s) (%s)\n", p.Engine, p.Sync, p.Replicas, p.Waits, p.WaitsFor)
		rtt := "no added delay: RTT 0"
		if p.RTTSource != "none" {
			rtt = "RTT " + calc.FormatNs(p.RTTNs) + " (" + p.RTTSource + ")"
		}
		fmt.Fprintf(w, "  T_fsync %s (the probe's %s case), %s\n", calc.FormatNs(p.TFsyncNs), p.TFsyncCase, rtt)
		switch p.TFixedSource {
		case "memory_commit_p50":
			fmt.Fprintf(w, "  T_fixed %s (the median commit of the same engine with its data in memory: the cost besides the flushes and the trip)\n", calc.FormatNs(p.TFixedNs))
		case "given":
			fmt.Fprintf(w, "  T_fixed %s (given)\n", calc.FormatNs(p.TFixedNs))
		default:
			fmt.Fprintf(w, "  T_fixed left out: %s\n", p.TFixedNote)
		}
		fmt.Fprintf(w, "  one commit ≈ %s = %s\n", p.Formula, calc.FormatNs(p.CommitNs))
		for _, t := range p.Threads {
			fmt.Fprintf(w, "  %3d client(s): %.0f commits/s (T / commit, group commit across the wire)\n", t.Threads, t.OpsPerSec)
		}
	}
}
