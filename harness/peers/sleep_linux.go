package peers

import (
	"time"

	"golang.org/x/sys/unix"
)

// preciseSleep blocks this goroutine's thread in nanosleep(2) for d (at
// most timerSlack: the thread is the kernel's, not the runtime's, until
// it wakes).
func preciseSleep(d time.Duration) {
	ts := unix.NsecToTimespec(int64(d))
	for unix.Nanosleep(&ts, &ts) == unix.EINTR {
	}
}
