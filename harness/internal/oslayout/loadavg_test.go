package oslayout

import (
	"encoding/binary"
	"testing"
)

// TestLoadavgStructReadsBSDLayout builds struct loadavg as macOS and FreeBSD lay
// it out (ldavg[3] as uint32, then the long fscale at its alignment) and
// reads the 1-minute load back.
func TestLoadavgStructReadsBSDLayout(t *testing.T) {
	build := func(long int, ld0 uint32, scale uint64) []byte {
		b := make([]byte, 12+long+long)
		binary.NativeEndian.PutUint32(b, ld0)
		binary.NativeEndian.PutUint32(b[4:], 7)
		binary.NativeEndian.PutUint32(b[8:], 9)
		if long == 8 {
			binary.NativeEndian.PutUint64(b[16:], scale)
		} else {
			binary.NativeEndian.PutUint32(b[12:], uint32(scale))
		}
		return b[:(12+long-1)/long*long+long]
	}
	for _, tc := range []struct {
		name string
		b    []byte
		long int
		want float64
	}{
		{"64-bit, 1.5", build(8, 3072, 2048), 8, 1.5},
		{"32-bit, 0.25", build(4, 512, 2048), 4, 0.25},
		{"zero scale", build(8, 3072, 0), 8, 0},
		{"short", build(8, 3072, 2048)[:20], 8, 0},
		{"odd long", build(8, 3072, 2048), 2, 0},
	} {
		if got := LoadavgStruct(tc.b, tc.long); got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}
