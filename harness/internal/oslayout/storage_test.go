package oslayout

import (
	"encoding/binary"
	"testing"
)

func TestStorageProperties(t *testing.T) {
	cache := func(enabled uint32, powerProtected, nv byte) []byte {
		b := make([]byte, 28)
		binary.LittleEndian.PutUint32(b[0:], 1)
		binary.LittleEndian.PutUint32(b[4:], 28)
		binary.LittleEndian.PutUint32(b[8:], 2) // write-back
		binary.LittleEndian.PutUint32(b[12:], enabled)
		b[24] = 1 // flush supported
		b[25], b[26] = powerProtected, nv
		return b
	}
	for _, tc := range []struct {
		name string
		b    []byte
		want string
	}{
		{"enabled", cache(2, 0, 0), "on"},
		{"disabled", cache(1, 0, 0), "off"},
		{"unknown", cache(0, 0, 0), ""},
		{"power-protected", cache(2, 1, 0), "on, power-protected"},
		{"non-volatile", cache(2, 0, 1), "on, power-protected"},
		{"short", cache(2, 0, 0)[:12], ""},
		{"no flags", cache(2, 1, 1)[:16], "on"},
	} {
		if got := WriteCacheState(tc.b); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
	seek := []byte{1, 0, 0, 0, 12, 0, 0, 0, 1, 0, 0, 0}
	if !SeekPenalty(seek) {
		t.Errorf("IncursSeekPenalty 1: got false, want true")
	}
	seek[8] = 0
	if SeekPenalty(seek) || SeekPenalty(seek[:8]) {
		t.Errorf("IncursSeekPenalty 0 or a short descriptor: got true, want false")
	}
}
