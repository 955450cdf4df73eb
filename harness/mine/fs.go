package mine

import (
	"fmt"
	"io/fs"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"kvlab/engine/vfs"
	"kvlab/harness"
)

// maxBytes is what a store may write to its directory in one run.
const maxBytes = 1 << 30

// diskFS is the real filesystem under a student's kvfs.FS: vfs.OSFS
// (Sync is fdatasync, SyncDir an fsync of the directory), counting what
// reaches the disk and keeping every file it opened, so Close can close
// what the store left open. It is safe for concurrent use.
type diskFS struct {
	vfs.OSFS
	times *harness.SyncTimes // each fdatasync's latency while the run is timed

	syncs     atomic.Int64 // fdatasyncs of files
	dirSyncs  atomic.Int64 // fsyncs of the directory
	syncNanos atomic.Int64 // total time in both
	written   atomic.Int64 // bytes written

	mu    sync.Mutex // guards files
	files []vfs.File // every file opened, to close on Close
}

// OpenFile implements vfs.FS.
func (d *diskFS) OpenFile(name string, flag int, perm os.FileMode) (vfs.File, error) {
	f, err := d.OSFS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	d.files = append(d.files, f)
	d.mu.Unlock()
	return &diskFile{File: f, fs: d}, nil
}

// SyncDir implements vfs.FS.
func (d *diskFS) SyncDir(dir string) error {
	start := time.Now()
	err := d.OSFS.SyncDir(dir)
	d.syncNanos.Add(int64(time.Since(start)))
	d.dirSyncs.Add(1)
	return err
}

// closeAll closes every file opened (twice is harmless: os.File says so).
func (d *diskFS) closeAll() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, f := range d.files {
		f.Close()
	}
	d.files = nil
}

// stats are the counters as the harness reads them.
func (d *diskFS) stats() harness.StoreStats {
	s, ds := d.syncs.Load(), d.dirSyncs.Load()
	return harness.StoreStats{
		Fsyncs:       s + ds,
		FsyncTime:    time.Duration(d.syncNanos.Load()),
		BytesWritten: d.written.Load(),
		FsyncsBy:     map[string]int64{"fdatasync": s, "fsync-dir": ds},
	}
}

// diskFile counts a file's writes and times its fdatasyncs.
type diskFile struct {
	vfs.File
	fs *diskFS
}

// WriteAt implements vfs.File, refusing a write past maxBytes.
func (f *diskFile) WriteAt(p []byte, off int64) (int, error) {
	if n := f.fs.written.Load(); n+int64(len(p)) > maxBytes {
		return 0, fmt.Errorf("%w: %d bytes so far, at most %d", ErrTooManyBytes, n, int64(maxBytes))
	}
	n, err := f.File.WriteAt(p, off)
	f.fs.written.Add(int64(n))
	return n, err
}

// Sync implements vfs.File: fdatasync, timed.
func (f *diskFile) Sync() error {
	start := time.Now()
	err := f.File.Sync()
	d := time.Since(start)
	f.fs.syncNanos.Add(int64(d))
	f.fs.syncs.Add(1)
	f.fs.times.Observe(d)
	return err
}

// nullFS is a filesystem that keeps nothing: every file is empty, every
// write and sync succeeds at once. A store run on it costs what the
// interpreter and the harness cost. Safe for concurrent use.
type nullFS struct{}

func (nullFS) OpenFile(name string, flag int, _ os.FileMode) (vfs.File, error) {
	if flag&os.O_CREATE == 0 {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return nullFile{}, nil
}
func (nullFS) Remove(string) error                { return nil }
func (nullFS) Rename(string, string) error        { return nil }
func (nullFS) List(string) ([]string, error)      { return nil, nil }
func (nullFS) MkdirAll(string, os.FileMode) error { return nil }
func (nullFS) SyncDir(string) error               { return nil }

// nullFile is a file of nullFS.
type nullFile struct{}

func (nullFile) ReadAt(p []byte, off int64) (int, error)  { return 0, nil }
func (nullFile) WriteAt(p []byte, off int64) (int, error) { return len(p), nil }
func (nullFile) Close() error                             { return nil }
func (nullFile) Sync() error                              { return nil }
func (nullFile) Truncate(int64) error                     { return nil }
func (nullFile) Size() (int64, error)                     { return 0, nil }
