//go:build darwin || freebsd

package harness

import "time"

// fineSleep sleeps for d on a Go timer: on macOS and FreeBSD the runtime's
// netpoller waits in kevent with a nanosecond timeout, so the timer is
// already a high-resolution sleep (pacer.go).
func fineSleep(d time.Duration) { time.Sleep(d) }
