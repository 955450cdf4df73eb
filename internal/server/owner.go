package server

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"

	"kvlab/harness"
)

// Who owns a run directory. Each run writes under -data/runs/run-OWNER-N,
// and a server that dies by SIGKILL or a power cut never removes its
// last one (46 MB in one test). So each server takes an owner name
// (PID.K, K counting the servers of this process) and holds an exclusive
// flock on -data/locks/OWNER.lock for as long as it lives. On start, a
// server removes every run directory whose owner's lock it can take:
// that owner is gone. A directory whose lock is held belongs to a live
// server sharing the data directory, and is left alone.
//
// Why a lock and not the PID and its start time: the kernel drops a
// flock (Windows: a LockFileEx lock) when the process dies however it dies, so no stale record can
// claim a directory, a reused PID cannot pass for its dead namesake, and
// nothing reads /proc (which macOS does not have).

var ownerSeq atomic.Int64

// owner is a server's claim on its run directories.
type owner struct {
	name string   // PID.K
	lock *os.File // holds the flock; nil once released
}

// claimRuns removes the run directories under dataDir/runs that no live
// server owns, logging each, and takes a new owner name for this server.
func claimRuns(dataDir string, logf func(format string, args ...any)) (*owner, error) {
	locks := filepath.Join(dataDir, "locks")
	runs := filepath.Join(dataDir, "runs")
	if err := os.MkdirAll(locks, 0o755); err != nil {
		return nil, fmt.Errorf("-data %s: %w", dataDir, err)
	}
	o := &owner{name: fmt.Sprintf("%d.%d", os.Getpid(), ownerSeq.Add(1))}
	f, err := lockFile(filepath.Join(locks, o.name+".lock"))
	if err != nil {
		return nil, fmt.Errorf("-data %s: taking the lock of this server's runs: %w", dataDir, err)
	}
	o.lock = f
	ents, err := os.ReadDir(runs)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		o.release()
		return nil, fmt.Errorf("-data %s: %w", dataDir, err)
	}
	dead := map[string]bool{} // owners found gone, by name
	for _, e := range ents {
		name, ok := strings.CutPrefix(e.Name(), "run-")
		i := strings.LastIndexByte(name, '-')
		if !ok || i < 0 || !e.IsDir() {
			continue // not a run directory
		}
		who := name[:i]
		if who == o.name {
			continue
		}
		gone, seen := dead[who]
		if !seen {
			gone = ownerGone(filepath.Join(locks, who+".lock"))
			dead[who] = gone
		}
		if !gone {
			continue
		}
		dir := filepath.Join(runs, e.Name())
		size := dirSize(dir)
		if err := os.RemoveAll(dir); err != nil {
			logf("leftover run directory %s: removing it: %v", dir, err)
			continue
		}
		logf("removed %s (%s), left by a labserver that is no longer running", dir, harness.FormatBytes(size))
	}
	for who, gone := range dead {
		if gone {
			os.Remove(filepath.Join(locks, who+".lock"))
		}
	}
	return o, nil
}

// lockFile creates path and holds an exclusive flock on it. It checks the
// file it locked is still the one at path: a server that found it
// unlocked in the instant between its creation and its lock may have
// removed it.
func lockFile(path string) (*os.File, error) {
	for range 3 {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
		if err != nil {
			return nil, err
		}
		if err := tryLock(f); err != nil {
			f.Close()
			return nil, err
		}
		a, err1 := f.Stat()
		b, err2 := os.Stat(path)
		if err1 == nil && err2 == nil && os.SameFile(a, b) {
			return f, nil
		}
		f.Close()
	}
	return nil, errors.New("the lock file kept disappearing")
}

// ownerGone reports whether no live server holds the lock at path. A
// missing lock file counts as gone: labserver before locks wrote none.
func ownerGone(path string) bool {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return errors.Is(err, fs.ErrNotExist)
	}
	defer f.Close() // drops the probe's lock, if it took one
	return tryLock(f) == nil
}

// release gives up the claim: the lock file is unlocked and removed.
func (o *owner) release() {
	if o == nil || o.lock == nil {
		return
	}
	// Closed before removed: Windows cannot remove a file that is open.
	// A server that locks the file in between and then finds it gone
	// takes a new one (lockFile checks for that).
	name := o.lock.Name()
	o.lock.Close()
	os.Remove(name)
	o.lock = nil
}

// dirSize is the bytes of the files under dir, for the log.
func dirSize(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}
