package peers

import (
	"github.com/cockroachdb/pebble/v2"

	"kvlab/harness/script"
)

// Native multi-key writes for workload scripts (harness/script): an mput
// or mdel is one Pebble batch, committed atomically with the write
// options the sync policy asks for (one WAL sync under always).

// ScriptOps fills in the operations Pebble does natively for a script:
// mput and mdel (Range comes from Scan).
func (s *pebbleStore) ScriptOps(o *script.Ops) {
	o.MultiPut, o.MultiDelete = s.multiPut, s.multiDelete
}

// multiPut writes every key with its value in one atomic batch.
func (s *pebbleStore) multiPut(keys, values [][]byte) error {
	b := s.db.NewBatch()
	defer b.Close()
	for i, k := range keys {
		if err := b.Set(k, values[i], nil); err != nil {
			return err
		}
	}
	return s.write(func(o *pebble.WriteOptions) error { return b.Commit(o) })
}

// multiDelete deletes every key in one atomic batch.
func (s *pebbleStore) multiDelete(keys [][]byte) error {
	b := s.db.NewBatch()
	defer b.Close()
	for _, k := range keys {
		if err := b.Delete(k, nil); err != nil {
			return err
		}
	}
	return s.write(func(o *pebble.WriteOptions) error { return b.Commit(o) })
}
