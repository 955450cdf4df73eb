package peers

import (
	"database/sql"
	"errors"

	"kvlab/engine"
	"kvlab/harness/script"
)

// Native operations for workload scripts (harness/script) on SQLite: a
// range is one SELECT ... WHERE k >= lo AND k < hi ORDER BY k LIMIT n; an
// mget is one read transaction; an mput or mdel one write transaction
// (atomic), committed as the sync policy says for one write (under
// batch:N its keys join the open transaction, each counting one of the N).

// ScriptOps fills in range, mget, mput and mdel.
func (s *sqliteStore) ScriptOps(o *script.Ops) {
	o.Range, o.MultiGet, o.MultiPut, o.MultiDelete = s.scriptRange, s.multiGet, s.multiPut, s.multiDelete
}

// scriptRange visits the keys of [lo, hi) in order, at most limit of
// them (0: all); hi empty: no upper bound.
func (s *sqliteStore) scriptRange(lo, hi []byte, limit int, fn func(k, v []byte) bool) error {
	if len(hi) == 0 {
		return s.Scan(lo, limit, fn)
	}
	if limit <= 0 {
		limit = -1 // SQLite: a negative LIMIT is no limit
	}
	if lo == nil {
		lo = []byte{}
	}
	const q = "SELECT k, v FROM kv WHERE k >= ? AND k < ? ORDER BY k LIMIT ?"
	if s.policy.Mode == engine.SyncBatch {
		// Through the open transaction, if any, so the range sees its
		// writes; the writer's lock is held until the rows are read.
		s.write.Lock()
		defer s.write.Unlock()
		if s.tx != nil {
			rows, err := s.tx.Query(q, lo, hi, limit)
			if err != nil {
				return err
			}
			return visitRows(rows, fn)
		}
	}
	rows, err := s.db.Query(q, lo, hi, limit)
	if err != nil {
		return err
	}
	return visitRows(rows, fn)
}

// multiGet reads every key in one read transaction.
func (s *sqliteStore) multiGet(keys [][]byte, fn func(i int, value []byte, found bool)) error {
	st, done := s.reading(s.get)
	defer done()
	var tx *sql.Tx
	if st == s.get { // no batch transaction open: one of our own
		var err error
		if tx, err = s.db.Begin(); err != nil {
			return err
		}
		defer tx.Rollback()
		st = tx.Stmt(s.get)
	}
	for i, k := range keys {
		var v []byte
		err := st.QueryRow(k).Scan(&v)
		if errors.Is(err, sql.ErrNoRows) {
			fn(i, nil, false)
			continue
		}
		if err != nil {
			return err
		}
		if v == nil {
			v = []byte{}
		}
		fn(i, v, true)
	}
	if tx != nil {
		return tx.Commit()
	}
	return nil
}

// multiPut writes every key with its value in one transaction.
func (s *sqliteStore) multiPut(keys, values [][]byte) error {
	args := make([][]any, len(keys))
	for i, k := range keys {
		v := values[i]
		if v == nil {
			v = []byte{}
		}
		args[i] = []any{k, v}
	}
	return s.execMany(s.put, args)
}

// multiDelete deletes every key in one transaction.
func (s *sqliteStore) multiDelete(keys [][]byte) error {
	args := make([][]any, len(keys))
	for i, k := range keys {
		args[i] = []any{k}
	}
	return s.execMany(s.del, args)
}

// execMany runs stmt once per args in one transaction, as the policy
// asks: under batch:N in the open transaction, each run one of its N
// writes; otherwise in a transaction of its own, committed at once.
func (s *sqliteStore) execMany(stmt *sql.Stmt, args [][]any) error {
	s.write.Lock()
	defer s.write.Unlock()
	switch s.policy.Mode {
	case engine.SyncBatch:
		return s.batchLocked(stmt, args)
	case engine.SyncPeriodic:
		if err := s.periodic.err(); err != nil {
			return err
		}
	}
	tx, err := s.db.Begin()
	if err != nil {
		return err
	}
	st := tx.Stmt(stmt)
	for _, a := range args {
		if _, err := st.Exec(a...); err != nil {
			tx.Rollback()
			return err
		}
	}
	return tx.Commit()
}
