package peers

import (
	"fmt"

	"kvlab/harness/script"
)

// Native multi-key operations for workload scripts (harness/script) on a
// Redis-protocol server: MGET, MSET (atomic in Redis) and a DEL of many
// keys, one round trip each.

// ScriptOps fills in the operations a Redis server does natively for a
// script: mget, mput and mdel.
func (s *respStore) ScriptOps(o *script.Ops) {
	o.MultiGet, o.MultiPut, o.MultiDelete = s.multiGet, s.multiPut, s.multiDelete
}

// ScriptOps: kvserver answers MGET, MSET and a DEL of many keys, as
// Redis does.
func (s *kvserverStore) ScriptOps(o *script.Ops) {
	o.MultiGet, o.MultiPut, o.MultiDelete = s.multiGet, s.multiPut, s.multiDelete
}

// multiGet reads every key with one MGET.
func (s *respStore) multiGet(keys [][]byte, fn func(i int, value []byte, found bool)) error {
	args := append([][]byte{[]byte("MGET")}, keys...)
	rep, err := s.do(args...)
	if err == nil {
		err = rep.Err()
	}
	if err != nil {
		return err
	}
	if len(rep.Elems) != len(keys) {
		return fmt.Errorf("MGET of %d keys: %d replies", len(keys), len(rep.Elems))
	}
	for i, r := range rep.Elems {
		fn(i, r.Str, !r.Null)
	}
	return nil
}

// multiPut writes every key with one MSET.
func (s *respStore) multiPut(keys, values [][]byte) error {
	args := make([][]byte, 0, 1+2*len(keys))
	args = append(args, []byte("MSET"))
	for i, k := range keys {
		args = append(args, k, values[i])
	}
	rep, err := s.do(args...)
	if err == nil {
		err = rep.Err()
	}
	return err
}

// multiDelete deletes every key with one DEL.
func (s *respStore) multiDelete(keys [][]byte) error {
	rep, err := s.do(append([][]byte{[]byte("DEL")}, keys...)...)
	if err == nil {
		err = rep.Err()
	}
	return err
}
