package harness

// How the probe describes a Windows host: the registry, kernel32 and the
// volume's storage properties. Each function is a thin wrapper around
// system calls; what it feeds (the probe's result, its table) is shared
// code that the Linux tests cover. This file is built and vetted for
// Windows, not run, by this project's tests.

import (
	"encoding/binary"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"unsafe"

	"golang.org/x/sys/windows"
	"golang.org/x/sys/windows/registry"

	"kvlab/harness/internal/oslayout"
)

// cpuModel is the processor's name from the registry, or the architecture.
func cpuModel() string {
	k, err := registry.OpenKey(registry.LOCAL_MACHINE, `HARDWARE\DESCRIPTION\System\CentralProcessor\0`, registry.QUERY_VALUE)
	if err != nil {
		return runtime.GOARCH
	}
	defer k.Close()
	if s, _, err := k.GetStringValue("ProcessorNameString"); err == nil && s != "" {
		return strings.TrimSpace(s)
	}
	return runtime.GOARCH
}

// memoryStatusEx is kernel32's MEMORYSTATUSEX.
type memoryStatusEx struct {
	length, memoryLoad                    uint32
	totalPhys, availPhys                  uint64
	totalPageFile, availPageFile          uint64
	totalVirtual, availVirtual, availExtd uint64
}

var globalMemoryStatusEx = windows.NewLazySystemDLL("kernel32.dll").NewProc("GlobalMemoryStatusEx")

// memTotal is the physical memory in bytes (GlobalMemoryStatusEx), or 0.
func memTotal() int64 {
	m := memoryStatusEx{length: uint32(unsafe.Sizeof(memoryStatusEx{}))}
	if ok, _, _ := globalMemoryStatusEx.Call(uintptr(unsafe.Pointer(&m))); ok == 0 {
		return 0
	}
	return int64(m.totalPhys)
}

// kernel is "Windows MAJOR.MINOR.BUILD" (RtlGetVersion, which unlike
// GetVersionEx does not lie to programs without a manifest).
func kernel() string {
	v := windows.RtlGetVersion()
	return fmt.Sprintf("Windows %d.%d.%d", v.MajorVersion, v.MinorVersion, v.BuildNumber)
}

// loadAverage is 0: Windows keeps no load average, and the conditions
// line leaves out a load of 0 rather than print one it did not read.
func loadAverage() float64 { return 0 }

// volumeOf is the root of the volume holding dir, e.g. `C:\`.
func volumeOf(dir string) (string, error) {
	p, err := windows.UTF16PtrFromString(filepath.Clean(dir))
	if err != nil {
		return "", err
	}
	buf := make([]uint16, windows.MAX_PATH+1)
	if err := windows.GetVolumePathName(p, &buf[0], uint32(len(buf))); err != nil {
		return "", err
	}
	return windows.UTF16ToString(buf), nil
}

// fsAndDevice names the filesystem (NTFS, ReFS, FAT32...) and the volume
// with its drive type and write cache ("C: fixed, write cache on",
// "Z: remote"), and whether the device incurs a seek penalty (Windows'
// own word for a spinning disk).
func fsAndDevice(dir string) (fs, device string, rotational bool) {
	root, err := volumeOf(dir)
	if err != nil {
		return "", "", false
	}
	rootp, _ := windows.UTF16PtrFromString(root)
	name := make([]uint16, windows.MAX_PATH+1)
	if windows.GetVolumeInformation(rootp, nil, 0, nil, nil, nil, &name[0], uint32(len(name))) == nil {
		fs = windows.UTF16ToString(name)
	}
	device = strings.TrimSuffix(root, `\`) + " " + driveType(windows.GetDriveType(rootp))
	if b, ok := storageProperty(root, storageDeviceSeekPenaltyProperty); ok {
		rotational = oslayout.SeekPenalty(b)
	}
	if b, ok := storageProperty(root, storageDeviceWriteCacheProperty); ok {
		if c := oslayout.WriteCacheState(b); c != "" {
			device += ", write cache " + c
		}
	}
	return fs, device, rotational
}

// driveType names GetDriveType's answer.
func driveType(t uint32) string {
	switch t {
	case windows.DRIVE_FIXED:
		return "fixed"
	case windows.DRIVE_REMOVABLE:
		return "removable"
	case windows.DRIVE_REMOTE:
		return "remote"
	case windows.DRIVE_CDROM:
		return "cdrom"
	case windows.DRIVE_RAMDISK:
		return "ramdisk"
	}
	return "unknown drive type"
}

// The storage properties IOCTL_STORAGE_QUERY_PROPERTY answers.
const (
	ioctlStorageQueryProperty        = 0x002D1400
	storageDeviceWriteCacheProperty  = 4
	storageDeviceSeekPenaltyProperty = 7
)

// storageProperty asks the volume under root for one storage property
// (a STORAGE_PROPERTY_QUERY with PropertyStandardQuery) and returns the
// descriptor's bytes.
func storageProperty(root string, id uint32) ([]byte, bool) {
	path, err := windows.UTF16PtrFromString(`\\.\` + strings.TrimSuffix(root, `\`))
	if err != nil {
		return nil, false
	}
	// Access 0: querying properties needs no read or write rights.
	h, err := windows.CreateFile(path, 0, windows.FILE_SHARE_READ|windows.FILE_SHARE_WRITE, nil, windows.OPEN_EXISTING, 0, 0)
	if err != nil {
		return nil, false
	}
	defer windows.CloseHandle(h)
	var query [12]byte // PropertyId, QueryType (standard = 0), AdditionalParameters
	binary.LittleEndian.PutUint32(query[0:], id)
	out := make([]byte, 64)
	var n uint32
	if err := windows.DeviceIoControl(h, ioctlStorageQueryProperty, &query[0], uint32(len(query)), &out[0], uint32(len(out)), &n, nil); err != nil {
		return nil, false
	}
	return out[:n], true
}

// freeBytes is the space the user may still write on dir's volume
// (GetDiskFreeSpaceEx), or 0 when it cannot be read.
func freeBytes(dir string) int64 {
	p, err := windows.UTF16PtrFromString(dir)
	if err != nil {
		return 0
	}
	var avail, total, free uint64
	if windows.GetDiskFreeSpaceEx(p, &avail, &total, &free) != nil {
		return 0
	}
	return int64(avail)
}

// writeFd and pwriteFd are WriteFile on the file's handle, at the file
// position or at off: the probe times the system call, not os.File's
// wrapper.
func writeFd(fd int, b []byte) (int, error) { return windows.Write(windows.Handle(fd), b) }

func pwriteFd(fd int, b []byte, off int64) (int, error) {
	ol := windows.Overlapped{Offset: uint32(off), OffsetHigh: uint32(off >> 32)}
	var n uint32
	err := windows.WriteFile(windows.Handle(fd), b, &n, &ol)
	return int(n), err
}
