package peers

import (
	"bytes"

	bolt "go.etcd.io/bbolt"

	"kvlab/harness/script"
)

// Native multi-key operations for workload scripts (harness/script) on
// bbolt: an mget is one read transaction, an mput or mdel one read-write
// transaction (atomic), committed as the sync policy says for one write.

// ScriptOps fills in mget, mput and mdel (Range comes from Scan).
func (s *bboltStore) ScriptOps(o *script.Ops) {
	o.MultiGet, o.MultiPut, o.MultiDelete = s.multiGet, s.multiPut, s.multiDelete
}

func (s *bboltStore) multiGet(keys [][]byte, fn func(i int, value []byte, found bool)) error {
	return s.view(func(b *bolt.Bucket) error {
		for i, k := range keys {
			v := b.Get(k)
			fn(i, v, v != nil) // valid inside the transaction, as fn needs
		}
		return nil
	})
}

func (s *bboltStore) multiPut(keys, values [][]byte) error {
	// bbolt keeps the slices until the transaction commits, which under
	// batch:N is after this returns: copy them.
	ks, vs := make([][]byte, len(keys)), make([][]byte, len(keys))
	for i := range keys {
		ks[i], vs[i] = bytes.Clone(keys[i]), bytes.Clone(values[i])
	}
	return s.update(func(b *bolt.Bucket) error {
		for i := range ks {
			if err := b.Put(ks[i], vs[i]); err != nil {
				return err
			}
		}
		return nil
	})
}

func (s *bboltStore) multiDelete(keys [][]byte) error {
	ks := make([][]byte, len(keys))
	for i := range keys {
		ks[i] = bytes.Clone(keys[i])
	}
	return s.update(func(b *bolt.Bucket) error {
		for _, k := range ks {
			if err := b.Delete(k); err != nil {
				return err
			}
		}
		return nil
	})
}
