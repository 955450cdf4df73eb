package harness

import (
	"context"
	"fmt"
	"os"
	"time"

	"kvlab/engine"
)

// The model line's inputs for the kv engine (model.go), each measured as
// the bench line it predicts pays it, and none from that line's run.
//
// A batch:N bench line of the kv engine pays three costs, not two:
//
//   - T_put, every Put: encode the record, update the index, append to
//     the write buffer, hand a full buffer (64 KiB) to the OS now and
//     then, and the harness's own per-unit work around it (key, timing);
//   - the commit, every N Puts: the write(2) of what is left in the
//     buffer and the fdatasync after it (flushCost in probe.go);
//   - the zero-fill ahead, every megabyte of records: the engine writes
//     the next engine.DefaultPreallocate bytes of the segment as zeros
//     and flushes them (ensureSpace, engine/segment.go), so that its
//     commits overwrite allocated space. Under batch:N that is one append
//     of 1 MiB and one fdatasync per 6,400-odd Puts of 128-byte values.
//
// The model keeps its two terms: T_write is the cost of a Put outside
// its commit, so it is T_put plus the Put's share of a zero-fill,
// T_fill x bytes per Put / 1 MiB. The share is small next to a commit of
// a few Puts, and not at large N: on the ext4 VM this course is developed
// on (load 10–30), one zero-fill took 2–10 ms, the time of several
// commits of batch:1024 (1–4 ms), and there are six of them to a fill.
//
// Each is measured on its own, as the line pays it:
//
//   - T_put by short kv runs that fit inside the first megabyte the
//     engine zero-fills (modelPutCost): no commit, no zero-fill in the
//     timed region. Timing Puts across zero-fills instead (one long run,
//     as the model line did before) charged T_write with fills whose
//     fdatasync also carried every record written since the last one,
//     since a run with no commit never flushes them: up to 2 MiB per
//     flush, where a batch:N line's fill flushes 1 MiB of zeros and fewer
//     than N records. It made T_write 2.3 µs, and the model predicted
//     batch:1024 at 350k Puts/s where the line beside it ran 720–890k
//     (1.1–1.4 µs per Put, commits included; measured ÷ predicted
//     2.02–2.55 on a quiet machine). On a simulated disk whose flush
//     costs by the MiB, the same inputs missed 256 and 1024 by 1.4–1.6x
//     (TestModelPredictsSimulatedDisk).
//   - T_fill by fillCost: an append of 1 MiB of zeros to a growing file
//     and the fdatasync after it, timed together, as the engine makes it.
//
// The prediction is the steady state: a run long enough to cross many
// megabytes pays a zero-fill for each. A run that writes less than a
// megabyte after its warm-up (4,000 Puts is 650 KB) may pay none and come
// out faster than predicted, at large N by up to that share.

// kvRecordBytes is the size of one 128-byte value's record in a kv
// segment: its header (19 bytes), key and value.
const kvRecordBytes = 19 + keyLen + 128

// syncMarkBytes is the size of the sync mark the kv engine writes before
// the first record after each fdatasync (engine/syncmark.go: a record
// header and an 8-byte offset). Under batch:N a commit's bytes are N
// records and one mark.
const syncMarkBytes = 19 + 8

// modelPutRuns, modelPutWarmup and modelPutOps shape modelPutCost: that
// many runs, each of warm-up then timed Puts that together fit in the
// first zero-filled megabyte of a fresh store (6,432 records of 163
// bytes; 32 spare), so that the timed region holds no zero-fill. Five
// runs of 6,000 Puts time 30,000 Puts, as many as the one run before.
const (
	modelPutRuns   = 5
	modelPutWarmup = 400
	modelPutOps    = engine.DefaultPreallocate/kvRecordBytes - modelPutWarmup - 32
)

// modelPutSync is the policy of modelPutCost's runs: batch with the
// largest N, far more Puts than a run makes, so none of them commits.
const modelPutSync = "batch:1048576"

// modelPutCost measures the kv engine's T_put on dir: the wall time per
// Put of modelPutRuns one-writer fillrandom runs of 128-byte values under
// modelPutSync, each in a fresh directory removed afterwards, totalled
// (throughput is a mean figure, so the runs are pooled, not their
// medians taken). No Put in them commits or zero-fills. It also returns
// the bytes the engine wrote per Put.
func modelPutCost(ctx context.Context, dir string) (putNs, bytesPerPut float64, err error) {
	var wall float64
	var ops, written int64
	for i := range modelPutRuns {
		runDir, err := os.MkdirTemp(dir, "kvlab-model-")
		if err != nil {
			return 0, 0, fmt.Errorf("model: -dir %s: %w", dir, err)
		}
		r, err := runOne(ctx, runConfig{engine: "kv", sync: modelPutSync, workload: "fillrandom", dist: "uniform", threads: 1,
			ops: modelPutOps, exactCap: DefaultExactCap, valueSize: 128, keys: modelPutOps, warmup: modelPutWarmup,
			seed: int64(i + 1), dir: runDir})
		os.RemoveAll(runDir)
		if err != nil {
			return 0, 0, fmt.Errorf("model: measuring T_write: %w", err)
		}
		wall += r.WallSeconds
		ops += r.Ops
		written += r.BytesWritten
	}
	if ops == 0 || wall <= 0 || written <= 0 {
		return 0, 0, fmt.Errorf("model: measuring T_write: nothing measured: %w", context.Cause(ctx))
	}
	return wall * 1e9 / float64(ops), float64(written) / float64(ops), nil
}

// modelFills and modelFillTime bound fillCost's timing for a model line:
// that many zero-fills, or that long. Each writes and flushes 1 MiB, so
// a few are enough, and more would load a shared disk for little.
var (
	modelFills    = 8
	modelFillTime = 300 * time.Millisecond
)

// fillCost times the kv engine's zero-fill ahead: chunk bytes of zeros
// appended to a file under dir with one write(2), and the fdatasync after
// it, timed together, up to iterations times or for maxTime. The file
// grows as a segment does, so each flush also records its new size and
// blocks: the append case, which the fill pays so that commits need not.
//
// busy is the CPU time the Puts between two zero-fills take: the loop
// computes that long, untimed, before each, as flushCost does before each
// commit (it says why).
func fillCost(ctx context.Context, dir string, chunk int64, busy time.Duration, iterations int, maxTime time.Duration) (ProbeCost, error) {
	f, remove, err := scratchFile(dir, "fill", 0)
	if err != nil {
		return ProbeCost{}, err
	}
	defer remove()
	base := time.Now()
	return timeFlushes(ctx, &osProbeFile{fd: int(f.Fd()), dir: dir}, func() time.Duration { return time.Since(base) },
		busy, nil, make([]byte, chunk), iterations, maxTime)
}

// compute keeps the CPU busy for d of wall time (nothing when d <= 0),
// as a writer's Puts do between its flushes.
func compute(d time.Duration) {
	for end := time.Now().Add(d); d > 0 && time.Now().Before(end); {
	}
}

// maxBusy bounds the computing a model line's probes do before each
// flush, so that a slow T_put cannot stretch a model line past its
// budget.
const maxBusy = 50 * time.Millisecond

// busyFor is the CPU time of puts Puts at putNs each, at most maxBusy.
func busyFor(puts float64, putNs float64) time.Duration {
	return min(time.Duration(puts*putNs), maxBusy)
}
