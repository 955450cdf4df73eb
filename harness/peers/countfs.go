package peers

import (
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"kvlab/harness"
)

// countingFS wraps a Pebble filesystem and counts what reaches the disk
// through it: syncs (with their time) and written bytes, on every file
// Pebble opens for writing and on directories. It is safe for concurrent
// use; the counters only grow.
type countingFS struct {
	vfs.FS

	syncs     atomic.Int64 // Sync, SyncData, and SyncTo calls that did a full sync
	syncNanos atomic.Int64 // total time in those calls
	written   atomic.Int64 // bytes passed to Write and WriteAt that were written
	// times gets each counted sync's latency, for the result's fsync
	// distribution (harness.SyncTimes: recorded only while a run is timed).
	times harness.SyncTimes
}

// Unwrap returns the wrapped filesystem, as Pebble's own wrappers do.
func (fs *countingFS) Unwrap() vfs.FS { return fs.FS }

func (fs *countingFS) wrap(f vfs.File, err error) (vfs.File, error) {
	if err != nil {
		return nil, err
	}
	return &countingFile{File: f, fs: fs}, nil
}

func (fs *countingFS) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	return fs.wrap(fs.FS.Create(name, category))
}

func (fs *countingFS) OpenReadWrite(name string, category vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	return fs.wrap(fs.FS.OpenReadWrite(name, category, opts...))
}

func (fs *countingFS) ReuseForWrite(oldname, newname string, category vfs.DiskWriteCategory) (vfs.File, error) {
	return fs.wrap(fs.FS.ReuseForWrite(oldname, newname, category))
}

func (fs *countingFS) OpenDir(name string) (vfs.File, error) {
	return fs.wrap(fs.FS.OpenDir(name))
}

// countingFile counts one file's syncs and writes into its countingFS.
type countingFile struct {
	vfs.File
	fs *countingFS
}

func (f *countingFile) Write(p []byte) (int, error) {
	n, err := f.File.Write(p)
	f.fs.written.Add(int64(n))
	return n, err
}

func (f *countingFile) WriteAt(p []byte, off int64) (int, error) {
	n, err := f.File.WriteAt(p, off)
	f.fs.written.Add(int64(n))
	return n, err
}

func (f *countingFile) Sync() error {
	start := time.Now()
	err := f.File.Sync()
	f.count(start)
	return err
}

func (f *countingFile) SyncData() error {
	start := time.Now()
	err := f.File.SyncData()
	f.count(start)
	return err
}

// SyncTo is counted only when it did a full sync: on Linux it is usually
// sync_file_range, which starts writeback but promises nothing durable.
func (f *countingFile) SyncTo(length int64) (bool, error) {
	start := time.Now()
	full, err := f.File.SyncTo(length)
	if full {
		f.count(start)
	}
	return full, err
}

func (f *countingFile) count(start time.Time) {
	d := time.Since(start)
	f.fs.syncNanos.Add(int64(d))
	f.fs.syncs.Add(1)
	f.fs.times.Observe(d)
}
