package vfs

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
)

// This file holds what MemFS needs to crash a store at every point of a
// workload (StopAfter, Ops, Kill) and the ways a power cut can treat the
// data that was not yet synced (PowerMode, PowerCut).

// PowerMode says what a simulated power cut does with the writes and
// directory changes that were not yet made durable by Sync or SyncDir.
// Synced data and synced names always survive, in every mode; the modes
// differ only in what else reaches the disk.
type PowerMode int

// The power-cut modes. Their text names are part of the CLI grammar
// (labserver crash -power-mode).
const (
	// PowerPrefix: unsynced bytes reach the disk in the order they were
	// written, so each file keeps its synced bytes plus a prefix of the
	// unsynced ones, the last write torn at a random byte. Unsynced
	// directory changes are lost.
	PowerPrefix PowerMode = iota
	// PowerReorder: the disk writes unsynced data back in any order, one
	// 512-byte sector at a time: any subset of the unsynced sectors
	// survives, each holding either its new or its old contents.
	// Unsynced directory changes are lost.
	PowerReorder
	// PowerPages: as PowerReorder, at 4 KiB page granularity (the page
	// cache writes back whole pages, in any order).
	PowerPages
	// PowerDirent: a directory entry persists before (or without) its
	// file's data. Each name created, renamed or removed since its
	// directory was last synced independently persists or not; no
	// unsynced data survives, so a created or renamed file whose name
	// is durable holds only its synced bytes (an empty file if it was
	// never synced).
	PowerDirent
)

// Sector and page sizes of PowerReorder and PowerPages.
const (
	SectorSize = 512
	PageSize   = 4096
)

// powerModeNames are the text forms, indexed by PowerMode.
var powerModeNames = []string{"prefix", "reorder", "pages", "dirent"}

// PowerModes lists every mode's text form, for help texts and errors.
const PowerModes = "prefix, reorder, pages, dirent"

// String returns the mode's text form, which ParsePowerMode accepts.
func (p PowerMode) String() string {
	if p >= 0 && int(p) < len(powerModeNames) {
		return powerModeNames[p]
	}
	return fmt.Sprintf("PowerMode(%d)", int(p))
}

// ParsePowerMode parses a mode's text form: "prefix", "reorder", "pages"
// or "dirent".
func ParsePowerMode(s string) (PowerMode, error) {
	for i, n := range powerModeNames {
		if s == n {
			return PowerMode(i), nil
		}
	}
	return 0, fmt.Errorf("engine: power mode %q: allowed: %s", s, PowerModes)
}

// step counts one operation that changes the filesystem (create, write,
// sync, syncdir, rename, remove, truncate, mkdir). Once StopAfter's count
// is used up the machine stops: this operation, and every later one,
// fails with ErrPowerLost and changes nothing.
//
// REQUIRES: m.mu held.
func (m *MemFS) step(op, name string) error {
	if m.stopAt > 0 && m.ops >= m.stopAt {
		m.down = true
		return &os.PathError{Op: op, Path: name, Err: ErrPowerLost}
	}
	m.ops++
	m.lastOp = op + " " + name
	return nil
}

// StopAfter stops the machine right after k more operations that change
// the filesystem (k >= 1): the k-th runs, the one after it fails with
// ErrPowerLost, as does everything after it. The filesystem then holds
// exactly what the first k operations did, and PowerCut or Kill turns it
// into what a reboot or a restarted process would find. Counting every
// operation of a workload once (Ops) and rerunning it with StopAfter(k)
// for each k in turn crashes it at every point.
func (m *MemFS) StopAfter(k int) {
	if k < 1 {
		panic(fmt.Sprintf("engine: MemFS.StopAfter(%d): k must be at least 1", k))
	}
	m.mu.Lock()
	m.stopAt = m.ops + k
	m.mu.Unlock()
}

// Ops returns the number of operations that changed the filesystem so far
// and a description of the last one ("sync /db/000000001.seg").
func (m *MemFS) Ops() (int, string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.ops, m.lastOp
}

// Kill simulates the death of the process using m (SIGKILL) and returns
// the filesystem as the next process finds it: every byte and every name
// the process handed to the filesystem is there, synced or not, because
// the kernel keeps it; only the process's own memory is gone. What was
// not synced is still not durable: a later PowerCut of the returned MemFS
// can lose it. m itself fails every operation from then on; Kill of a
// MemFS that is already down copies what it held, so a test can reopen one
// crash image several times.
func (m *MemFS) Kill() *MemFS {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.down = true
	return m.copyLocked()
}

// Copy returns the filesystem as it is now, as Kill does, but leaves m
// running: the store using m goes on, and the copy is the point a
// PowerCut or a Kill of it starts from. Taking a Copy after every
// operation of a workload gives every crash point from one run.
func (m *MemFS) Copy() *MemFS {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.copyLocked()
}

// copyLocked copies the files, names and settings of m. Files that share
// a node (a name and the name it was renamed from) still share one.
//
// REQUIRES: m.mu held.
func (m *MemFS) copyLocked() *MemFS {
	clones := map[*memNode]*memNode{}
	clone := func(n *memNode) *memNode {
		if c, ok := clones[n]; ok {
			return c
		}
		c := &memNode{data: append([]byte(nil), n.data...), synced: append([]byte(nil), n.synced...), dirtyLo: n.dirtyLo, dirtyHi: n.dirtyHi, shrunk: n.shrunk, shrunkTo: n.shrunkTo}
		clones[n] = c
		return c
	}
	after := &MemFS{live: map[string]*memNode{}, durable: map[string]*memNode{}, dirs: maps.Clone(m.dirs), limit: m.limit, LinuxWriteback: m.LinuxWriteback}
	for name, n := range m.live {
		after.live[name] = clone(n)
	}
	for name, n := range m.durable {
		after.durable[name] = clone(n)
	}
	return after
}

// PowerCut simulates a power loss and returns the filesystem as a reboot
// finds it: every synced byte and synced name, plus what mode lets
// survive of the rest, chosen with rng. In every mode, a file truncated
// (or opened with O_TRUNC) since its last Sync keeps its synced size or
// takes the truncated one, a coin flip of rng. With rng nil nothing unsynced
// survives, whatever the mode. m itself, and every file opened from it,
// fails every operation with ErrPowerLost from then on.
func (m *MemFS) PowerCut(mode PowerMode, rng *rand.Rand) *MemFS {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.down = true
	return m.powerImageLocked(mode, rng)
}

// PowerImage returns the filesystem a power cut now would leave, chosen
// as PowerCut chooses, and leaves m running: the same as
// m.Copy().PowerCut(mode, rng) without copying m first. A grader that
// cuts one snapshot many ways uses it.
func (m *MemFS) PowerImage(mode PowerMode, rng *rand.Rand) *MemFS {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.powerImageLocked(mode, rng)
}

// powerImageLocked is the filesystem a power cut now leaves of m.
//
// REQUIRES: m.mu held.
func (m *MemFS) powerImageLocked(mode PowerMode, rng *rand.Rand) *MemFS {
	names := m.durable
	if mode == PowerDirent && rng != nil {
		// Every name whose live state differs from its durable one
		// (created, renamed, removed) independently takes either.
		names = maps.Clone(m.durable)
		for _, name := range sortedNames(m.live, m.durable) {
			live, isLive := m.live[name]
			dur, isDur := m.durable[name]
			if (isLive == isDur && live == dur) || rng.IntN(2) == 0 {
				continue
			}
			if isLive {
				names[name] = live
			} else {
				delete(names, name)
			}
		}
	}
	next := make(map[string]*memNode, len(names))
	seen := map[*memNode]*memNode{}
	// In the order of the names, not of the map: each file's choice of
	// what survives draws from rng, so the same rng must meet the files
	// in the same order for a cut to repeat (crash -points -seed).
	for _, name := range sortedNames(names, nil) {
		n := names[name]
		c, ok := seen[n]
		if !ok {
			kept := n.afterPowerCut(mode, rng)
			c = &memNode{data: kept, synced: append([]byte(nil), kept...), dirtyLo: len(kept), dirtyHi: len(kept)}
			seen[n] = c
		}
		next[name] = c
	}
	return &MemFS{live: next, durable: maps.Clone(next), dirs: maps.Clone(m.dirs), limit: m.limit, LinuxWriteback: m.LinuxWriteback}
}

// afterPowerCut returns the contents a power cut leaves of n.
//
// REQUIRES: the MemFS's mu held.
func (n *memNode) afterPowerCut(mode PowerMode, rng *rand.Rand) []byte {
	kept := append([]byte(nil), n.synced...)
	if rng != nil && n.shrunk && rng.IntN(2) == 0 {
		// The unsynced truncation reached the disk (its inode's new
		// size was committed); the bytes written after it may follow.
		kept = kept[:min(len(kept), n.shrunkTo)]
	}
	hi := min(n.dirtyHi, len(n.data))
	lo := min(n.dirtyLo, len(kept))
	if rng == nil || lo >= hi {
		return kept
	}
	// keep copies data[from:to] over kept, growing it (with zeros, the
	// contents of a hole) as needed.
	keep := func(from, to int) {
		if to > len(kept) {
			kept = append(kept, make([]byte, to-len(kept))...)
		}
		copy(kept[from:to], n.data[from:to])
	}
	switch mode {
	case PowerPrefix:
		keep(lo, lo+rng.IntN(hi-lo+1))
	case PowerReorder, PowerPages:
		size := SectorSize
		if mode == PowerPages {
			size = PageSize
		}
		for b := lo / size * size; b < hi; b += size {
			if rng.IntN(2) == 0 {
				keep(b, min(b+size, len(n.data)))
			}
		}
	case PowerDirent:
		// Names only: the data is the synced data.
	}
	return kept
}

// sortedNames returns the union of the keys of a and b, sorted, so that a
// seeded rng makes the same choices every time.
func sortedNames(a, b map[string]*memNode) []string {
	set := maps.Clone(a)
	maps.Copy(set, b)
	names := make([]string, 0, len(set))
	for n := range set {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
