//go:build !linux

package engine

import "unsafe"

// adviseHuge does nothing outside Linux (hugepage_linux.go).
func adviseHuge(p unsafe.Pointer, n uintptr) {}
