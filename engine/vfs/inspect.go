package vfs

import "bytes"

// Contains reports whether any file in the live namespace holds b: in
// its synced (power-cut-proof) bytes when synced, else in its current
// bytes, synced or not (what the OS holds). Tests use it to follow a
// write through the layers.
func (m *MemFS) Contains(b []byte, synced bool) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, n := range m.live {
		data := n.data
		if synced {
			data = n.synced
		}
		if bytes.Contains(data, b) {
			return true
		}
	}
	return false
}
