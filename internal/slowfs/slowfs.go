// Package slowfs is an engine.FS for tests whose every file Sync first
// sleeps, so that writers arriving during one sync must wait for the
// next: it makes group commit's sharing certain rather than a matter of
// timing.
package slowfs

import (
	"os"
	"time"

	"kvlab/engine"
)

// FS is engine.OSFS whose files' Sync sleeps Delay before it syncs.
type FS struct {
	engine.OSFS
	Delay time.Duration
}

// OpenFile opens name as engine.OSFS does, with the slow Sync.
func (fs FS) OpenFile(name string, flag int, perm os.FileMode) (engine.File, error) {
	f, err := fs.OSFS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return file{f, fs.Delay}, nil
}

type file struct {
	engine.File
	delay time.Duration
}

// Sync sleeps, then syncs.
func (f file) Sync() error {
	time.Sleep(f.delay)
	return f.File.Sync()
}
