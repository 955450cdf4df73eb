//go:build darwin || freebsd

package harness

// How the probe describes a macOS or FreeBSD host: sysctl and statfs.

import (
	"runtime"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"

	"kvlab/harness/internal/oslayout"
)

// cpuModel is the CPU's marketing name, or the architecture.
func cpuModel() string {
	for _, name := range []string{"machdep.cpu.brand_string", "hw.model"} {
		if s, err := unix.Sysctl(name); err == nil && s != "" {
			return s
		}
	}
	return runtime.GOARCH
}

// memTotal is the physical memory in bytes, or 0.
func memTotal() int64 {
	for _, name := range []string{"hw.memsize", "hw.physmem"} {
		if v, err := unix.SysctlUint64(name); err == nil && v > 0 {
			return int64(v)
		}
	}
	return 0
}

// fsAndDevice reads the filesystem type and the device it is mounted
// from with statfs(2). Whether the device spins is not known here; it is
// reported as not rotational (every current Mac has an SSD).
func fsAndDevice(dir string) (fs, device string, rotational bool) {
	var st unix.Statfs_t
	if unix.Statfs(dir, &st) != nil {
		return "", "", false
	}
	fs = unix.ByteSliceToString(st.Fstypename[:])
	device = strings.TrimPrefix(unix.ByteSliceToString(st.Mntfromname[:]), "/dev/")
	return fs, device, false
}

// loadAverage is the 1-minute load average from the vm.loadavg sysctl,
// or 0.
func loadAverage() float64 {
	b, err := unix.SysctlRaw("vm.loadavg")
	if err != nil {
		return 0
	}
	return oslayout.LoadavgStruct(b, int(unsafe.Sizeof(uintptr(0))))
}
