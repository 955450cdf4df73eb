package harness

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The replication model's fixed term: what a commit costs besides the
// flushes and the round trip.
//
// max(T_leader, RTT + T_k) counts the flushes and the trip between the
// members, and nothing else a commit does: the client's request and
// answer (etcd: HTTP and the JSON gateway; PostgreSQL: its wire protocol),
// parsing and applying it, and the replication machinery's own steps
// (etcd's Raft proposal, append and apply; PostgreSQL's walsender waking,
// the standby's walreceiver writing and answering, the backend waking to
// the answer). On loopback with a fast flush those steps are most of a
// commit: without them the model predicted 0.37 of pg-sync's measured
// median and 0.11 of etcd's at 0 ms delay on a quiet machine.
//
// probeCommitFixed measures that term as the same commit with the
// flushes taken out: it starts the same engine, with the same members,
// -sync and client, with its data on a memory filesystem (tmpfs,
// /dev/shm), where a flush has nothing to write back and returns at
// once, and no delay between the members. Every step above is then still
// paid, and the flushes cost nothing, so the median commit is the fixed
// term (T_fixed), loopback's own round trips included. Other ways were
// weighed and left: a read (a Get, a SELECT 1) through the same client
// pays the request and answer but none of the replication's steps;
// PostgreSQL's synchronous_commit=off skips the standby's steps as well
// as the flush; etcd 3.4 has no --unsafe-no-fsync. The probe is the
// model's own: it is taken before, and apart from, any bench run it
// predicts. With a delay, the round trip measured through the proxy
// includes loopback's trip, which T_fixed holds too: the two overlap by
// tens of microseconds, small beside a millisecond's delay.

// fixedProbeOps is how many commits probeCommitFixed times, after
// fixedProbeWarmup untimed ones (the first commits find cold caches and
// new connections).
const (
	fixedProbeOps    = 200
	fixedProbeWarmup = 30
)

// fixedProbeTimeout bounds one engine's fixed-term probe: starting the
// servers, the commits and stopping them.
const fixedProbeTimeout = 2 * time.Minute

// FixedTerm is a replicated engine's measured fixed term of a commit.
type FixedTerm struct {
	Ns float64 // the median commit on the memory filesystem; 0 when Note says why not
	// Note says why there is no figure (the engine's servers are not
	// installed, no memory filesystem); "" when there is one.
	Note string
}

// fixedDirPrefix begins the name of a fixed-term probe's directory,
// followed by the probing process's id: a labserver killed during a probe
// leaves its directory (a memory filesystem keeps it until reboot), and
// the next probe removes it (sweepFixedDirs).
const fixedDirPrefix = "kvlab-fixed-"

// sweepFixedDirs removes the fixed-term directories in mem whose process
// is gone.
func sweepFixedDirs(mem string) {
	ds, _ := filepath.Glob(filepath.Join(mem, fixedDirPrefix+"*"))
	for _, d := range ds {
		pid, _, ok := strings.Cut(strings.TrimPrefix(filepath.Base(d), fixedDirPrefix), "-")
		if n, err := strconv.Atoi(pid); ok && err == nil && !processAlive(n) {
			os.RemoveAll(d)
		}
	}
}

// memDir returns a directory on a memory filesystem, where a flush
// writes nothing back, or "" and why there is none (replication_fixed_*.go).
var memDir = memFilesystemDir

// probeCommitFixed starts engine (registered with RegisterReplicated)
// with replicas followers under sync, its data on a memory filesystem,
// and returns the median of fixedProbeOps commits of one client, each a
// Put of a 16-byte key and a 128-byte value (the bench's defaults). The
// servers are stopped and their directory removed before it returns.
// An engine that cannot start here (its servers not installed, no memory
// filesystem) gives a FixedTerm whose Note says why; an error is a
// failure of the probe itself.
func probeCommitFixed(ctx context.Context, engine, sync string, replicas int) (FixedTerm, error) {
	re, ok := replicatedEngine(engine)
	if !ok {
		return FixedTerm{Note: "-engine " + engine + " is not built into this program"}, nil
	}
	mem, why := memDir()
	if mem == "" {
		return FixedTerm{Note: why}, nil
	}
	sweepFixedDirs(mem)
	dir, err := os.MkdirTemp(mem, fixedDirPrefix+strconv.Itoa(os.Getpid())+"-")
	if err != nil {
		return FixedTerm{}, fmt.Errorf("the fixed term's probe: %w", err)
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithTimeout(ctx, fixedProbeTimeout)
	defer cancel()
	st, err := re.Open(ctx, dir, sync, EngineOptions{Replicas: replicas, Quorum: "any"})
	if err != nil {
		if errors.Is(err, ErrToolMissing) {
			return FixedTerm{Note: err.Error()}, nil
		}
		return FixedTerm{}, fmt.Errorf("the fixed term's probe: starting %s on %s: %w", engine, mem, err)
	}
	ns, err := timeCommits(st, fixedProbeWarmup, fixedProbeOps)
	if cerr := st.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return FixedTerm{}, fmt.Errorf("the fixed term's probe on %s: %w", engine, err)
	}
	return FixedTerm{Ns: ns}, nil
}

// timeCommits puts warmup keys untimed, then ops keys one at a time, and
// returns the median of the timed Puts.
func timeCommits(st Store, warmup, ops int) (float64, error) {
	key, value := make([]byte, keyLen), make([]byte, 128)
	for i := range value {
		value[i] = byte('a' + i%26)
	}
	lat := make([]int64, 0, ops)
	for i := range warmup + ops {
		formatKey(key, uint64(i))
		start := time.Now()
		if err := st.Put(key, value); err != nil {
			return 0, fmt.Errorf("put %d: %w", i, err)
		}
		if i >= warmup {
			lat = append(lat, time.Since(start).Nanoseconds())
		}
	}
	slices.Sort(lat)
	return float64(Percentile(lat, 50)), nil
}
