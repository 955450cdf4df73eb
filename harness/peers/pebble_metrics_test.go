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

// A long enough run reaches Pebble's steady state of reusing WAL files:
// after a few memtable flushes the next WAL is an old one recycled, and
// the metrics say so and when. A fresh store's first WAL is never one.
func TestPebbleWALReuse(t *testing.T) {
	s, err := OpenPebble(t.TempDir(), "none")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ps := s.(*pebbleStore)
	if m := ps.StoreStats().Metrics; m["wal_files_recycled"] != 0 || m["wal_files_created"] < 1 {
		t.Fatalf("fresh store: %v, want a WAL created and none recycled", m)
	}
	value := make([]byte, 1000)
	for i := 0; i < 40000 && ps.StoreStats().Metrics["wal_files_recycled"] == 0; i++ {
		if err := s.Put(fmt.Appendf(nil, "key%06d", i%5000), value); err != nil {
			t.Fatal(err)
		}
	}
	m := ps.StoreStats().Metrics
	if m["wal_files_recycled"] == 0 {
		t.Fatalf("40 MB through 4 MiB memtables and no WAL recycled: %v", m)
	}
	if _, ok := m["wal_reuse_started_ms"]; !ok {
		t.Errorf("wal_files_recycled %d but no wal_reuse_started_ms: %v", m["wal_files_recycled"], m)
	}
}
