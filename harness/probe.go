package harness

import (
	"bufio"
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

	"golang.org/x/sys/unix"
)

// Probe describes the machine and measures what its disk charges, in the
// spirit of PostgreSQL's pg_test_fsync but with percentiles: the cost of a
// small write(2) into a file in the data directory, and of a write followed
// by fdatasync. Every benchmark number should be read beside these.

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
	var st unix.Statfs_t
	if unix.Statfs(abs, &st) == nil {
		r.FreeBytes = int64(st.Bavail) * st.Bsize
	}
	r.Write, r.WriteFdatasync, err = measureDisk(ctx, abs, cfg)
	if err != nil {
		return nil, err
	}
	r.WriteNs = r.Write.MeanNs
	r.FdatasyncNs = max(r.WriteFdatasync.MeanNs-r.Write.MeanNs, 0)
	return r, nil
}

// measureDisk times write and write+fdatasync in a scratch file under dir.
// The file is fresh and opened for appending, so every flush also commits
// the file's new size (lesson 5, "File growth"): the probe measures the
// dearer kind of fdatasync, the one an appending log without
// preallocation pays.
func measureDisk(ctx context.Context, dir string, cfg ProbeConfig) (w, wf ProbeCost, err error) {
	tmp, err := os.MkdirTemp(dir, "kvlab-probe-")
	if err != nil {
		return w, wf, fmt.Errorf("probe: -dir %s: %w", dir, err)
	}
	defer os.RemoveAll(tmp)
	f, err := os.OpenFile(filepath.Join(tmp, "probe"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return w, wf, fmt.Errorf("probe: %w", err)
	}
	defer f.Close()
	base := time.Now()
	return timeDisk(ctx, osProbeFile{fd: int(f.Fd()), dir: dir}, func() time.Duration { return time.Since(base) }, cfg)
}

// probeFile is what the probe times: one write, one fdatasync.
type probeFile interface {
	write(b []byte) error
	fdatasync() error
}

type osProbeFile struct {
	fd  int
	dir string
}

func (f osProbeFile) write(b []byte) error {
	if _, err := unix.Write(f.fd, b); err != nil {
		return fmt.Errorf("probe: write in %s: %w", f.dir, err)
	}
	return nil
}

func (f osProbeFile) fdatasync() error {
	if err := unix.Fdatasync(f.fd); err != nil {
		fs, _, _ := fsAndDevice(f.dir)
		return fmt.Errorf("probe: fdatasync in %s (filesystem %q) failed: %w; durability cannot be measured there, use -dir on a disk filesystem such as ext4 or xfs", f.dir, fs, err)
	}
	return nil
}

// timeDisk times cfg.Iterations writes (or cfg.MaxTime's worth), then as
// many write+fdatasync pairs, on clock. Between the two it flushes once,
// untimed: otherwise the first timed fdatasync would also carry every
// write of the first measurement and inflate the fdatasync figure.
func timeDisk(ctx context.Context, f probeFile, clock func() time.Duration, cfg ProbeConfig) (w, wf ProbeCost, err error) {
	buf := make([]byte, cfg.WriteSize)
	for i := range buf {
		buf[i] = byte(i)
	}
	run := func(sync bool) (ProbeCost, error) {
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
	if w, err = run(false); err != nil {
		return
	}
	if err = f.fdatasync(); err != nil {
		return
	}
	wf, err = run(true)
	return
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
	p, err := Probe(ctx, ProbeConfig{Dir: dir, Iterations: 200, MaxTime: 100 * time.Millisecond})
	if err != nil {
		return nil, err
	}
	b := &ProbeBrief{FS: p.FS, Device: p.Device, Rotational: p.Rotational, WriteNs: p.WriteNs,
		FdatasyncNs: p.FdatasyncNs, Cores: p.Cores, Go: p.Go}
	briefMu.Lock()
	briefCache[dir] = briefEntry{time.Now(), b}
	briefMu.Unlock()
	return b, nil
}

// cpuModel reads the first "model name" of /proc/cpuinfo.
func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return runtime.GOARCH
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return runtime.GOARCH
}

// memTotal reads MemTotal from /proc/meminfo, in bytes.
func memTotal() int64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "MemTotal:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb * 1024
		}
	}
	return 0
}

func kernel() string {
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return ""
	}
	return unix.ByteSliceToString(u.Sysname[:]) + " " + unix.ByteSliceToString(u.Release[:])
}

// fsAndDevice finds the mount that holds dir in /proc/self/mountinfo (the
// longest mount point that is a prefix of dir) for the filesystem type,
// and the block device from the dir's st_dev through /sys/dev/block.
func fsAndDevice(dir string) (fs, device string, rotational bool) {
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	if b, err := os.ReadFile("/proc/self/mountinfo"); err == nil {
		best := -1
		for _, line := range strings.Split(string(b), "\n") {
			// id parent major:minor root mountpoint opts ... - fstype source superopts
			pre, post, ok := strings.Cut(line, " - ")
			f, g := strings.Fields(pre), strings.Fields(post)
			if !ok || len(f) < 5 || len(g) < 2 {
				continue
			}
			mp := f[4]
			if (dir == mp || strings.HasPrefix(dir, strings.TrimSuffix(mp, "/")+"/")) && len(mp) > best {
				best, fs = len(mp), g[0]
				device = strings.TrimPrefix(g[1], "/dev/")
			}
		}
	}
	var st unix.Stat_t
	if unix.Stat(dir, &st) == nil {
		sys := fmt.Sprintf("/sys/dev/block/%d:%d", unix.Major(uint64(st.Dev)), unix.Minor(uint64(st.Dev)))
		if real, err := filepath.EvalSymlinks(sys); err == nil {
			device = filepath.Base(real)
			// A partition's queue/ is its parent disk's.
			for _, q := range []string{filepath.Join(real, "queue", "rotational"), filepath.Join(real, "..", "queue", "rotational")} {
				if b, err := os.ReadFile(q); err == nil {
					rotational = strings.TrimSpace(string(b)) == "1"
					break
				}
			}
		}
	}
	return fs, device, rotational
}

// loadAverage returns the 1-minute load average from /proc/loadavg, or 0
// where the file does not exist (not Linux) or does not parse.
func loadAverage() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	return parseLoadAvg(string(b))
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
