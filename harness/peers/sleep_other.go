//go:build !linux

package peers

import "time"

// preciseSleep is time.Sleep outside Linux (golang.org/x/sys/unix has no
// Nanosleep for macOS).
func preciseSleep(d time.Duration) { time.Sleep(d) }
