//go:build !linux

package harness

import (
	"fmt"
	"runtime"
)

// watchDevice says there is nothing to watch: the device counters come
// from Linux's /proc/diskstats.
func watchDevice(dir string) *deviceWatch {
	return &deviceWatch{regionWatch: regionWatch[diskReading]{unavailable: fmt.Sprintf("device counters are read from Linux's /proc/diskstats; %s has none", runtime.GOOS)}}
}
