package harness

import "golang.org/x/sys/unix"

// syncMethods are the ways Linux makes a write durable.
func syncMethods() []syncMethod {
	return []syncMethod{
		{name: "write+fdatasync", sync: unix.Fdatasync},
		{name: "write+fsync", sync: unix.Fsync},
		{name: "O_DSYNC write", flags: unix.O_DSYNC},
		{name: "O_DIRECT|O_DSYNC write", flags: unix.O_DIRECT | unix.O_DSYNC, align: 4096,
			note: "writes whole 4 KiB blocks from aligned memory, bypassing the page cache"},
	}
}
