package oslayout

import "encoding/binary"

// LoadavgStruct reads the 1-minute load average from the bytes of
// the BSD struct loadavg { uint32 ldavg[3]; long fscale; } that the
// vm.loadavg sysctl returns (macOS, FreeBSD), with a long of longSize
// bytes (4 or 8) in the machine's byte order; the load is
// ldavg[0]/fscale. It returns 0 for anything it cannot read.
func LoadavgStruct(b []byte, longSize int) float64 {
	off := (12 + longSize - 1) / longSize * longSize // fscale is aligned as a long
	if (longSize != 4 && longSize != 8) || len(b) < off+longSize {
		return 0
	}
	scale := uint64(binary.NativeEndian.Uint32(b[off:]))
	if longSize == 8 {
		scale = binary.NativeEndian.Uint64(b[off:])
	}
	if scale == 0 {
		return 0
	}
	return float64(binary.NativeEndian.Uint32(b)) / float64(scale)
}
