package harness

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"kvlab/engine"
)

// Probe describes the machine and measures what its disk charges, in the
// spirit of PostgreSQL's pg_test_fsync but with percentiles: the cost of a
// small write(2) into a file in the data directory, and of a write followed
// by fdatasync, in the two cases a storage engine meets. Every benchmark
// number should be read beside these.
//
// The two cases of write+fdatasync:
//
//   - append: the write extends the file, so the flush must also commit
//     the file's new size and its newly allocated blocks (on ext4, a
//     journal commit: a data write, an inode write and a device flush per
//     op). An appending log without preallocation pays this; so does
//     Pebble's WAL (it preallocates with FALLOC_FL_KEEP_SIZE, which
//     reserves blocks but leaves the size to be committed by every flush)
//     until it recycles an old WAL file.
//   - overwrite: the write lands in space that is already allocated and
//     zero-filled, so the flush has no size or allocation to commit, only
//     the data (and the device flush). The kv engine pays this: it
//     zero-fills each segment a MiB ahead (engine.DefaultPreallocate) and
//     writes its records into that space.
//
// bbolt pays both on every commit: its dirty pages go to space that its
// Truncate grew as a hole (allocating blocks: like an append), then its
// meta page is rewritten in place (an overwrite), each with its own
// fdatasync. ProbeFsyncFor picks the figure for each engine.

// ProbeConfig says where and how long to probe.
type ProbeConfig struct {
	Dir        string        // the probe file goes in a fresh directory under Dir
	Iterations int           // per measurement (default 2000)
	MaxTime    time.Duration // per measurement, whichever comes first (default 1s)
	WriteSize  int           // bytes per write (default 128)
}

// ProbeResult is the JSON object of kind "probe".
type ProbeResult struct {
	Kind       string `json:"kind"` // "probe"
	Host       string `json:"host"`
	CPU        string `json:"cpu"`
	Cores      int    `json:"cores"`
	RAMBytes   int64  `json:"ram_bytes"`
	Kernel     string `json:"kernel"`
	OS         string `json:"os"`
	Go         string `json:"go"`
	Dir        string `json:"dir"`
	FS         string `json:"fs"`     // filesystem type of Dir, e.g. ext4
	Device     string `json:"device"` // block device under it, e.g. vda
	Rotational bool   `json:"rotational"`
	FreeBytes  int64  `json:"free_bytes"`
	WriteSize  int    `json:"write_size"`

	Write          ProbeCost `json:"write"`           // write(2) of WriteSize bytes, appending
	WriteFdatasync ProbeCost `json:"write_fdatasync"` // the same write, then fdatasync
	WriteNs        float64   `json:"write_ns"`        // Write.MeanNs
	FdatasyncNs    float64   `json:"fdatasync_ns"`    // WriteFdatasync.MeanNs - Write.MeanNs
	// SyncCall is the call timed as "fdatasync": fdatasync on Linux,
	// fcntl(F_FULLFSYNC) on macOS (engine.Datasync says why).
	SyncCall string `json:"sync_call,omitempty"`

	// Methods is the sync-primitive table of probe -methods
	// (probe_methods.go); absent without the flag.
	Methods []SyncMethodCost `json:"methods,omitempty"`

	// The overwrite case (see the file comment): a pwrite(2) of WriteSize
	// bytes into already allocated, zero-filled space, then fdatasync.
	WriteFdatasyncOverwrite ProbeCost `json:"write_fdatasync_overwrite"`
	// FdatasyncOverwriteNs is WriteFdatasyncOverwrite.MeanNs - Write.MeanNs,
	// at least 0: the flush alone when there is no size to commit.
	FdatasyncOverwriteNs float64 `json:"fdatasync_overwrite_ns"`

	// A probe line's conditions, as a bench result's: the device's
	// counts over the whole probe with the idle baseline before it
	// (device_io), and the processors' time (cpu_use: cpu names the
	// processor model here). A probe a bench run takes for its own
	// conditions line carries neither.
	DeviceIO *DeviceIO `json:"device_io,omitempty"`
	CPUUse   *CPUUse   `json:"cpu_use,omitempty"`
}

// ProbeCost summarizes one repeated system call sequence.
type ProbeCost struct {
	Iterations int     `json:"iterations"`
	MeanNs     float64 `json:"mean_ns"`
	P50Ns      int64   `json:"p50_ns"`
	P99Ns      int64   `json:"p99_ns"`
	MaxNs      int64   `json:"max_ns"`
	OpsPerSec  float64 `json:"ops_per_sec"`
}

// Probe describes the host and measures the disk under cfg.Dir.
func Probe(ctx context.Context, cfg ProbeConfig) (*ProbeResult, error) {
	if cfg.Iterations <= 0 {
		cfg.Iterations = 2000
	}
	if cfg.MaxTime <= 0 {
		cfg.MaxTime = time.Second
	}
	if cfg.WriteSize <= 0 {
		cfg.WriteSize = 128
	}
	if cfg.Dir == "" {
		cfg.Dir = os.TempDir()
	}
	abs, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, err
	}
	r := &ProbeResult{Kind: "probe", Cores: runtime.NumCPU(), Go: runtime.Version(),
		OS: runtime.GOOS + "/" + runtime.GOARCH, Dir: abs, WriteSize: cfg.WriteSize}
	r.Host, _ = os.Hostname()
	r.CPU = cpuModel()
	r.RAMBytes = memTotal()
	r.Kernel = kernel()
	r.FS, r.Device, r.Rotational = fsAndDevice(abs)
	r.SyncCall = engine.SyncCall
	r.FreeBytes = freeBytes(abs)
	r.Write, r.WriteFdatasync, r.WriteFdatasyncOverwrite, err = measureDisk(ctx, abs, cfg)
	if err != nil {
		return nil, err
	}
	r.WriteNs = r.Write.MeanNs
	r.FdatasyncNs = max(r.WriteFdatasync.MeanNs-r.Write.MeanNs, 0)
	r.FdatasyncOverwriteNs = max(r.WriteFdatasyncOverwrite.MeanNs-r.Write.MeanNs, 0)
	return r, nil
}

// measureDisk times write and write+fdatasync in a fresh scratch file
// under dir opened for appending, so every flush also commits the file's
// new size (lesson 5, "File growth"), then write+fdatasync into a second
// file zero-filled beforehand (the overwrite case of the file comment).
func measureDisk(ctx context.Context, dir string, cfg ProbeConfig) (w, wf, wo ProbeCost, err error) {
	f, remove, err := scratchFile(dir, "probe", os.O_APPEND)
	if err != nil {
		return w, wf, wo, err
	}
	defer remove()
	base := time.Now()
	clock := func() time.Duration { return time.Since(base) }
	if w, wf, err = timeDisk(ctx, &osProbeFile{fd: int(f.Fd()), dir: dir}, clock, cfg); err != nil {
		return w, wf, wo, err
	}
	o, removeO, err := scratchFile(dir, "probe-overwrite", 0)
	if err != nil {
		return w, wf, wo, err
	}
	defer removeO()
	region := overwriteRegion(cfg)
	if err := zeroFill(o, region); err != nil {
		return w, wf, wo, fmt.Errorf("probe: zero-fill in %s: %w", dir, err)
	}
	wo, err = timeCalls(ctx, &osProbeFile{fd: int(o.Fd()), dir: dir, overwrite: region}, clock, cfg, true)
	return w, wf, wo, err
}

// scratchFile creates the file name, opened for writing (with flag
// added, e.g. os.O_APPEND), in a fresh directory kvlab-name-* under dir,
// for a probe to time its writes in; remove closes it and removes the
// directory.
func scratchFile(dir, name string, flag int) (f *os.File, remove func(), err error) {
	tmp, err := os.MkdirTemp(dir, "kvlab-"+name+"-")
	if err != nil {
		return nil, nil, fmt.Errorf("probe: -dir %s: %w", dir, err)
	}
	f, err = os.OpenFile(filepath.Join(tmp, name), os.O_CREATE|os.O_WRONLY|flag, 0o600)
	if err != nil {
		os.RemoveAll(tmp)
		return nil, nil, fmt.Errorf("probe: %w", err)
	}
	return f, func() {
		f.Close()
		os.RemoveAll(tmp)
	}, nil
}

// maxOverwriteRegion bounds the zero-filled file of the overwrite case;
// past it the writes wrap around to its start (still allocated space).
const maxOverwriteRegion = 64 << 20

// overwriteRegion is the size of that file: room for every iteration's
// write, at most maxOverwriteRegion, a whole number of writes.
func overwriteRegion(cfg ProbeConfig) int64 {
	return regionFor(cfg.Iterations, cfg.WriteSize, maxOverwriteRegion)
}

// regionFor is the region an overwrite of iterations writes of size bytes
// goes round: room for all of them, cut to a whole number of writes at
// most limit bytes (at least one write's worth when limit is smaller).
func regionFor(iterations, size int, limit int64) int64 {
	n := min(int64(iterations), max(limit/int64(size), 1))
	return n * int64(size)
}

// zeroFill writes size zero bytes into f with write(2), as the kv engine
// preallocates (not ftruncate, which leaves a hole whose blocks a later
// write still has to allocate), and flushes them.
func zeroFill(f *os.File, size int64) error {
	zeros := make([]byte, min(size, 1<<20))
	for done := int64(0); done < size; {
		n, err := f.Write(zeros[:min(int64(len(zeros)), size-done)])
		if err != nil {
			return err
		}
		done += int64(n)
	}
	return engine.Datasync(f.Fd())
}

// flushCost times what a batch:N commit costs on top of its Puts: the
// write(2) of size bytes into allocated, zero-filled space and the
// fdatasync after it, in a scratch file under dir, up to iterations times
// or for maxTime. A flush costs more the more bytes it carries, so a model
// of batch:N is fed the commit of N Puts' bytes rather than the probe's
// one small write. The write is timed with the flush because a write that
// follows an fdatasync is not the cheap write the Puts make: on the ext4
// VM this course is developed on, a 147-byte pwrite(2) right after an
// fdatasync took 9–10 µs at the median (12–20 µs mean), into the page
// just flushed or into the next one alike, against about 1 µs for a write
// after a write. The engine's commit makes exactly that write (its
// buffer's bytes, after the last commit's flush), and the model that left
// it out predicted 10–20 % too many ops/s at small N, where it is a tenth
// of the flush.
//
// Only the commit's own write is timed: when size is more than the
// engine's write buffer (engine.DefaultWriteBuffer, 64 KiB), the engine
// has handed the first whole buffers to the OS as they filled, between
// Puts, and that cost is in the model's T_put already (modelPutCost). So
// those bytes are written untimed, and the timed write is the rest, what
// the commit's own write(2) carries; the fdatasync flushes all of them.
//
// busy is the CPU time the Puts between two commits take (N x T_put):
// the loop computes that long, untimed, before each commit, as a bench
// line's writer does. On a machine whose CPUs are contended it matters:
// a thread that has just computed waits longer for a CPU when its
// fdatasync completes than one that only flushes, and the same commit of
// 163 KiB took 3–7 ms at the median after 1 ms of computing, against
// 0.5–1.1 ms without (load 29, 2 cores); on an idle machine the two are
// the same.
func flushCost(ctx context.Context, dir string, size int64, busy time.Duration, iterations int, maxTime time.Duration) (ProbeCost, error) {
	f, remove, err := scratchFile(dir, "flush", 0)
	if err != nil {
		return ProbeCost{}, err
	}
	defer remove()
	region := regionFor(iterations, int(size), maxFlushRegion)
	if err := zeroFill(f, region); err != nil {
		return ProbeCost{}, fmt.Errorf("probe: zero-fill in %s: %w", dir, err)
	}
	pre, tail := commitWrites(size, engine.DefaultWriteBuffer)
	base := time.Now()
	return timeFlushes(ctx, &osProbeFile{fd: int(f.Fd()), dir: dir, overwrite: region}, func() time.Duration { return time.Since(base) },
		busy, make([]byte, pre), make([]byte, tail), iterations, maxTime)
}

// maxFlushRegion bounds flushCost's zero-filled file; its commits go
// round it. The engine writes its records into the megabyte it zero-filled
// last; a few megabytes are as much allocated space, without writing and
// flushing 64 MiB of zeros for every model line.
const maxFlushRegion = 4 << 20

// commitWrites splits a commit of size bytes as the engine's write buffer
// of wbuf bytes does: pre bytes handed to the OS as the buffer filled,
// whole buffers, before the commit, and the tail the commit's own write
// carries (at least one byte, at most wbuf).
func commitWrites(size int64, wbuf int) (pre, tail int64) {
	if size <= 0 {
		return 0, 0
	}
	pre = (size - 1) / int64(wbuf) * int64(wbuf)
	return pre, size - pre
}

// timeFlushes times a commit on clock: busy spent computing and pre
// written to f, untimed (nothing when zero or empty), then buf written
// and the fdatasync after it, timed, iterations times or for maxTime.
func timeFlushes(ctx context.Context, f probeFile, clock func() time.Duration, busy time.Duration, pre, buf []byte, iterations int, maxTime time.Duration) (ProbeCost, error) {
	lat := make([]int64, 0, iterations)
	t0 := clock()
	for len(lat) < iterations && clock()-t0 < maxTime && ctx.Err() == nil {
		compute(busy)
		if len(pre) > 0 {
			if err := f.write(pre); err != nil {
				return ProbeCost{}, err
			}
		}
		start := clock()
		if err := f.write(buf); err != nil {
			return ProbeCost{}, err
		}
		if err := f.fdatasync(); err != nil {
			return ProbeCost{}, err
		}
		lat = append(lat, int64(clock()-start))
	}
	return costOf(lat, clock()-t0), ctx.Err()
}

// probeFile is what the probe times: one write, one fdatasync.
type probeFile interface {
	write(b []byte) error
	fdatasync() error
}

// osProbeFile is a probe file on disk. Not safe for concurrent use.
type osProbeFile struct {
	fd  int
	dir string
	// overwrite, if not 0, makes write a pwrite(2) at off, moving on by
	// the write's length and wrapping to 0 at overwrite bytes: the
	// overwrite case, in a file zero-filled that far.
	overwrite, off int64
	// dirty is the bytes written since the last fdatasync, what a
	// simulated disk's flush charges for (DiskSimulation.PerMiB).
	dirty int64
}

func (f *osProbeFile) write(b []byte) error {
	var err error
	if f.overwrite == 0 {
		_, err = writeFd(f.fd, b)
	} else {
		if f.off+int64(len(b)) > f.overwrite {
			f.off = 0
		}
		_, err = pwriteFd(f.fd, b, f.off)
		f.off += int64(len(b))
	}
	if err != nil {
		return fmt.Errorf("probe: write in %s: %w", f.dir, err)
	}
	f.dirty += int64(len(b))
	return nil
}

func (f *osProbeFile) fdatasync() error {
	simulateFlush(f.dirty)
	f.dirty = 0
	if err := engine.Datasync(uintptr(f.fd)); err != nil {
		fs, _, _ := fsAndDevice(f.dir)
		return fmt.Errorf("probe: %s in %s (filesystem %q) failed: %w; durability cannot be measured there, use -dir on a disk filesystem such as ext4, xfs or apfs", engine.SyncCall, f.dir, fs, err)
	}
	return nil
}

// timeDisk times cfg.Iterations writes (or cfg.MaxTime's worth), then as
// many write+fdatasync pairs, on clock. Between the two it flushes once,
// untimed: otherwise the first timed fdatasync would also carry every
// write of the first measurement and inflate the fdatasync figure.
func timeDisk(ctx context.Context, f probeFile, clock func() time.Duration, cfg ProbeConfig) (w, wf ProbeCost, err error) {
	if w, err = timeCalls(ctx, f, clock, cfg, false); err != nil {
		return
	}
	if err = f.fdatasync(); err != nil {
		return
	}
	wf, err = timeCalls(ctx, f, clock, cfg, true)
	return
}

// timeCalls times cfg.Iterations writes of cfg.WriteSize bytes, each
// followed by an fdatasync if sync, or as many as fit in cfg.MaxTime.
func timeCalls(ctx context.Context, f probeFile, clock func() time.Duration, cfg ProbeConfig, sync bool) (ProbeCost, error) {
	buf := make([]byte, cfg.WriteSize)
	for i := range buf {
		buf[i] = byte(i)
	}
	lat := make([]int64, 0, cfg.Iterations)
	t0 := clock()
	for len(lat) < cfg.Iterations && clock()-t0 < cfg.MaxTime && ctx.Err() == nil {
		start := clock()
		if err := f.write(buf); err != nil {
			return ProbeCost{}, err
		}
		if sync {
			if err := f.fdatasync(); err != nil {
				return ProbeCost{}, err
			}
		}
		lat = append(lat, int64(clock()-start))
	}
	return costOf(lat, clock()-t0), ctx.Err()
}

// costOf summarizes latencies measured over wall.
func costOf(lat []int64, wall time.Duration) ProbeCost {
	c := ProbeCost{Iterations: len(lat)}
	if len(lat) == 0 {
		return c
	}
	var sum int64
	for _, v := range lat {
		sum += v
	}
	slices.Sort(lat)
	c.MeanNs = float64(sum) / float64(len(lat))
	c.P50Ns, c.P99Ns, c.MaxNs = Percentile(lat, 50), Percentile(lat, 99), Percentile(lat, 100)
	c.OpsPerSec = float64(len(lat)) / wall.Seconds()
	return c
}

var (
	briefMu    sync.Mutex // guards briefCache
	briefCache = map[string]briefEntry{}
)

type briefEntry struct {
	at time.Time
	b  *ProbeBrief
}

// quickProbe is the short probe a bench line carries as its conditions:
// at most 200 iterations or 100 ms per measurement, remembered for a
// minute per directory so a sweep does not probe between its runs.
func quickProbe(ctx context.Context, dir string) (*ProbeBrief, error) {
	briefMu.Lock()
	e, ok := briefCache[dir]
	briefMu.Unlock()
	if ok && time.Since(e.at) < time.Minute {
		return e.b, nil
	}
	return probeNow(ctx, dir)
}

// probeNow is quickProbe taken now, whatever the cache holds: a line of
// several runs (-repeat, several engines) probes just before each run, so
// each result's conditions are the disk's at that run (a flush's cost
// moved 0.9–14 ms between the runs of one line on a shared disk).
func probeNow(ctx context.Context, dir string) (*ProbeBrief, error) {
	p, err := Probe(ctx, ProbeConfig{Dir: dir, Iterations: 200, MaxTime: 100 * time.Millisecond})
	if err != nil {
		return nil, err
	}
	b := &ProbeBrief{FS: p.FS, Device: p.Device, Rotational: p.Rotational, WriteNs: p.WriteNs,
		FdatasyncNs: p.FdatasyncNs, SyncCall: p.SyncCall, Cores: p.Cores, Go: p.Go,
		FdatasyncOverwriteNs: p.FdatasyncOverwriteNs}
	briefMu.Lock()
	briefCache[dir] = briefEntry{time.Now(), b}
	briefMu.Unlock()
	return b, nil
}

// parseLoadAvg reads the first field of /proc/loadavg's
// "0.52 0.58 0.59 1/467 12345", or returns 0.
func parseLoadAvg(s string) float64 {
	f, _, _ := strings.Cut(s, " ")
	v, err := strconv.ParseFloat(f, 64)
	if err != nil || v < 0 {
		return 0
	}
	return v
}
