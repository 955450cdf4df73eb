package vfs

import "golang.org/x/sys/windows"

// SyncCall names the system call Datasync makes on this operating system.
const SyncCall = "FlushFileBuffers"

// Datasync makes the data written to the open file fd durable. Windows has
// no fdatasync: FlushFileBuffers writes the file's data and its metadata
// (size, timestamps) and asks the drive to flush its volatile cache, so it
// is closer to fsync(2) plus a cache flush than to fdatasync(2). On NTFS
// its cost is usually well above Linux's fdatasync on the same hardware;
// the probe line names the call, so results are not compared across the
// two unknowingly.
//
// This file is a thin wrapper around one system call; everything it feeds
// is shared code that runs on Linux. It is built and vetted for Windows,
// not run, by this project's tests.
func Datasync(fd uintptr) error {
	return windows.FlushFileBuffers(windows.Handle(fd))
}
