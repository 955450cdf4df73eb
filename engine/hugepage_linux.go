package engine

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// Huge pages for the memory Open fills at once.
//
// A cold Open builds an index of tens of megabytes in memory the process
// did not have: the slot tables (keyindex.go) and the buffers it reads
// hint files into. The first write to each 4 KiB page of fresh memory
// traps into the kernel, which finds a page, zeroes it and maps it: a
// page fault. On the virtual machine this course was measured on, the
// faults of a 1M-key Open (about 28,000) took as much CPU time as the
// rest of the Open together. Asking for 2 MiB pages where they are
// cheapest to ask for, the big allocations made once, turns 512 faults
// into one: measured, a cold Open of 1M keys faulted 9,500 times instead
// of 27,000 and took 0.30-0.41 s of CPU instead of 0.68-0.77 s (load
// 9-15). The keys' arena, in 64 KiB chunks, is left in small pages.

// hugePage is the size of a transparent huge page on linux/amd64 and
// arm64 (2 MiB).
const hugePage = 2 << 20

// adviseHuge asks Linux to back the whole 2 MiB pages within the n bytes
// at p with huge pages when they are first touched (madvise
// MADV_HUGEPAGE). It is a hint: where the kernel keeps transparent huge
// pages off, or has none to give, the memory stays in 4 KiB pages.
func adviseHuge(p unsafe.Pointer, n uintptr) {
	start := (uintptr(p) + hugePage - 1) &^ (hugePage - 1)
	end := (uintptr(p) + n) &^ (hugePage - 1)
	if end <= start {
		return
	}
	b := unsafe.Slice((*byte)(unsafe.Add(p, start-uintptr(p))), end-start)
	_ = unix.Madvise(b, unix.MADV_HUGEPAGE)
}
