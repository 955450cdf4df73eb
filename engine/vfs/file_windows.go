package vfs

// How the store opens files and syncs directories on Windows. Built and
// vetted for Windows, not run, by this project's tests.

import (
	"os"

	"golang.org/x/sys/windows"
)

// openFile opens name as os.OpenFile would, but shares it for deletion
// (FILE_SHARE_DELETE), which os.OpenFile does not: compaction renames a
// new segment over an old one and removes segments that readers may
// still have open, and without that share mode Windows refuses both with
// a sharing violation. A removed file that is still open disappears when
// its last handle closes, as on Unix.
func openFile(name string, flag int, perm os.FileMode) (*os.File, error) {
	p, err := windows.UTF16PtrFromString(name)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: name, Err: err}
	}
	var access uint32
	switch flag & (os.O_RDONLY | os.O_WRONLY | os.O_RDWR) {
	case os.O_RDONLY:
		access = windows.GENERIC_READ
	case os.O_WRONLY:
		access = windows.GENERIC_WRITE
	default:
		access = windows.GENERIC_READ | windows.GENERIC_WRITE
	}
	var create uint32
	switch {
	case flag&(os.O_CREATE|os.O_EXCL) == os.O_CREATE|os.O_EXCL:
		create = windows.CREATE_NEW
	case flag&(os.O_CREATE|os.O_TRUNC) == os.O_CREATE|os.O_TRUNC:
		create = windows.CREATE_ALWAYS
	case flag&os.O_CREATE != 0:
		create = windows.OPEN_ALWAYS
	case flag&os.O_TRUNC != 0:
		create = windows.TRUNCATE_EXISTING
	default:
		create = windows.OPEN_EXISTING
	}
	attrs := uint32(windows.FILE_ATTRIBUTE_NORMAL)
	if perm&0o200 == 0 {
		attrs = windows.FILE_ATTRIBUTE_READONLY
	}
	share := uint32(windows.FILE_SHARE_READ | windows.FILE_SHARE_WRITE | windows.FILE_SHARE_DELETE)
	h, err := windows.CreateFile(p, access, share, nil, create, attrs, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: name, Err: err}
	}
	return os.NewFile(uintptr(h), name), nil
}

// syncDir does nothing. Windows cannot flush a directory handle
// (FlushFileBuffers needs write access, which a directory handle cannot
// have); NTFS journals a file's creation, rename and removal in its own
// metadata log, and the only way for a program to force that log to disk
// is to flush the whole volume, which needs administrator rights. So a
// new segment's name may be lost in a power cut even after its data was
// flushed: the weaker promise Windows makes, stated here rather than
// hidden. Pebble and RocksDB also treat a directory sync as a no-op on
// Windows.
func syncDir(string) error { return nil }
