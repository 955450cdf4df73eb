//go:build !windows

package vfs

import "os"

// openFile is os.OpenFile: on Unix an open file can be renamed over and
// removed, and a reader keeps its data until it closes it.
func openFile(name string, flag int, perm os.FileMode) (*os.File, error) {
	return os.OpenFile(name, flag, perm)
}

// syncDir makes dir's entries durable with fsync(2) on the directory: a
// file's data can be durable while its name is not.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
