package harness

import (
	"errors"

	"kvlab/engine"
)

// The kv engine: the lab's own Bitcask-model store (package kvlab/engine),
// behind the Store seam. Every -sync policy maps one to one onto the
// engine's SyncPolicy.

func init() {
	RegisterEngine("kv", openKV)
	unordered["kv"] = "its index is a hash table, which keeps no key order"
}

// kvStore adapts *engine.DB to Store, StatsReporter and SyncTimer. Safe
// for concurrent use, as the DB is.
type kvStore struct {
	db    *engine.DB
	syncs *SyncTimes // every fdatasync of a segment file, timed by syncTimingFS
}

func openKV(dir, sync string) (Store, error) {
	// Background compaction is on, as in every engine a long run meets:
	// the sealed segments are rewritten when half their bytes are garbage,
	// and writes stall while its debt is past the default bound.
	return openKVCompacting(dir, sync, engine.DefaultAutoCompact)
}

// openKVCompacting is openKV with Options.AutoCompact auto (0: no
// background compaction, as the compaction targets' comparison runs).
func openKVCompacting(dir, sync string, auto float64) (Store, error) {
	p, err := engine.ParseSync(sync)
	if err != nil {
		return nil, err
	}
	syncs := new(SyncTimes)
	db, err := engine.Open(dir, engine.Options{Sync: p, FS: syncTimingFS{FS: kvFS(), times: syncs}, AutoCompact: auto})
	if err != nil {
		return nil, err
	}
	return kvStore{db, syncs}, nil
}

func (s kvStore) Put(key, value []byte) error { return s.db.Put(key, value) }
func (s kvStore) Delete(key []byte) error     { return s.db.Delete(key) }
func (s kvStore) Close() error                { return s.db.Close() }

func (s kvStore) Get(key []byte) ([]byte, bool, error) {
	v, err := s.db.Get(key)
	if errors.Is(err, engine.ErrNotFound) {
		return nil, false, nil
	}
	return v, err == nil, err
}

func (s kvStore) SyncTimes() *SyncTimes { return s.syncs }

func (s kvStore) StoreStats() StoreStats {
	st := s.db.Stats()
	by := st.FsyncsBy
	return StoreStats{Fsyncs: st.Fsyncs, FsyncTime: st.FsyncTime, BytesWritten: st.BytesWritten,
		FsyncsBy: map[string]int64{
			"commit": by.Commit, "seal": by.Seal, "prealloc": by.Prealloc,
			"compaction": by.Compaction, "hint": by.Hint, "open": by.Open,
		},
		StoredBytes: st.BytesWritten + st.CompactionWritten,
		Metrics: map[string]int64{
			"compaction_debt_bytes":    st.CompactionDebt,
			"sealed_bytes":             st.SealedBytes,
			"disk_bytes":               st.DiskBytes,
			"live_bytes":               st.LiveBytes,
			"compaction_bytes_written": st.CompactionWritten,
			"compaction_bytes_read":    st.CompactionRead,
			"compactions":              st.Compactions,
			"background_compactions":   st.BackgroundCompactions,
			"write_stalls":             st.WriteStalls,
			"write_stall_ns":           st.StallTime.Nanoseconds(),
		}}
}
