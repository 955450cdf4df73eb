package harness

import "time"

// fineSleep sleeps for d on a Go timer. On Windows the runtime waits on a
// high-resolution waitable timer; how late it wakes there has not been
// measured by this project (pacer.go has the Linux figures), and every
// open-loop result reports the pacer's lag, so a late wake shows.
func fineSleep(d time.Duration) { time.Sleep(d) }
