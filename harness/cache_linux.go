package harness

import (
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// evictFile writes back the file at path and asks the kernel to drop its
// pages from the page cache (cache.go), then counts the pages still
// resident: size in bytes, resident and total pages (total -1 when
// mincore could not be asked).
func evictFile(path string) (size, resident, total int64, err error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return 0, 0, 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, 0, 0, err
	}
	size = st.Size()
	fd := int(f.Fd())
	// Dirty pages are not dropped: write them back first.
	if err := unix.Fdatasync(fd); err != nil {
		return size, 0, 0, fmt.Errorf("fdatasync %s: %w", path, err)
	}
	if err := unix.Fadvise(fd, 0, 0, unix.FADV_DONTNEED); err != nil {
		return size, 0, 0, fmt.Errorf("posix_fadvise(DONTNEED) %s: %w", path, err)
	}
	resident, total = residentPages(fd, size)
	return size, resident, total, nil
}

// residentPages counts the pages of the file's first size bytes that are
// in the page cache, by mincore(2) on a read-only shared mapping (which
// reads nothing). total is -1 when the mapping fails.
func residentPages(fd int, size int64) (resident, total int64) {
	if size == 0 {
		return 0, 0
	}
	m, err := unix.Mmap(fd, 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return 0, -1
	}
	defer unix.Munmap(m)
	page := int64(os.Getpagesize())
	vec := make([]byte, (size+page-1)/page)
	if _, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
		return 0, -1
	}
	for _, v := range vec {
		if v&1 != 0 {
			resident++
		}
	}
	return resident, int64(len(vec))
}
