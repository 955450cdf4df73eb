package peers

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"kvlab/harness"
)

// PostgreSQL's data outside the run directory (postgresHome, as root).
//
// The data of run directory dir go to os.TempDir()/kvlab-pg-HASH, HASH
// taken from dir's path, so a run's preload and its measurement (two
// opens of one run directory) find the same cluster. The directory holds
// a file run-dir naming dir, and dir a symbolic link pg-data to it, for
// the reader. It is removed once dir is gone (the run over: the harness
// removes the run directory) and none of its servers runs: at once when
// the harness removes it (OnRunDirRemoved), else when a watcher, checking
// every pgHomePoll, finds it gone. A labserver killed first leaves it; the next
// acquirePgHome removes every such directory whose run directory is gone.

// pgHomePrefix begins the name of a run's PostgreSQL directory.
const pgHomePrefix = "kvlab-pg-"

// pgHomePoll is how often a watcher looks for its run directory.
const pgHomePoll = 200 * time.Millisecond

// pgHomeHalfRemoved is how long a PostgreSQL directory without its
// run-dir file must have been left alone before a sweep takes it for one
// half removed (its process exited during the removal).
const pgHomeHalfRemoved = time.Minute

// pgHomes are this process's run PostgreSQL directories, by run
// directory.
var pgHomes = struct {
	sync.Mutex
	m map[string]*pgHome
}{m: map[string]*pgHome{}}

// pgHome is one run directory's PostgreSQL directory.
type pgHome struct {
	runDir, dir string
	open        int // servers started and not yet released
}

// acquirePgHome returns run directory dir's PostgreSQL directory, making
// it (and its watcher) when it is new, and a release to call once the
// servers started on it have stopped.
func acquirePgHome(dir string) (string, func(), error) {
	tmp := os.TempDir()
	if err := sameFilesystem(dir, tmp); err != nil {
		return "", nil, err
	}
	if closed, mode, err := closedAbove(filepath.Join(tmp, pgHomePrefix)); err != nil || closed != "" {
		return "", nil, fmt.Errorf("nobody cannot enter %s (mode %v) either (%v); set TMPDIR to a directory on the run's disk that others can enter", closed, mode, err)
	}
	sum := sha256.Sum256([]byte(dir))
	home := filepath.Join(tmp, pgHomePrefix+hex.EncodeToString(sum[:8]))
	pgHomes.Lock()
	defer pgHomes.Unlock()
	h := pgHomes.m[dir]
	if h == nil {
		sweepPgHomes(tmp)
		if err := os.Mkdir(home, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
			return "", nil, err
		}
		if err := os.WriteFile(filepath.Join(home, "run-dir"), []byte(dir), 0o644); err != nil {
			os.RemoveAll(home)
			return "", nil, err
		}
		os.Remove(filepath.Join(dir, "pg-data"))
		os.Symlink(home, filepath.Join(dir, "pg-data")) // for the reader; nothing reads it
		h = &pgHome{runDir: dir, dir: home}
		pgHomes.m[dir] = h
		go h.watch()
	}
	h.open++
	var once sync.Once
	return home, func() {
		once.Do(func() {
			pgHomes.Lock()
			h.open--
			pgHomes.Unlock()
		})
	}, nil
}

func init() { harness.OnRunDirRemoved(removePgHome) }

// removePgHome removes run directory dir's PostgreSQL directory, if it
// has one and none of its servers runs: the harness has just removed dir.
// (A run directory removed otherwise is found by the watcher.)
func removePgHome(dir string) {
	pgHomes.Lock()
	defer pgHomes.Unlock()
	if h := pgHomes.m[dir]; h != nil && h.open == 0 {
		os.RemoveAll(h.dir)
		delete(pgHomes.m, dir)
	}
}

// watch removes h's directory once its run directory is gone and none of
// its servers runs.
func (h *pgHome) watch() {
	for {
		time.Sleep(pgHomePoll)
		pgHomes.Lock()
		if pgHomes.m[h.runDir] != h {
			pgHomes.Unlock()
			return // removed by removePgHome
		}
		if _, err := os.Stat(h.runDir); errors.Is(err, os.ErrNotExist) && h.open == 0 {
			os.RemoveAll(h.dir)
			delete(pgHomes.m, h.runDir)
			pgHomes.Unlock()
			return
		}
		pgHomes.Unlock()
	}
}

// sweepPgHomes removes the PostgreSQL directories in tmp that no watcher
// of this process owns and whose run directory is gone: a killed
// labserver's. pgHomes is locked.
func sweepPgHomes(tmp string) {
	ds, _ := filepath.Glob(filepath.Join(tmp, pgHomePrefix+"*"))
	owned := map[string]bool{}
	for _, h := range pgHomes.m {
		owned[h.dir] = true
	}
	for _, d := range ds {
		if owned[d] {
			continue
		}
		b, err := os.ReadFile(filepath.Join(d, "run-dir"))
		if err != nil || strings.TrimSpace(string(b)) == "" {
			// Being made (run-dir comes right after the directory), or
			// half removed by a process that exited meanwhile (run-dir
			// went first): the latter's stays untouched for a while.
			if fi, err := os.Stat(d); err == nil && time.Since(fi.ModTime()) > pgHomeHalfRemoved {
				os.RemoveAll(d)
			}
			continue
		}
		if _, err := os.Stat(string(b)); errors.Is(err, os.ErrNotExist) {
			os.RemoveAll(d)
		}
	}
}

// sameFilesystem says why PostgreSQL's data cannot go under tmp instead
// of dir: another filesystem, whose flushes the run's device counters
// would not see (or, in memory, would not cost).
func sameFilesystem(dir, tmp string) error {
	var a, b syscall.Stat_t
	if err := syscall.Stat(dir, &a); err != nil {
		return err
	}
	if err := syscall.Stat(tmp, &b); err != nil {
		return err
	}
	if a.Dev != b.Dev {
		return fmt.Errorf("%s is on another filesystem than the run, whose flushes would go uncounted; give the run a -dir that others can enter, such as one under %s, or set TMPDIR to a directory on the run's disk that others can enter", tmp, tmp)
	}
	return nil
}
