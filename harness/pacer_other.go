//go:build !linux

package harness

import "time"

// fineSleep sleeps for d on a Go timer: on macOS and FreeBSD the runtime's
// netpoller waits in kevent with a nanosecond timeout, so the timer is
// already a high-resolution sleep (pacer.go). On Windows the runtime waits
// on a high-resolution waitable timer; how late it wakes there has not been
// measured by this project, and every open-loop result reports the
// pacer's lag, so a late wake shows.
func fineSleep(d time.Duration) { time.Sleep(d) }
