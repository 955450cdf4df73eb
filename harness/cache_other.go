//go:build !linux

package harness

import (
	"fmt"
	"runtime"
)

// evictFile cannot drop a file's pages here: posix_fadvise(DONTNEED) is
// the Linux call -cache cold uses (macOS has no per-file eviction
// without root; Windows none that a process may ask for).
func evictFile(path string) (size, resident, total int64, err error) {
	return 0, 0, 0, fmt.Errorf("page-cache eviction is not available on %s (it uses Linux's posix_fadvise): this run read a warm cache", runtime.GOOS)
}
