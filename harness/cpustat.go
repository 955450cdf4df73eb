package harness

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// What the processors did while a run was timed: the machine's own
// account, beside the store's. A tail that the store did not cause often
// has its cause here: another process holding the cores (busy_fraction
// far above this process's share), or, on a virtual machine, the
// hypervisor running someone else on this machine's processors (steal).
// A stolen millisecond is a millisecond in which no thread of this
// machine runs: the store, the load generator and the kernel all stop,
// so it shows as a stall in every latency at once, and no pacer or spin
// can keep time through it. The kernel counts it in the cpu line of
// /proc/stat, in ticks of 10 ms (USER_HZ, 100 on every Linux
// architecture Go supports): a run shorter than a few hundred
// milliseconds reads as 0 or one tick, which is why steal_ms is quoted
// with the interval it was read over.

// StolenFraction is the share of the processors' time a hypervisor may
// take before the USE line calls it out: at 1 %, a run's p99 can be a
// stolen slice rather than the store's.
const StolenFraction = 0.01

// CPUUse is what the machine's processors did in the timed region.
type CPUUse struct {
	// IntervalMs is the time between the two readings.
	IntervalMs float64 `json:"interval_ms"`
	// Cores is how many processors the kernel counted (its cpuN lines).
	Cores int `json:"cores"`
	// BusyFraction is the share of all the processors' time spent
	// running anything (user, nice, system, irq, softirq), this process
	// included; ProcessFraction the share this process used.
	BusyFraction    float64 `json:"busy_fraction"`
	ProcessFraction float64 `json:"process_fraction"`
	// IOWaitFraction is the share spent idle with I/O outstanding.
	IOWaitFraction float64 `json:"iowait_fraction"`
	// StealMs is the processor time the hypervisor gave to something
	// else while this machine's processors had work (summed over the
	// processors); StealFraction its share of all their time. Always 0
	// on a machine that is not virtual.
	StealMs       float64 `json:"steal_ms"`
	StealFraction float64 `json:"steal_fraction"`
	// IdleMs and IdleBusyFraction are the idle baseline's: the share of
	// all the processors' time spent running anything but this process
	// over the IdleMs before the run's store opened (the same idle time
	// device_io's baseline reads), when nothing of the run was working.
	// Other programs' share of the machine, then: near 0 on a quiet
	// machine, near 1 beside a busy loop per core or a build. Absent
	// when no baseline was taken (a run whose directory has no device of
	// its own takes none).
	IdleMs           float64  `json:"idle_ms,omitempty"`
	IdleBusyFraction *float64 `json:"idle_busy_fraction,omitempty"`
	// Unavailable says why there is nothing above (not Linux, or
	// /proc/stat unreadable).
	Unavailable string `json:"unavailable,omitempty"`
}

// cpuTicks is one reading: the machine's cpu line of /proc/stat and this
// process's user and system time, in clock ticks.
type cpuTicks struct {
	user, nice, system, idle, iowait, irq, softirq, steal int64
	cores                                                 int
	self                                                  int64 // this process: utime + stime
}

// total is every tick the processors had: the eight states a tick can be
// in (guest time is already counted in user).
func (c cpuTicks) total() int64 {
	return c.user + c.nice + c.system + c.idle + c.iowait + c.irq + c.softirq + c.steal
}

// parseProcStat reads the cpu line of /proc/stat's text and counts its
// cpuN lines.
func parseProcStat(text string) (cpuTicks, error) {
	var c cpuTicks
	found := false
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) > 0 && f[0] == "cpu":
			if len(f) < 9 {
				return c, fmt.Errorf("/proc/stat: the cpu line has %d fields, want at least 8 counters (a kernel before 2.6.11 has no steal)", len(f)-1)
			}
			v := make([]int64, 8)
			for i := range v {
				n, err := strconv.ParseInt(f[i+1], 10, 64)
				if err != nil {
					return c, fmt.Errorf("/proc/stat: cpu field %d: %v", i+1, err)
				}
				v[i] = n
			}
			c.user, c.nice, c.system, c.idle, c.iowait, c.irq, c.softirq, c.steal = v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]
			found = true
		case len(f) > 0 && strings.HasPrefix(f[0], "cpu"):
			c.cores++
		}
	}
	if !found {
		return c, fmt.Errorf("/proc/stat has no cpu line")
	}
	return c, nil
}

// parseSelfStat reads utime + stime from /proc/self/stat's text: fields
// 14 and 15, counted after the command name, which is in parentheses and
// may itself hold spaces.
func parseSelfStat(text string) (int64, error) {
	end := strings.LastIndexByte(text, ')')
	if end < 0 {
		return 0, fmt.Errorf("/proc/self/stat: no command name")
	}
	f := strings.Fields(text[end+1:]) // f[0] is field 3, the state
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/self/stat: %d fields after the name, want at least 13", len(f))
	}
	var sum int64
	for _, s := range f[11:13] { // fields 14 (utime) and 15 (stime)
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/self/stat: %v", err)
		}
		sum += n
	}
	return sum, nil
}

// cpuWatch reads the processors' ticks before and after a timed region,
// as deviceWatch reads the disk's. Not safe for concurrent use.
type cpuWatch struct {
	regionWatch[cpuTicks]
}

// result is the run's cpu object.
func (w *cpuWatch) result() *CPUUse {
	if w.unavailable != "" {
		return &CPUUse{Unavailable: w.unavailable}
	}
	u := cpuDelta(w.before, w.after, w.stopAt.Sub(w.startAt))
	if w.idleFor > 0 {
		idle := cpuDelta(w.idle0, w.idle1, w.idleFor)
		others := max(idle.BusyFraction-idle.ProcessFraction, 0)
		u.IdleMs, u.IdleBusyFraction = idle.IntervalMs, &others
	}
	return u
}

// ticksPerSecond is USER_HZ, the unit of /proc/stat's counters.
const ticksPerSecond = 100

// cpuDelta turns two readings, interval apart, into a CPUUse.
func cpuDelta(before, after cpuTicks, interval time.Duration) *CPUUse {
	u := &CPUUse{IntervalMs: float64(interval.Microseconds()) / 1000, Cores: after.cores}
	total := after.total() - before.total()
	if total <= 0 {
		return u // under one tick: nothing to divide by
	}
	busy := (after.user - before.user) + (after.nice - before.nice) + (after.system - before.system) +
		(after.irq - before.irq) + (after.softirq - before.softirq)
	frac := func(n int64) float64 { return float64(n) / float64(total) }
	u.BusyFraction = frac(busy)
	u.ProcessFraction = min(frac(after.self-before.self), 1)
	u.IOWaitFraction = frac(after.iowait - before.iowait)
	steal := after.steal - before.steal
	u.StealFraction = frac(steal)
	u.StealMs = float64(steal) * 1000 / ticksPerSecond
	return u
}
