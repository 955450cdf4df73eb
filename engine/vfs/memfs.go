package vfs

import (
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
)

// MemFS is an in-memory FS that can lose power. It remembers, for every
// file, what was written and what was made durable by Sync, and for the
// directory, which names were made durable by SyncDir. Crash throws away
// everything that was not durable, as a power cut would, and returns the
// MemFS as it is after the reboot; a SIGKILL test cannot show a missing
// fdatasync (the kernel's page cache survives the process), this can.
//
// Fault, when set, is called before every operation and can fail it: that
// is how tests inject an fdatasync error or a full disk.
//
// MemFS is safe for concurrent use.
type MemFS struct {
	mu sync.Mutex // guards everything below and every memFile's fields
	// live is the namespace as processes see it now.
	live map[string]*memNode
	// durable is the namespace as it would be after a power cut: the
	// names whose directory was synced since they were created, renamed
	// or removed.
	durable map[string]*memNode
	// dirs is the set of directories that exist.
	dirs map[string]bool
	// down is set by Crash: the machine this MemFS belonged to lost
	// power, so every operation fails with ErrPowerLost.
	down bool
	// limit, when > 0, is the total number of bytes all files may hold;
	// a write beyond it writes what fits and fails with ENOSPC.
	limit int64
	// ops counts the operations that change the filesystem (see step);
	// stopAt, when > 0, is the count after which the machine stops;
	// lastOp describes the last operation counted.
	ops, stopAt int
	lastOp      string

	// Fault, when not nil, is called with the operation ("write", "sync",
	// "syncdir", "create", "rename", "remove", "truncate") and the file
	// name before the operation runs; a non-nil result fails it. Set it
	// while no store uses the MemFS.
	Fault func(op, name string) error

	// LinuxWriteback makes a Sync that Fault fails do what Linux does
	// when the writeback of a file's dirty pages fails: the pages are
	// marked clean although their contents never reached the disk. A
	// reader (and a process restarted after Kill, which keeps the page
	// cache) still sees the bytes; a later Sync has nothing to write and
	// succeeds; a power cut finds what the disk held before, zeros where
	// the file had never been synced. Unset, a failed Sync changes
	// nothing and the next Sync persists the bytes, as a transient error
	// that the kernel retries would. Kill and PowerCut carry it over to
	// the MemFS they return: it is the kernel's behaviour, not the
	// process's. Set it while no store uses the MemFS.
	LinuxWriteback bool

	// TornStop, when not nil, makes the write that StopAfter's stop
	// interrupts leave its first TornStop(len) bytes in the file (in the
	// page cache: not synced), as a process killed in the middle of a
	// write(2) can; it still fails with ErrPowerLost. Nil: the
	// interrupted write changes nothing. Set it while no store uses the
	// MemFS.
	TornStop func(n int) int
}

// memNode is a file's contents. It outlives renames.
type memNode struct {
	data    []byte // what a reader sees now
	synced  []byte // what survives a power cut
	dirtyLo int    // data[:dirtyLo] == synced[:dirtyLo] (when dirtyLo <= len(synced))
	dirtyHi int    // end of the last byte written since the last sync
	// shrunk is set when the file was truncated (Truncate to a smaller
	// size, or O_TRUNC) since its last sync, to shrunkTo bytes at the
	// least: a power cut may or may not persist the new size, as ext4
	// may commit an inode's size in its journal before any fdatasync.
	shrunk   bool
	shrunkTo int
}

// shrink notes a truncation of n to size bytes.
//
// REQUIRES: the MemFS's mu held.
func (n *memNode) shrink(size int) {
	if size >= len(n.data) {
		return
	}
	if !n.shrunk || size < n.shrunkTo {
		n.shrunkTo = size
	}
	n.shrunk = true
}

// NewMemFS returns an empty in-memory filesystem.
func NewMemFS() *MemFS {
	return &MemFS{live: map[string]*memNode{}, durable: map[string]*memNode{}, dirs: map[string]bool{"/": true}}
}

// SetLimit caps the total size of all files at n bytes (0 = no cap).
func (m *MemFS) SetLimit(n int64) {
	m.mu.Lock()
	m.limit = n
	m.mu.Unlock()
}

// Crash simulates a power loss and returns the filesystem as a reboot
// finds it. Every file keeps only the bytes that were synced, and the
// directory keeps only the names that were synced. When tear is true,
// each file also keeps a random-length prefix of the bytes written after
// its last sync: the bytes from the first unsynced one up to a random
// point before the end of the last write (writes reaching the disk in
// order, the last of them torn at a random byte). It is PowerCut with
// PowerPrefix (memfs_power.go has the harsher modes).
//
// m itself, and every file opened from it, fails every operation with
// ErrPowerLost from then on: the process that was using it died with the
// power, and nothing it would have done next may reach the disk. Reopen
// the store on the returned MemFS.
func (m *MemFS) Crash(tear bool, rng *rand.Rand) *MemFS {
	if !tear {
		rng = nil
	}
	return m.PowerCut(PowerPrefix, rng)
}

// check fails every operation once the power is lost.
//
// REQUIRES: m.mu held.
func (m *MemFS) check(op, name string) error {
	if m.down {
		return &os.PathError{Op: op, Path: name, Err: ErrPowerLost}
	}
	return nil
}

// fault returns the error the Fault hook injects into op on name, if any.
//
// REQUIRES: m.mu held.
func (m *MemFS) fault(op, name string) error {
	if m.Fault == nil {
		return nil
	}
	if err := m.Fault(op, name); err != nil {
		return &os.PathError{Op: op, Path: name, Err: err}
	}
	return nil
}

// admit lets op on name go ahead or fails it: first check (the power is
// lost), then fault (the hook injects an error). Operations that find out
// first whether the file exists, Remove and Rename, call the two apart.
//
// REQUIRES: m.mu held.
func (m *MemFS) admit(op, name string) error {
	if err := m.check(op, name); err != nil {
		return err
	}
	if err := m.fault(op, name); err != nil {
		return err
	}
	return m.step(op, name)
}

func (m *MemFS) used() int64 {
	var total int64
	for _, n := range m.live {
		total += int64(len(n.data))
	}
	return total
}

// OpenFile implements FS. It honours O_CREATE, O_EXCL and O_TRUNC.
func (m *MemFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	name = filepath.Clean(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.check("open", name); err != nil {
		return nil, err
	}
	if !m.dirs[filepath.Dir(name)] {
		return nil, &os.PathError{Op: "open", Path: name, Err: os.ErrNotExist}
	}
	n, ok := m.live[name]
	switch {
	case ok && flag&os.O_CREATE != 0 && flag&os.O_EXCL != 0:
		return nil, &os.PathError{Op: "open", Path: name, Err: os.ErrExist}
	case !ok && flag&os.O_CREATE == 0:
		return nil, &os.PathError{Op: "open", Path: name, Err: os.ErrNotExist}
	case !ok:
		if err := m.fault("create", name); err != nil {
			return nil, err
		}
		if err := m.step("create", name); err != nil {
			return nil, err
		}
		n = &memNode{}
		m.live[name] = n
	}
	if flag&os.O_TRUNC != 0 {
		if ok {
			if err := m.step("truncate", name); err != nil {
				return nil, err
			}
		}
		n.shrink(0)
		n.data = n.data[:0]
		n.dirtyLo, n.dirtyHi = 0, 0
	}
	return &memFile{fs: m, node: n, name: name}, nil
}

// Remove implements FS.
func (m *MemFS) Remove(name string) error {
	name = filepath.Clean(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.check("remove", name); err != nil {
		return err
	}
	if _, ok := m.live[name]; !ok {
		return &os.PathError{Op: "remove", Path: name, Err: os.ErrNotExist}
	}
	if err := m.fault("remove", name); err != nil {
		return err
	}
	if err := m.step("remove", name); err != nil {
		return err
	}
	delete(m.live, name)
	return nil
}

// Rename implements FS.
func (m *MemFS) Rename(oldname, newname string) error {
	oldname, newname = filepath.Clean(oldname), filepath.Clean(newname)
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.check("rename", oldname); err != nil {
		return err
	}
	n, ok := m.live[oldname]
	if !ok {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: os.ErrNotExist}
	}
	if err := m.fault("rename", oldname); err != nil {
		return err
	}
	if err := m.step("rename", oldname); err != nil {
		return err
	}
	delete(m.live, oldname)
	m.live[newname] = n
	return nil
}

// List implements FS.
func (m *MemFS) List(dir string) ([]string, error) {
	dir = filepath.Clean(dir)
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.check("open", dir); err != nil {
		return nil, err
	}
	if !m.dirs[dir] {
		return nil, &os.PathError{Op: "open", Path: dir, Err: os.ErrNotExist}
	}
	var names []string
	for name := range m.live {
		if filepath.Dir(name) == dir {
			names = append(names, filepath.Base(name))
		}
	}
	sort.Strings(names)
	return names, nil
}

// MkdirAll implements FS. Directories are durable at once.
func (m *MemFS) MkdirAll(dir string, perm os.FileMode) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.check("mkdir", dir); err != nil {
		return err
	}
	if err := m.step("mkdir", dir); err != nil {
		return err
	}
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		m.dirs[d] = true
		if d == "/" || d == "." {
			return nil
		}
	}
}

// SyncDir implements FS: the names in dir, as they are now, become durable.
func (m *MemFS) SyncDir(dir string) error {
	dir = filepath.Clean(dir)
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.admit("syncdir", dir); err != nil {
		return err
	}
	for name := range m.durable {
		if filepath.Dir(name) == dir {
			delete(m.durable, name)
		}
	}
	for name, n := range m.live {
		if filepath.Dir(name) == dir {
			m.durable[name] = n
		}
	}
	return nil
}

// memFile is an open MemFS file.
type memFile struct {
	fs   *MemFS
	node *memNode
	name string
}

// check fails every operation once the MemFS lost power.
//
// REQUIRES: f.fs.mu held.
func (f *memFile) check(op string) error { return f.fs.check(op, f.name) }

func (f *memFile) ReadAt(p []byte, off int64) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.check("read"); err != nil {
		return 0, err
	}
	if off >= int64(len(f.node.data)) {
		return 0, io.EOF
	}
	n := copy(p, f.node.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (f *memFile) WriteAt(p []byte, off int64) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	wasDown := f.fs.down
	if err := f.fs.admit("write", f.name); err != nil {
		if !wasDown && f.fs.down && f.fs.TornStop != nil {
			// This write is the one the stop interrupted: a prefix of it
			// lands.
			f.write(p[:min(max(f.fs.TornStop(len(p)), 0), len(p))], off)
		}
		return 0, err
	}
	return f.write(p, off)
}

// write puts p at offset off of the file, within the MemFS's limit.
//
// REQUIRES: f.fs.mu held.
func (f *memFile) write(p []byte, off int64) (int, error) {
	n := f.node
	want := p
	var err error
	if f.fs.limit > 0 {
		grow := max(0, off+int64(len(p))-int64(len(n.data)))
		if free := f.fs.limit - f.fs.used(); grow > free {
			keep := max(0, int64(len(n.data))+free-off)
			want = p[:min(int64(len(p)), keep)]
			err = &os.PathError{Op: "write", Path: f.name, Err: syscall.ENOSPC}
		}
	}
	end := int(off) + len(want)
	if end > len(n.data) {
		if end > cap(n.data) {
			grown := make([]byte, end, max(end, 2*cap(n.data)))
			copy(grown, n.data)
			n.data = grown
		} else {
			// The bytes past len(n.data) may be left over from before a
			// Truncate shrank the file: a file reads zeros there (a hole,
			// when off is past the end), never its old contents.
			old := len(n.data)
			n.data = n.data[:end]
			clear(n.data[old:])
		}
	}
	copy(n.data[off:], want)
	n.dirtyLo = min(n.dirtyLo, int(off))
	n.dirtyHi = max(n.dirtyHi, end)
	return len(want), err
}

// Sync makes the written bytes durable: copies data[dirtyLo:] to synced.
// If Fault fails it under LinuxWriteback, the written bytes are marked
// clean instead (failedWriteback).
func (f *memFile) Sync() error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.fs.check("sync", f.name); err != nil {
		return err
	}
	if err := f.fs.fault("sync", f.name); err != nil {
		if f.fs.LinuxWriteback {
			f.node.failedWriteback()
		}
		return err
	}
	if err := f.fs.step("sync", f.name); err != nil {
		return err
	}
	n := f.node
	lo := min(n.dirtyLo, len(n.synced))
	n.synced = append(n.synced[:lo], n.data[lo:]...)
	n.dirtyLo, n.dirtyHi = len(n.data), 0
	n.shrunk = false
	return nil
}

// failedWriteback marks every byte written since the last sync clean
// without making it durable: synced keeps what the disk held, and grows
// with zeros to the file's length, so that no later Sync copies the
// failed bytes to it (a Sync copies from dirtyLo, or from the end of
// synced if that comes first).
//
// REQUIRES: the MemFS's mu held.
func (n *memNode) failedWriteback() {
	if len(n.synced) < len(n.data) {
		n.synced = append(n.synced, make([]byte, len(n.data)-len(n.synced))...)
	}
	n.dirtyLo, n.dirtyHi = len(n.data), 0
}

func (f *memFile) Truncate(size int64) error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.fs.admit("truncate", f.name); err != nil {
		return err
	}
	n := f.node
	n.shrink(int(size))
	if int(size) <= len(n.data) {
		n.data = n.data[:size]
	} else {
		n.data = append(n.data, make([]byte, int(size)-len(n.data))...)
	}
	n.dirtyLo = min(n.dirtyLo, int(size))
	n.dirtyHi = max(n.dirtyHi, int(size))
	return nil
}

func (f *memFile) Size() (int64, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.check("stat"); err != nil {
		return 0, err
	}
	return int64(len(f.node.data)), nil
}

func (f *memFile) Close() error { return nil }

// String describes the MemFS for test failure messages.
func (m *MemFS) String() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var b strings.Builder
	b.WriteString("memfs{")
	names := make([]string, 0, len(m.live))
	for n := range m.live {
		names = append(names, n)
	}
	sort.Strings(names)
	for i, n := range names {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(filepath.Base(n))
	}
	b.WriteString("}")
	return b.String()
}
