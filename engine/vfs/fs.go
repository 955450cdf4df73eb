package vfs

import (
	"io"
	"os"
	"path/filepath"
	"sort"
)

// FS is the small filesystem the store uses for every file access. OSFS is
// the real one; MemFS is an in-memory one that can simulate a power loss.
// Names are full paths as built by filepath.Join.
type FS interface {
	// OpenFile opens or creates a file, as os.OpenFile.
	OpenFile(name string, flag int, perm os.FileMode) (File, error)
	// Remove deletes a file.
	Remove(name string) error
	// Rename atomically replaces newname with oldname.
	Rename(oldname, newname string) error
	// List returns the names (not paths) of the files in dir, sorted.
	List(dir string) ([]string, error)
	// MkdirAll creates dir and its parents.
	MkdirAll(dir string, perm os.FileMode) error
	// SyncDir makes the directory's entries durable: a created, renamed
	// or removed file is not durable until its directory was synced.
	SyncDir(dir string) error
}

// File is an open file. The store only uses positioned reads and writes, so
// a File is safe for concurrent ReadAt and WriteAt at different offsets.
type File interface {
	io.ReaderAt
	io.WriterAt
	io.Closer
	// Sync makes the file's written data durable. OSFS uses Datasync:
	// fdatasync(2) on Linux, which flushes the data and only the metadata
	// needed to read it back (the size, if it changed), not timestamps.
	Sync() error
	// Truncate changes the file's size.
	Truncate(size int64) error
	// Size returns the file's current size.
	Size() (int64, error)
}

// OSFS is the operating system's filesystem. It is safe for concurrent use.
type OSFS struct{}

// OpenFile implements FS. On Windows the file is opened so that it can be
// renamed over and removed while open, as compaction needs (file_windows.go).
func (OSFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	f, err := openFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return osFile{f}, nil
}

// Remove implements FS.
func (OSFS) Remove(name string) error { return os.Remove(name) }

// Rename implements FS.
func (OSFS) Rename(oldname, newname string) error { return os.Rename(oldname, newname) }

// MkdirAll implements FS.
func (OSFS) MkdirAll(dir string, perm os.FileMode) error { return os.MkdirAll(dir, perm) }

// List implements FS.
func (OSFS) List(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		if e.Type().IsRegular() {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	return names, nil
}

// SyncDir implements FS with fsync(2) on the directory (file_unix.go; on
// Windows it does nothing, and file_windows.go says why).
func (OSFS) SyncDir(dir string) error { return syncDir(filepath.Clean(dir)) }

type osFile struct{ f *os.File }

func (o osFile) ReadAt(p []byte, off int64) (int, error)  { return o.f.ReadAt(p, off) }
func (o osFile) WriteAt(p []byte, off int64) (int, error) { return o.f.WriteAt(p, off) }
func (o osFile) Close() error                             { return o.f.Close() }
func (o osFile) Truncate(size int64) error                { return o.f.Truncate(size) }

// Sync calls Datasync: fdatasync(2) on Linux.
func (o osFile) Sync() error {
	if err := Datasync(o.f.Fd()); err != nil {
		return &os.PathError{Op: SyncCall, Path: o.f.Name(), Err: err}
	}
	return nil
}

func (o osFile) Size() (int64, error) {
	fi, err := o.f.Stat()
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}
