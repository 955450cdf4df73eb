package peers

import (
	"fmt"
	"testing"
)

// Pebble's own metrics come with its StoreStats: what it wrote to its
// WAL, and the shape of its LSM (L0 files, compaction debt), which a
// steady-state check reads.
func TestPebbleMetrics(t *testing.T) {
	s, err := OpenPebble(t.TempDir(), "none")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := range 1000 {
		if err := s.Put(fmt.Appendf(nil, "key%06d", i), make([]byte, 100)); err != nil {
			t.Fatal(err)
		}
	}
	m := s.(*pebbleStore).StoreStats().Metrics
	for _, k := range []string{"compaction_debt_bytes", "l0_files", "write_stalls", "wal_bytes_written", "compaction_bytes_written", "disk_bytes"} {
		if _, ok := m[k]; !ok {
			t.Errorf("metrics have no %q: %v", k, m)
		}
	}
	if m["wal_bytes_written"] < 1000*100 {
		t.Errorf("wal_bytes_written %d after 1000 Puts of 100-byte values, want at least %d", m["wal_bytes_written"], 1000*100)
	}
}
