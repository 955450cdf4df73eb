package harness

import "golang.org/x/sys/unix"

// syncMethods are the ways macOS makes a write durable, and the one it
// lacks.
func syncMethods() []syncMethod {
	return []syncMethod{
		{name: "write+F_FULLFSYNC", sync: func(fd int) error {
			_, err := unix.FcntlInt(uintptr(fd), unix.F_FULLFSYNC, 0)
			return err
		}, note: "the only call here that empties the drive's volatile cache (engine.Datasync uses it)"},
		{name: "write+fsync", sync: unix.Fsync,
			note: "on macOS fsync hands the data to the drive but does not flush its cache: not durable against power loss"},
		{name: "O_DSYNC write", flags: unix.O_DSYNC,
			note: "like fsync on macOS: the drive's cache is not flushed"},
		{name: "O_DIRECT|O_DSYNC write", align: 4096,
			refused: "macOS has no O_DIRECT (fcntl F_NOCACHE is its nearest, and does not make writes durable)"},
	}
}
