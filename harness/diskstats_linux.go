package harness

import (
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// watchDevice finds the block device under dir (its st_dev, or for a
// filesystem with an anonymous st_dev, such as btrfs, the device its
// mount names) and returns a watch over the disks that count its I/O, or
// one that says why there is none.
func watchDevice(dir string) *deviceWatch {
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	w := &deviceWatch{}
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		w.unavailable = "stat " + dir + ": " + err.Error()
		return w
	}
	major, minor := unix.Major(uint64(st.Dev)), unix.Minor(uint64(st.Dev))
	if major == 0 {
		fs, source := mountOf(dir)
		var dev unix.Stat_t
		if !strings.HasPrefix(source, "/dev/") || unix.Stat(source, &dev) != nil || dev.Mode&unix.S_IFMT != unix.S_IFBLK {
			w.unavailable = noDeviceReason(fs, dir)
			return w
		}
		major, minor = unix.Major(uint64(dev.Rdev)), unix.Minor(uint64(dev.Rdev))
	}
	dev, err := sysfs("/sys").resolve(major, minor)
	if err != nil {
		w.unavailable = err.Error()
		return w
	}
	w.dev = dev
	w.writeBack = func() error { return syncFS(dir) }
	w.read = func() (diskReading, error) {
		c, source, err := readCounters("/proc/diskstats", "/sys", dev.disks)
		return diskReading{c, source}, err
	}
	return w
}

// syncFS writes back every dirty page of the filesystem that holds dir
// (syncfs(2)): the page cache's backlog, whoever wrote it.
func syncFS(dir string) error {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return unix.Syncfs(fd)
}
