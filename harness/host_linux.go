package harness

// How the probe describes a Linux host: /proc and /sys.

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

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

// fsAndDevice finds the mount that holds dir in /proc/self/mountinfo (the
// longest mount point that is a prefix of dir) for the filesystem type,
// and the block device from the dir's st_dev through /sys/dev/block.
func fsAndDevice(dir string) (fs, device string, rotational bool) {
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	fs, source := mountOf(dir)
	device = strings.TrimPrefix(source, "/dev/")
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

// mountOf returns the filesystem type and source (e.g. "/dev/vda1") of
// the mount that holds dir, an absolute path without symlinks, from
// /proc/self/mountinfo: the longest mount point that is a prefix of dir.
// Both are "" when it cannot tell.
func mountOf(dir string) (fs, source string) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return "", ""
	}
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
			best, fs, source = len(mp), g[0], g[1]
		}
	}
	return fs, source
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
