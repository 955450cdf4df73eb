package oslayout

import "encoding/binary"

// SeekPenalty reads a DEVICE_SEEK_PENALTY_DESCRIPTOR
// { ULONG Version; ULONG Size; BOOLEAN IncursSeekPenalty; }: whether the
// device pays for seeking, as a spinning disk does. Too short a
// descriptor counts as no.
func SeekPenalty(b []byte) bool {
	return len(b) >= 9 && b[8] != 0
}

// WriteCacheState reads a STORAGE_WRITE_CACHE_PROPERTY
//
//	{ ULONG Version; ULONG Size; WRITE_CACHE_TYPE WriteCacheType;
//	  WRITE_CACHE_ENABLE WriteCacheEnabled; WRITE_CACHE_CHANGE WriteCacheChangeable;
//	  WRITE_THROUGH WriteThroughSupported; BOOLEAN FlushCacheSupported;
//	  BOOLEAN UserDefinedPowerProtection; BOOLEAN NVCacheEnabled; }
//
// and says "on", "on, power-protected" (the cache survives a power cut:
// the user declared it, or it is non-volatile), "off", or "" when the
// device does not say.
func WriteCacheState(b []byte) string {
	if len(b) < 16 {
		return ""
	}
	switch binary.LittleEndian.Uint32(b[12:]) { // WriteCacheEnabled
	case 1:
		return "off"
	case 2:
		if len(b) >= 27 && (b[25] != 0 || b[26] != 0) {
			return "on, power-protected"
		}
		return "on"
	}
	return ""
}
