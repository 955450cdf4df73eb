package harness

import (
	"time"

	"golang.org/x/sys/unix"
)

// fineSleep blocks the calling thread for d in nanosleep(2): an hrtimer,
// late by the thread's timer slack (50 µs by default) plus the wake-up
// latency, where a Go timer is late by up to a millisecond (pacer.go).
func fineSleep(d time.Duration) {
	ts := unix.NsecToTimespec(int64(d))
	for unix.Nanosleep(&ts, &ts) == unix.EINTR {
		// interrupted (the runtime preempts with signals): sleep the rest
	}
}
