// Package kvfs is the filesystem a student's store is given in the crash
// exercises (graded by kvlab/wasm/grader, run on the real disk by
// kvlab/harness/mine, both through kvlab/gohost): one flat directory of
// files, reached by plain names, with exactly the operations a durable
// store needs and nothing else of the host. The student's code imports
// it as "kvfs".
//
// It sits on an vfs.FS rooted in one directory: in the browser and in
// the grader's tests an vfs.MemFS, which can lose power after any
// operation. Every operation that changes the disk (create, write,
// fdatasync, directory fsync, rename, remove, truncate) is numbered from 1
// and described in the page's words ("write seg-0 @4096, 21 bytes"), and
// Config.After, when set, sees each one once it is done: that is how a
// grader takes the filesystem after every operation and names the
// operation a power cut followed. FS and File are interfaces over
// unexported types, and what an FS is made with cannot be changed through
// their methods, so code that is handed an FS (a student's, in the
// interpreter) reaches the operations and cannot switch the recording or
// the limit off.
//
// An FS and its Files are safe for concurrent use: their operations run
// one at a time, each with its After call, so that the numbering is the
// order in which they reached the disk even when a student's store syncs
// from a goroutine of its own.
package kvfs

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"kvlab/engine/vfs"
)

// Op is one operation that changed the disk.
type Op struct {
	N    int    // 1 for the first operation on the FS
	Kind string // create, write, fdatasync, fsync-dir, rename, remove, truncate
	File string // the file it changed ("" for fsync-dir); a rename's new name
	From string // a rename's old name
	Off  int64  // a write's offset, a truncate's size
	Len  int    // a write's length
	// Line is the line of the student's code that issued the operation,
	// 0 when unknown. The FS never sets it: a recorder that knows the
	// line (the grader's Config.After) fills it in.
	Line int
}

// String describes the operation as the exercises' messages quote it.
func (o Op) String() string {
	switch o.Kind {
	case "write":
		return fmt.Sprintf("write %s @%d, %d bytes", o.File, o.Off, o.Len)
	case "fsync-dir":
		return "fsync dir"
	case "rename":
		return fmt.Sprintf("rename %s → %s", o.From, o.File)
	case "truncate":
		return fmt.Sprintf("truncate %s to %d bytes", o.File, o.Off)
	}
	return o.Kind + " " + o.File
}

// Config is what an FS is made with besides its directory.
type Config struct {
	// MaxOps, when > 0, is how many operations the FS allows; every later
	// one fails with ErrTooManyOps.
	MaxOps int
	// After, when not nil, is called after every operation that changed
	// the disk, with the operation.
	After func(Op)
}

// FS is a flat directory of files. It is an interface, and the type
// behind it unexported, so that code handed an FS reaches its methods and
// nothing else: the interpreter lets code read and set the unexported
// fields of a struct it can name.
type FS interface {
	// Create creates the file name, or empties it if it exists, and
	// opens it for writing; Write appends from offset 0. The new name is
	// not durable until SyncDir.
	Create(name string) (File, error)
	// OpenAppend opens the existing file name for writing; Write appends
	// after its last byte. It fails (IsNotExist) if there is no such file.
	OpenAppend(name string) (File, error)
	// ReadFile returns the contents of the file name. It fails
	// (IsNotExist) if there is no such file.
	ReadFile(name string) ([]byte, error)
	// List returns the names of the files, sorted.
	List() ([]string, error)
	// Rename gives the file oldname the name newname, replacing any file
	// of that name, atomically: a reader sees the old file or the new
	// one, never neither. The change is not durable until SyncDir.
	Rename(oldname, newname string) error
	// Remove deletes the file name. The removal is not durable until
	// SyncDir.
	Remove(name string) error
	// SyncDir makes the directory's names durable (fsync(2) on the
	// directory): files created, renamed or removed before it keep their
	// names through a power cut.
	SyncDir() error
	// Ops returns how many operations changed the disk so far.
	Ops() int
}

// File is a file open for writing.
type File interface {
	// Name returns the file's name.
	Name() string
	// Write appends p at the end of what this File wrote so far (or of
	// the file as OpenAppend found it). The bytes are not durable until
	// Sync.
	Write(p []byte) (int, error)
	// WriteAt writes p at offset off. The bytes are not durable until
	// Sync.
	WriteAt(p []byte, off int64) (int, error)
	// Sync makes what was written to the file durable: fdatasync(2).
	Sync() error
	// Truncate cuts the file to size bytes (or extends it with zeros);
	// the next Write goes at the new end. The new size is not durable
	// until Sync.
	Truncate(size int64) error
	// Size returns the file's current size.
	Size() (int64, error)
	// Close closes the file. It makes nothing durable.
	Close() error
}

// dirFS is the FS: one directory of under.
type dirFS struct {
	under vfs.FS
	dir   string
	c     Config

	// mu is held for the whole of every operation of the FS and its
	// files; it guards ops and every file's off and closed.
	mu  sync.Mutex
	ops int // operations counted so far
}

// New returns an FS on the directory dir of under. dir must exist.
func New(under vfs.FS, dir string, c Config) FS {
	return &dirFS{under: under, dir: dir, c: c}
}

// Ops implements FS.
func (f *dirFS) Ops() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.ops
}

// done counts one operation and tells After.
//
// REQUIRES: f.mu held.
func (f *dirFS) done(op Op) {
	f.ops++
	op.N = f.ops
	if f.c.After != nil {
		f.c.After(op)
	}
}

// path checks that name is a plain file name and returns its full path.
//
// REQUIRES: f.mu held.
func (f *dirFS) path(op, name string) (string, error) {
	if f.c.MaxOps > 0 && f.ops >= f.c.MaxOps {
		return "", fmt.Errorf("%w: %s %s after %d operations", ErrTooManyOps, op, name, f.ops)
	}
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, `/\`) {
		return "", fmt.Errorf("kvfs: %s %q: a file name must be a plain name such as seg-0 (no slashes, not empty)", op, name)
	}
	return filepath.Join(f.dir, name), nil
}

// Create implements FS.
func (f *dirFS) Create(name string) (File, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, err := f.path("create", name)
	if err != nil {
		return nil, err
	}
	h, err := f.under.OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	f.done(Op{Kind: "create", File: name})
	return &file{fs: f, h: h, name: name}, nil
}

// OpenAppend implements FS.
func (f *dirFS) OpenAppend(name string) (File, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, err := f.path("open", name)
	if err != nil {
		return nil, err
	}
	h, err := f.under.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	size, err := h.Size()
	if err != nil {
		h.Close()
		return nil, err
	}
	return &file{fs: f, h: h, name: name, off: size}, nil
}

// ReadFile implements FS.
func (f *dirFS) ReadFile(name string) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, err := f.path("read", name)
	if err != nil {
		return nil, err
	}
	h, err := f.under.OpenFile(p, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer h.Close()
	size, err := h.Size()
	if err != nil {
		return nil, err
	}
	b := make([]byte, size)
	if _, err := h.ReadAt(b, 0); err != nil && err != io.EOF {
		return nil, err
	}
	return b, nil
}

// List implements FS.
func (f *dirFS) List() ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.under.List(f.dir)
}

// Rename implements FS.
func (f *dirFS) Rename(oldname, newname string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	po, err := f.path("rename", oldname)
	if err != nil {
		return err
	}
	pn, err := f.path("rename", newname)
	if err != nil {
		return err
	}
	if err := f.under.Rename(po, pn); err != nil {
		return err
	}
	f.done(Op{Kind: "rename", From: oldname, File: newname})
	return nil
}

// Remove implements FS.
func (f *dirFS) Remove(name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, err := f.path("remove", name)
	if err != nil {
		return err
	}
	if err := f.under.Remove(p); err != nil {
		return err
	}
	f.done(Op{Kind: "remove", File: name})
	return nil
}

// SyncDir implements FS.
func (f *dirFS) SyncDir() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, err := f.path("fsync-dir", "dir"); err != nil {
		return err
	}
	if err := f.under.SyncDir(f.dir); err != nil {
		return err
	}
	f.done(Op{Kind: "fsync-dir"})
	return nil
}

// IsNotExist reports whether err says a file does not exist.
func IsNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }

// file is a File. Its fields are guarded by fs.mu.
type file struct {
	fs     *dirFS
	h      vfs.File
	name   string
	off    int64 // where the next Write goes
	closed bool
}

// Name implements File.
func (w *file) Name() string { return w.name }

// check fails an operation on a closed file or past MaxOps.
//
// REQUIRES: w.fs.mu held.
func (w *file) check(op string) error {
	if w.closed {
		return fmt.Errorf("%w: %s %s", ErrClosed, op, w.name)
	}
	_, err := w.fs.path(op, w.name)
	return err
}

// Write implements File.
func (w *file) Write(p []byte) (int, error) {
	w.fs.mu.Lock()
	defer w.fs.mu.Unlock()
	n, err := w.writeAt(p, w.off)
	w.off += int64(n)
	return n, err
}

// WriteAt implements File.
func (w *file) WriteAt(p []byte, off int64) (int, error) {
	w.fs.mu.Lock()
	defer w.fs.mu.Unlock()
	return w.writeAt(p, off)
}

// writeAt is WriteAt.
//
// REQUIRES: w.fs.mu held.
func (w *file) writeAt(p []byte, off int64) (int, error) {
	if err := w.check("write"); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, fmt.Errorf("kvfs: write %s at offset %d: the offset must be 0 or more", w.name, off)
	}
	n, err := w.h.WriteAt(p, off)
	if n > 0 || err == nil {
		w.fs.done(Op{Kind: "write", File: w.name, Off: off, Len: n})
	}
	return n, err
}

// Sync implements File.
func (w *file) Sync() error {
	w.fs.mu.Lock()
	defer w.fs.mu.Unlock()
	if err := w.check("fdatasync"); err != nil {
		return err
	}
	if err := w.h.Sync(); err != nil {
		return err
	}
	w.fs.done(Op{Kind: "fdatasync", File: w.name})
	return nil
}

// Truncate implements File.
func (w *file) Truncate(size int64) error {
	w.fs.mu.Lock()
	defer w.fs.mu.Unlock()
	if err := w.check("truncate"); err != nil {
		return err
	}
	if size < 0 {
		return fmt.Errorf("kvfs: truncate %s to %d bytes: the size must be 0 or more", w.name, size)
	}
	if err := w.h.Truncate(size); err != nil {
		return err
	}
	w.off = size
	w.fs.done(Op{Kind: "truncate", File: w.name, Off: size})
	return nil
}

// Size implements File.
func (w *file) Size() (int64, error) {
	w.fs.mu.Lock()
	defer w.fs.mu.Unlock()
	if w.closed {
		return 0, fmt.Errorf("%w: size %s", ErrClosed, w.name)
	}
	return w.h.Size()
}

// Close implements File.
func (w *file) Close() error {
	w.fs.mu.Lock()
	defer w.fs.mu.Unlock()
	if w.closed {
		return fmt.Errorf("%w: close %s", ErrClosed, w.name)
	}
	w.closed = true
	return w.h.Close()
}
