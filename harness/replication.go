package harness

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"kvlab/harness/calc"
)

// Replicated engines.
//
// Some engines are not one store but a group of servers that copy every
// commit to each other: a PostgreSQL primary and its synchronous standbys
// (-engine pg-sync), an etcd cluster (-engine etcd), all started on this
// machine for the run. Such an engine is registered with
// RegisterReplicated, which says what else it takes from a line:
//
//	-replicas N        copies besides the leader (pg-sync: standbys; etcd: followers)
//	-quorum any|first  which standbys a pg-sync commit waits for (with -replicas 2)
//	-net-delay D       added one-way delay between the servers, through a TCP proxy
//	-net-jitter D      added jitter: each chunk waits delay ± up to D
//	-net PRESET        same-rack | one-region | cross-region: a delay and jitter
//	-net-client        put the proxy between the client and the server too
//
// and the -sync names it accepts beyond kv's, when its policies are not
// kv's (pg-sync's are the values of synchronous_commit). A store it opens
// may implement ReplicationReporter; the result's "replication" object is
// then what it reports: the members, who leads, each member's flushes per
// commit and the round trip measured through the proxy.

// NetOptions is the network a replicated engine's servers talk across.
type NetOptions struct {
	Preset string        // the -net preset, "" when none was given
	Delay  time.Duration // added to every chunk of bytes, each direction
	Jitter time.Duration // each chunk waits Delay plus a uniform draw in [-Jitter, +Jitter]
	Client bool          // the client's connections go through a proxy too
}

// Active reports whether the servers' traffic goes through a delaying
// proxy at all.
func (n NetOptions) Active() bool { return n.Delay > 0 || n.Jitter > 0 }

// EngineOptions are the flags of a line that only replicated engines take.
type EngineOptions struct {
	Replicas int    // copies besides the leader
	Quorum   string // "any" or "first" (pg-sync with more than one standby)
	Net      NetOptions
	// KillFollower, when not 0, is -kill follower@D: one follower is
	// killed (SIGKILL) D after the timed region starts.
	KillFollower time.Duration
	// KillLeader, when not 0, is -kill leader@D: the leader (pg-sync's
	// primary, etcd's current leader) is killed D after the timed region
	// starts.
	KillLeader time.Duration
}

// KillAt is when, after the runner's first StoreStats read of a store
// (the start of the timed region), a fault is injected, and what it
// killed when. A store arms it in StoreStats and disarms it in Close. It
// is safe for concurrent use.
type KillAt struct {
	After time.Duration
	mu    sync.Mutex  // guards timer, done, armedAt, killed and killedAfter
	timer *time.Timer // nil until armed
	done  bool
	// armedAt is when the countdown started; killed names what the fault
	// killed, killedAfter how long after armedAt ("" and 0 before then).
	armedAt     time.Time
	killed      string
	killedAfter time.Duration
}

// Arm starts the countdown to kill on its first call (a later call does
// nothing); with After 0 it never fires. kill returns the name of what it
// killed, for Killed.
func (k *KillAt) Arm(kill func() string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.After <= 0 || k.timer != nil || k.done {
		return
	}
	k.armedAt = time.Now()
	k.timer = time.AfterFunc(k.After, func() {
		name := kill()
		k.mu.Lock()
		k.killed, k.killedAfter = name, time.Since(k.armedAt)
		k.mu.Unlock()
	})
}

// Killed is what the fault killed and how long after the countdown
// started; "" before it fired.
func (k *KillAt) Killed() (name string, after time.Duration) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.killed, k.killedAfter
}

// Disarm stops a countdown that has not fired.
func (k *KillAt) Disarm() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.done = true
	if k.timer != nil {
		k.timer.Stop()
	}
}

// ReplicatedEngine describes a replicated engine to the harness.
type ReplicatedEngine struct {
	// Open starts the servers in dir (which exists) and returns a client
	// store on them whose Close stops them. When ctx is done (the run
	// cancelled), starting stops and the store's connections end.
	Open func(ctx context.Context, dir, sync string, o EngineOptions) (Store, error)
	// Syncs lists every -sync value the engine accepts, with what each
	// means, for errors: "always (synchronous_commit=on), ...".
	Syncs []string
	// SyncHelp is Syncs as one phrase for the usage text and errors.
	SyncHelp string
	// Replicas are the -replicas values allowed; the first is the default.
	Replicas []int
	// Quorum says whether -quorum applies.
	Quorum bool
}

// replicatedEngines holds the registered replicated engines by name.
// Written only from init functions, so read without a lock.
var replicatedEngines = map[string]ReplicatedEngine{}

// RegisterReplicated makes a replicated engine available as -engine name.
// It is meant to be called from init functions and panics on a duplicate
// name, as RegisterEngine does.
func RegisterReplicated(name string, e ReplicatedEngine) {
	if len(e.Syncs) == 0 || len(e.Replicas) == 0 || e.Open == nil {
		panic(fmt.Sprintf("harness: RegisterReplicated(%q): no Syncs, Replicas or Open", name))
	}
	RegisterEngineContext(name, func(ctx context.Context, dir, sync string) (Store, error) {
		return e.Open(ctx, dir, sync, EngineOptions{Replicas: e.Replicas[0], Quorum: "any"})
	})
	enginesMu.Lock()
	defer enginesMu.Unlock()
	replicatedEngines[name] = e
}

// replicatedEngine returns the description of engine name, if it is a
// replicated engine.
func replicatedEngine(name string) (ReplicatedEngine, bool) {
	e, ok := replicatedEngines[name]
	return e, ok
}

// checkEngineSync checks -sync against the engines of the line: a
// replicated engine takes exactly its own names, every other engine kv's.
func checkEngineSync(engines []string, sync string) error {
	plain := false
	for _, name := range engines {
		e, ok := replicatedEngine(name)
		if !ok {
			plain = true
			continue
		}
		if !slices.Contains(e.Syncs, sync) {
			return fmt.Errorf("-sync %s: -engine %s takes %s", sync, name, e.SyncHelp)
		}
	}
	if plain || len(engines) == 0 {
		_, err := parseSync(sync)
		return err
	}
	return nil
}

// Presets of -net: the one-way delay is half the round trip each names.
var netPresets = []struct {
	name          string
	delay, jitter time.Duration
	what          string
}{
	{"same-rack", 50 * time.Microsecond, 10 * time.Microsecond, "two servers in one rack, about 0.1 ms round trip"},
	{"one-region", 500 * time.Microsecond, 100 * time.Microsecond, "two data centres of one region, about 1 ms round trip"},
	{"cross-region", 15 * time.Millisecond, 1500 * time.Microsecond, "two regions of one continent, about 30 ms round trip"},
}

// netPresetNames lists the -net presets for errors and usage.
func netPresetNames() string {
	names := make([]string, len(netPresets))
	for i, p := range netPresets {
		names[i] = p.name
	}
	return strings.Join(names, " | ")
}

// maxNetDelay bounds -net-delay and -net-jitter: longer than etcd's
// election timeout would only measure elections.
const maxNetDelay = 500 * time.Millisecond

// onlyReplicated is the error for a replication flag on a line whose
// engines include one that is not replicated.
func onlyReplicated(s *Spec, flag string) error {
	for _, e := range s.Engines {
		if _, ok := replicatedEngine(e); !ok {
			return fmt.Errorf("-%s: applies to the replicated engines (pg-sync, etcd) only, and -engine %s is not one", flag, e)
		}
	}
	return nil
}

// replicatedSyncFlag is bench's and sweep's -sync, whose help names the
// replicated engines' policies too.
func replicatedSyncFlag() flagDef {
	f := syncFlag()
	f.usage += "; pg-sync: always | remote_write | remote_apply | local | none; etcd: always"
	return f
}

// replicationFlags are bench's and sweep's flags for replicated engines.
// They come after -engine, whose engines they check.
func replicationFlags() []flagDef {
	return []flagDef{
		{name: "replicas", usage: "replicated engines: copies besides the leader (pg-sync: standbys, 1 or 2, default 1; etcd: followers, 2 or 4, default 2)",
			fill: func(s *Spec, a arg, _ Limits) error {
				if !a.given {
					return nil
				}
				if err := onlyReplicated(s, "replicas"); err != nil {
					return err
				}
				n, err := a.int(0, 1, 8)
				if err != nil {
					return err
				}
				for _, name := range s.Engines {
					e, _ := replicatedEngine(name)
					if !slices.Contains(e.Replicas, int(n)) {
						return fmt.Errorf("-replicas %d: -engine %s takes %s", n, name, joinInts(e.Replicas))
					}
				}
				s.Replicas = int(n)
				return nil
			},
			show: func(s *Spec, _ runOf) (string, bool) { return itoa(s.Replicas), s.Replicas > 0 }},
		{name: "quorum", usage: "pg-sync with -replicas 2: any (a commit waits for either standby, ANY 1) | first (for the first listed, FIRST 1; default any)",
			fill: func(s *Spec, a arg, _ Limits) error {
				if !a.given {
					return nil
				}
				s.Quorum = a.v
				if err := onlyReplicated(s, "quorum"); err != nil {
					return err
				}
				if s.Quorum != "any" && s.Quorum != "first" {
					return fmt.Errorf("-quorum %s: allowed: any, first", s.Quorum)
				}
				for _, name := range s.Engines {
					if e, _ := replicatedEngine(name); !e.Quorum {
						return fmt.Errorf("-quorum: -engine %s chooses its quorum itself (a majority of its members)", name)
					}
				}
				if s.Replicas < 2 {
					return fmt.Errorf("-quorum %s: needs -replicas 2 (with one standby there is nothing to choose)", s.Quorum)
				}
				return nil
			},
			show: func(s *Spec, _ runOf) (string, bool) { return s.Quorum, s.has("quorum") }},
		{name: "net", usage: "replicated engines: a network to emulate between the servers: " + netPresetNames(),
			fill: func(s *Spec, a arg, _ Limits) error {
				if !a.given {
					return nil
				}
				if err := onlyReplicated(s, "net"); err != nil {
					return err
				}
				for _, p := range netPresets {
					if p.name == a.v {
						s.Net = NetOptions{Preset: p.name, Delay: p.delay, Jitter: p.jitter}
						return nil
					}
				}
				return fmt.Errorf("-net %s: allowed: %s", a.v, netPresetNames())
			},
			show: func(s *Spec, _ runOf) (string, bool) { return s.Net.Preset, s.Net.Preset != "" }},
		{name: "net-delay", usage: "replicated engines: one-way delay added between the servers by a TCP proxy, e.g. 2ms (default 0, or the -net preset's)",
			fill: func(s *Spec, a arg, _ Limits) error {
				if !a.given {
					return nil
				}
				if err := onlyReplicated(s, "net-delay"); err != nil {
					return err
				}
				d, err := a.duration(0, 0, maxNetDelay)
				s.Net.Delay = d
				return err
			},
			show: func(s *Spec, _ runOf) (string, bool) { return s.Net.Delay.String(), s.has("net-delay") }},
		{name: "net-jitter", usage: "replicated engines: each chunk waits the delay ± up to this, e.g. 0.5ms (default 0, or the -net preset's)",
			fill: func(s *Spec, a arg, _ Limits) error {
				if !a.given {
					return nil
				}
				if err := onlyReplicated(s, "net-jitter"); err != nil {
					return err
				}
				d, err := a.duration(0, 0, maxNetDelay)
				s.Net.Jitter = d
				return err
			},
			show: func(s *Spec, _ runOf) (string, bool) { return s.Net.Jitter.String(), s.has("net-jitter") }},
		{name: "kill", usage: "replicated engines: follower@D kills one follower (SIGKILL) D into the timed region, e.g. follower@2s, and the timeline shows the quorum committing on; leader@D kills the leader (pg-sync's primary, etcd's elected leader), and the result reports the election pause (etcd) or that writes stopped (pg-sync has no automatic failover) and reads every acknowledged write back from the members left",
			fill: func(s *Spec, a arg, lim Limits) error {
				if !a.given {
					return nil
				}
				if err := onlyReplicated(s, "kill"); err != nil {
					return err
				}
				who, at, ok := strings.Cut(a.v, "@")
				d, err := time.ParseDuration(at)
				if !ok || (who != "follower" && who != "leader") || err != nil || d < time.Millisecond || d > lim.MaxDuration {
					return fmt.Errorf("-kill %s: allowed: follower@D or leader@D, D a duration between 1ms and %v (e.g. follower@2s)", a.v, lim.MaxDuration)
				}
				if who == "leader" {
					s.KillLeader = d
					return nil
				}
				for _, name := range s.Engines {
					if e, _ := replicatedEngine(name); e.Quorum && s.Replicas < 2 {
						return fmt.Errorf("-kill %s: -engine %s with one synchronous standby would wait for it forever at the next commit (that is what synchronous means); give -replicas 2, so that a quorum of one survives", a.v, name)
					}
				}
				s.KillFollower = d
				return nil
			},
			show: func(s *Spec, _ runOf) (string, bool) {
				if s.KillLeader > 0 {
					return "leader@" + s.KillLeader.String(), true
				}
				return "follower@" + s.KillFollower.String(), s.KillFollower > 0
			}},
		{name: "net-client", bool: true, usage: "replicated engines: delay the client's connections to the server too, not only the servers' to each other",
			fill: func(s *Spec, a arg, _ Limits) error {
				s.Net.Client = a.on()
				if !s.Net.Client {
					return nil
				}
				if err := onlyReplicated(s, "net-client"); err != nil {
					return err
				}
				if !s.Net.Active() {
					return fmt.Errorf("-net-client: needs a delay to add (-net-delay, -net-jitter or -net)")
				}
				return nil
			},
			show: func(s *Spec, _ runOf) (string, bool) { return "", s.Net.Client }},
	}
}

func joinInts(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = itoa(int64(n))
	}
	return strings.Join(s, " or ")
}

// engineOptions is the EngineOptions of a line for engine name, with the
// engine's defaults where the line gave none.
func (s *Spec) engineOptions(name string) EngineOptions {
	e, _ := replicatedEngine(name)
	o := EngineOptions{Replicas: s.Replicas, Quorum: s.Quorum, Net: s.Net, KillFollower: s.KillFollower, KillLeader: s.KillLeader}
	if o.Replicas == 0 && len(e.Replicas) > 0 {
		o.Replicas = e.Replicas[0]
	}
	if o.Quorum == "" {
		o.Quorum = "any"
	}
	return o
}

// ReplicationReporter is implemented by the stores of replicated engines.
// The runner reads StoreStats either side of the timed region; such a
// store reads its members' counters at each of those calls too, and
// ReplicationReport, called after the second, reports the difference.
// commits is the number of Puts the run timed.
type ReplicationReporter interface {
	ReplicationReport(commits int64) *ReplicationReport
}

// ReplicationReport is the "replication" object of a bench result.
type ReplicationReport struct {
	// Leader names the member that takes the writes: pg-sync's primary,
	// etcd's elected leader.
	Leader  string          `json:"leader"`
	Members []ReplicaMember `json:"members"`
	// Commit says what a commit waits for, in the engine's own words
	// (e.g. "synchronous_commit = remote_apply, synchronous_standby_names
	// = ANY 1 (s1, s2)").
	Commit string `json:"commit,omitempty"`
	// Settings are the engine's settings a reader should know, by name
	// (etcd's quota-backend-bytes and snapshot-count).
	Settings map[string]string `json:"settings,omitempty"`
	// Net is the network between the servers: what was asked and the
	// round trip measured through the proxy.
	Net *NetReport `json:"net,omitempty"`

	// WaitsFor is what a commit waits for beyond the leader's own flush,
	// as the engine is configured: "follower_flush" (a quorum of
	// followers flushed it: pg-sync always and remote_apply, etcd),
	// "follower_write" (a quorum received and wrote it, unflushed:
	// pg-sync remote_write) or "leader_only" (pg-sync local and none).
	WaitsFor string `json:"waits_for"`
	// LeaderFlushFirst says the leader sends a record to its followers
	// only once it has flushed it itself (PostgreSQL's walsender sends
	// flushed WAL only), so the two flushes add up instead of
	// overlapping (etcd's leader sends while it writes).
	LeaderFlushFirst bool `json:"leader_flush_first"`
	// ModelCommitNs is the commit latency of one client the model
	// predicts from this machine's probe and the measured round trip:
	// leader_only T_fsync; follower_write max(T_fsync, RTT);
	// follower_flush max(T_fsync, RTT + T_fsync), the leader's flush
	// overlapping the trip to the follower and its flush; with
	// LeaderFlushFirst, T_fsync + RTT and 2 T_fsync + RTT. T_fsync is the
	// probe's figure for the engine's case (replicaFsync: pg-sync's
	// overwrite, etcd's append), RTT the proxy's p50 (0 without a
	// proxy: loopback's tens of microseconds are left out). Every member
	// flushes to this machine's one disk, where flushes may queue behind
	// each other; the formula leaves that out, and the run's put p50
	// beside it shows how much it costs. It is the flushes and the trip
	// only: the model's fixed term (T_fixed: the request, the server's
	// and the replication's own steps) needs servers of its own to
	// measure (replication_fixed.go), which `labserver model` starts and
	// a bench run does not. 0 when the probe has no figure.
	ModelCommitNs float64 `json:"model_commit_ns,omitempty"`

	// The device under the run directory, which every member shares on
	// one machine: its flush requests per second while the cluster sat
	// idle for idleWindow after the warmup (the members' background
	// flushes), and the timed region's flush requests net of that rate,
	// per commit: the flushes the commits cost all members together.
	// DeviceUnavailable says why there are none (no block device, a
	// kernel without flush counters).
	DeviceIdleFlushesPerSec *float64 `json:"device_idle_flushes_per_sec,omitempty"`
	DeviceFlushesPerCommit  *float64 `json:"device_flushes_per_commit,omitempty"`
	DeviceUnavailable       string   `json:"device_unavailable,omitempty"`

	// Failover is what -kill leader did: the election, the writes that
	// stopped, the acknowledged writes read back. nil without it.
	Failover *FailoverReport `json:"failover,omitempty"`
}

// replicationModel fills rep.ModelCommitNs from the probe's T_fsync for
// engine's case and the measured round trip: the replication model's
// formula (model_replication.go: replicaFsync, commitModel).
func replicationModel(rep *ReplicationReport, probe *ProbeBrief, engine string) {
	if rep == nil || probe == nil {
		return
	}
	tf, _ := replicaFsync(engine, probe)
	if tf <= 0 {
		return
	}
	rtt := 0.0
	if rep.Net != nil {
		rtt = float64(rep.Net.RTTP50Ns)
	}
	rep.ModelCommitNs, _ = commitModel(rep.WaitsFor, rep.LeaderFlushFirst, tf, rtt, 0)
}

// idleWindow is how long the harness watches the device with the
// cluster idle, for the baseline of device_flushes_per_commit.
const idleWindow = time.Second

// idleFlushes watches the device under dir for idleWindow while nothing
// writes, and returns its flush requests per second, or why not.
func idleFlushes(ctx context.Context, dir string) (perSec float64, why string) {
	w := watchDevice(dir)
	w.start()
	select {
	case <-time.After(idleWindow):
	case <-ctx.Done():
		return 0, "cancelled"
	}
	w.stop()
	d := w.result(0, 0)
	switch {
	case d.Unavailable != "":
		return 0, d.Unavailable
	case d.FlushRequests == nil:
		return 0, d.FlushMissing
	}
	return float64(*d.FlushRequests) / w.stopAt.Sub(w.startAt).Seconds(), ""
}

// netDeviceFlushes fills rep's device figures from the idle rate (or why
// it is missing) and the run's device_io.
func netDeviceFlushes(rep *ReplicationReport, idleRate float64, why string, dev *DeviceIO, wall float64, commits int64) {
	switch {
	case why != "":
		rep.DeviceUnavailable = why
		return
	case dev == nil || dev.FlushRequests == nil:
		rep.DeviceUnavailable = "the run's device_io has no flush count"
		return
	}
	rep.DeviceIdleFlushesPerSec = &idleRate
	if commits > 0 {
		net := max(float64(*dev.FlushRequests)-idleRate*wall, 0) / float64(commits)
		rep.DeviceFlushesPerCommit = &net
	}
}

// ReplicaMember is one server of a replicated engine.
type ReplicaMember struct {
	Name string `json:"name"`
	Role string `json:"role"` // "primary", "standby", "leader", "follower", "former leader" (etcd's, killed by -kill leader)
	// KilledAfterNs, for the member -kill killed, is when: nanoseconds
	// after the timed region started (the timeline's clock).
	KilledAfterNs int64  `json:"killed_after_ns,omitempty"`
	Addr          string `json:"addr"` // where the client (or the primary) reaches it
	// State is the member's replication state as the engine reports it
	// (pg_stat_replication's state and sync_state), "" when none.
	State string `json:"state,omitempty"`
	// Flushes is how many times the member flushed its log to disk in the
	// timed region, from the server's own counters (FlushSource); per
	// commit, FlushesPerCommit. FlushesCounted false: the server does not
	// say, and the two are unknown, not zero.
	Flushes          int64   `json:"flushes"`
	FlushesPerCommit float64 `json:"flushes_per_commit"`
	FlushesCounted   bool    `json:"flushes_counted"`
	FlushSource      string  `json:"flush_source,omitempty"`
}

// NetReport is the network a replicated engine's servers talked across.
type NetReport struct {
	Preset   string `json:"preset,omitempty"`
	DelayNs  int64  `json:"delay_ns"`  // asked for, one way
	JitterNs int64  `json:"jitter_ns"` // asked for, each way
	Client   bool   `json:"client"`    // the client's traffic was delayed too
	// The round trip of a small message through one proxy and back,
	// measured just before the run (RTTSamples of them): nearest-rank
	// percentiles.
	RTTSamples int   `json:"rtt_samples"`
	RTTP50Ns   int64 `json:"rtt_p50_ns"`
	RTTP99Ns   int64 `json:"rtt_p99_ns"`
}

// replicationLine is the table's line about a replicated engine's
// members, or "" for any other engine.
func replicationLine(r *BenchResult) string {
	rep := r.Replication
	if rep == nil {
		return ""
	}
	var parts []string
	for _, m := range rep.Members {
		p := m.Name + " (" + m.Role + ")"
		if m.FlushesCounted {
			p += fmt.Sprintf(" %.2f flushes/commit", m.FlushesPerCommit)
		}
		parts = append(parts, p)
	}
	line := "replication: leader " + rep.Leader + "; " + strings.Join(parts, ", ")
	if rep.ModelCommitNs > 0 {
		line += "; model's flushes and trip ≈ " + calc.FormatNs(rep.ModelCommitNs) + " (T_fixed aside)"
		if put := r.Latency["put"]; put != nil && r.Threads == 1 {
			line += " (measured p50 " + calc.FormatNs(float64(put.P50Ns)) + ")"
		}
	}
	if rep.DeviceFlushesPerCommit != nil {
		line += fmt.Sprintf("; device %.2f flushes/commit, all members, net of %.1f/s idle", *rep.DeviceFlushesPerCommit, *rep.DeviceIdleFlushesPerSec)
	}
	if rep.Net != nil {
		line += fmt.Sprintf("; net +%s ±%s each way, RTT through the proxy p50 %s p99 %s",
			calc.FormatNs(float64(rep.Net.DelayNs)), calc.FormatNs(float64(rep.Net.JitterNs)),
			calc.FormatNs(float64(rep.Net.RTTP50Ns)), calc.FormatNs(float64(rep.Net.RTTP99Ns)))
	}
	if f := failoverLine(rep.Failover); f != "" {
		line += "\n" + f
	}
	return line
}

// runDirCleanups are called with a run directory the harness has just
// removed (OnRunDirRemoved).
var runDirCleanups []func(dir string)

// OnRunDirRemoved registers f to be called with each run directory the
// harness removes at the end of a run, after it is gone: a store whose
// servers keep data outside the run directory (the peers package's
// PostgreSQL under root, when the user it runs as cannot reach the run
// directory) removes them then. It is meant to be called from init
// functions.
func OnRunDirRemoved(f func(dir string)) { runDirCleanups = append(runDirCleanups, f) }

// removeRunDir removes a run directory and calls the OnRunDirRemoved
// functions with its absolute path.
func removeRunDir(dir string) {
	os.RemoveAll(dir)
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	for _, f := range runDirCleanups {
		f(dir)
	}
}
