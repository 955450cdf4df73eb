//go:build !linux

package harness

import (
	"fmt"
	"runtime"
)

// watchCPU says there is nothing to watch: the processors' account comes
// from Linux's /proc/stat.
func watchCPU() *cpuWatch {
	return &cpuWatch{regionWatch: regionWatch[cpuTicks]{unavailable: fmt.Sprintf("the processors' time is read from Linux's /proc/stat; %s has none", runtime.GOOS)}}
}
