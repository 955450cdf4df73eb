package harness

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"kvlab/engine"
)

// A simulated disk, for tests of the course. A quiz that asks the reader
// to predict their disk must come out differently on a different disk;
// the lessons' disk check runs each such quiz's cell twice, once with a
// fast flush and once with a slow one. A DiskSimulation is how: the kv
// engine opens its stores on an in-memory filesystem (memDisk), where a
// write is a copy and an fdatasync costs nothing of its own, and every
// fdatasync first waits the given time, as a disk whose cache flush costs
// that much would make it wait. The disk's whole flush cost is then the
// one simulated, whatever the real disk under the test is and however busy
// it is. The probe's fdatasync waits the same time (its files stay real:
// put them on an in-memory filesystem such as /dev/shm). Other engines
// (bbolt, pebble, servers) use the real disk and flush on their own.
//
// Tests turn it on with harnesstest.SimulateDisk or SimulateDiskBytes,
// which set SimulatedDisk and put back what was there.

// SimulatedDisk, when not nil, is the simulated disk every run in the
// process uses: the kv engine opens every store on its in-memory files,
// and every fdatasync of kv and of the probe waits its flush cost first.
// nil (the default): the real disk alone. It is for tests: it changes
// every run in the process, so two tests that set it must not overlap.
var SimulatedDisk atomic.Pointer[DiskSimulation]

// A DiskSimulation is a disk whose fdatasync costs Flush, plus PerMiB for
// every MiB it carries (the bytes written to that file since its last
// fdatasync), and nothing else, as a real disk's flush costs more the more
// it carries: a batch:N commit of many records then costs more than one of
// a few, and a zero-fill more than either, which is what the model's
// inputs must get right (model_inputs.go). Its in-memory files start
// empty; a new DiskSimulation is a fresh disk.
type DiskSimulation struct {
	Flush  time.Duration // every fdatasync's cost; 0: none
	PerMiB time.Duration // the cost per MiB an fdatasync carries, on top of a non-zero Flush; 0: none
	files  memDisk       // kv's stores
}

// kvFS is the filesystem the kv engine opens a store on: the real one, or
// the simulated disk's.
func kvFS() engine.FS {
	if sim := SimulatedDisk.Load(); sim != nil {
		return &sim.files
	}
	return engine.OSFS{}
}

// simulateFlush waits the simulated extra flush cost, if any, of an
// fdatasync that carries dirty bytes. Below a millisecond it spins on the
// monotonic clock: a sleep's wake-up on a busy machine is late by more
// than a fast disk's whole flush.
func simulateFlush(dirty int64) {
	sim := SimulatedDisk.Load()
	if sim == nil {
		return
	}
	d := sim.Flush
	if sim.PerMiB > 0 && d > 0 {
		d += time.Duration(float64(sim.PerMiB) * float64(dirty) / (1 << 20))
	}
	switch {
	case d <= 0:
	case d < time.Millisecond:
		for end := time.Now().Add(d); time.Now().Before(end); {
		}
	default:
		time.Sleep(d)
	}
}

// memDisk is the simulated disk's filesystem: files held in memory, with
// nothing to flush. It keeps no record of what a power cut would lose
// (engine.MemFS does, and pays for it with a copy of the file's unsynced
// tail on every Sync, which would be a cost of its own on a disk meant to
// cost only its simulated flush). The zero memDisk is an empty disk.
// Safe for concurrent use.
type memDisk struct {
	mu    sync.Mutex          // guards files and dirs
	files map[string]*memData // by full path; nil until the first file
	dirs  map[string]bool     // nil until the first directory
}

// memData is one file's contents, shared by every open handle.
type memData struct {
	mu    sync.RWMutex // guards b and dirty
	b     []byte
	dirty int64 // bytes written since the last Sync (DiskSimulation.PerMiB)
}

// OpenFile implements engine.FS.
func (d *memDisk) OpenFile(name string, flag int, _ os.FileMode) (engine.File, error) {
	name = filepath.Clean(name)
	d.mu.Lock()
	defer d.mu.Unlock()
	f, ok := d.files[name]
	switch {
	case !ok && flag&os.O_CREATE == 0:
		return nil, &os.PathError{Op: "open", Path: name, Err: os.ErrNotExist}
	case ok && flag&os.O_CREATE != 0 && flag&os.O_EXCL != 0:
		return nil, &os.PathError{Op: "open", Path: name, Err: os.ErrExist}
	case !ok:
		f = &memData{}
		if d.files == nil {
			d.files = map[string]*memData{}
		}
		d.files[name] = f
	case flag&os.O_TRUNC != 0:
		f.mu.Lock()
		f.b = f.b[:0]
		f.mu.Unlock()
	}
	return memHandle{f}, nil
}

// Remove implements engine.FS.
func (d *memDisk) Remove(name string) error {
	name = filepath.Clean(name)
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.files[name]; !ok {
		return &os.PathError{Op: "remove", Path: name, Err: os.ErrNotExist}
	}
	delete(d.files, name)
	return nil
}

// Rename implements engine.FS.
func (d *memDisk) Rename(oldname, newname string) error {
	oldname, newname = filepath.Clean(oldname), filepath.Clean(newname)
	d.mu.Lock()
	defer d.mu.Unlock()
	f, ok := d.files[oldname]
	if !ok {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: os.ErrNotExist}
	}
	delete(d.files, oldname)
	d.files[newname] = f
	return nil
}

// List implements engine.FS.
func (d *memDisk) List(dir string) ([]string, error) {
	dir = filepath.Clean(dir)
	d.mu.Lock()
	defer d.mu.Unlock()
	var names []string
	for p := range d.files {
		if filepath.Dir(p) == dir {
			names = append(names, filepath.Base(p))
		}
	}
	if names == nil && !d.dirs[dir] {
		return nil, &os.PathError{Op: "open", Path: dir, Err: os.ErrNotExist}
	}
	slices.Sort(names)
	return names, nil
}

// MkdirAll implements engine.FS.
func (d *memDisk) MkdirAll(dir string, _ os.FileMode) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.dirs == nil {
		d.dirs = map[string]bool{}
	}
	for p := filepath.Clean(dir); !d.dirs[p]; p = filepath.Dir(p) {
		d.dirs[p] = true
		if strings.Count(p, string(filepath.Separator)) == 0 || p == filepath.Dir(p) {
			break
		}
	}
	return nil
}

// SyncDir implements engine.FS: there is nothing to flush.
func (d *memDisk) SyncDir(string) error { return nil }

// memHandle is an open memDisk file.
type memHandle struct{ f *memData }

func (h memHandle) ReadAt(p []byte, off int64) (int, error) {
	h.f.mu.RLock()
	defer h.f.mu.RUnlock()
	if off >= int64(len(h.f.b)) {
		return 0, io.EOF
	}
	n := copy(p, h.f.b[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (h memHandle) WriteAt(p []byte, off int64) (int, error) {
	h.f.mu.Lock()
	defer h.f.mu.Unlock()
	if end := int(off) + len(p); end > len(h.f.b) {
		h.f.b = grow(h.f.b, end)
	}
	h.f.dirty += int64(len(p))
	return copy(h.f.b[off:], p), nil
}

// grow returns b lengthened to n bytes, the new ones zero. When it must
// move, its capacity at least doubles, and a file of a megabyte or more
// gets at least minFileCap: a file that grows by appends (a segment
// zero-filled a megabyte at a time) is then copied a few times in all,
// not once every megabyte or two, which at a few MiB cost more than the
// simulated flush itself on a busy machine (200 ms for one Put at load
// 28). Small files (hints, a test's few records) stay small.
func grow(b []byte, n int) []byte {
	if n > cap(b) {
		c := max(n, 2*cap(b))
		if n >= 1<<20 {
			c = max(c, minFileCap)
		}
		nb := make([]byte, len(b), c)
		copy(nb, b)
		b = nb
	}
	old := len(b)
	b = b[:n]
	clear(b[old:])
	return b
}

// minFileCap is the least capacity grow gives a file it moves: a kv
// segment's first few zero-filled megabytes, what a bench line of tens of
// thousands of Puts writes.
const minFileCap = 8 << 20

// Sync has nothing to flush: the simulated cost is waited by the caller
// (syncTimingFile), which takes the bytes it carries first (takeDirty).
func (h memHandle) Sync() error { return nil }

// takeDirty returns the bytes written since the last call and starts the
// count again: what the fdatasync about to run carries.
func (h memHandle) takeDirty() int64 {
	h.f.mu.Lock()
	defer h.f.mu.Unlock()
	n := h.f.dirty
	h.f.dirty = 0
	return n
}

func (h memHandle) Close() error { return nil }

func (h memHandle) Truncate(size int64) error {
	h.f.mu.Lock()
	defer h.f.mu.Unlock()
	if int(size) <= len(h.f.b) {
		h.f.b = h.f.b[:size]
	} else {
		h.f.b = grow(h.f.b, int(size))
	}
	return nil
}

func (h memHandle) Size() (int64, error) {
	h.f.mu.RLock()
	defer h.f.mu.RUnlock()
	return int64(len(h.f.b)), nil
}
