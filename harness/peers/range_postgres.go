package peers

import (
	"context"
	"database/sql"
	"errors"

	"kvlab/harness/script"
)

// Native operations for workload scripts (harness/script) on PostgreSQL:
// a range is one SELECT ... WHERE k >= lo AND k < hi ORDER BY k LIMIT n;
// an mget is one read transaction; an mput or mdel one transaction
// (atomic: every key or none), one commit and so one WAL flush under the
// server's synchronous_commit.

// ScriptOps fills in range, mget, mput and mdel.
func (s *postgresStore) ScriptOps(o *script.Ops) {
	o.Range, o.MultiGet, o.MultiPut, o.MultiDelete = s.scriptRange, s.multiGet, s.multiPut, s.multiDelete
}

// scriptRange visits the keys of [lo, hi) in order, at most limit of
// them (0: all); hi empty: no upper bound.
func (s *postgresStore) scriptRange(lo, hi []byte, limit int, fn func(k, v []byte) bool) error {
	if len(hi) == 0 {
		return s.Scan(lo, limit, fn)
	}
	if lo == nil {
		lo = []byte{}
	}
	var lim any // NULL: no limit
	if limit > 0 {
		lim = limit
	}
	return s.with(func(c *sql.Conn) error {
		rows, err := c.QueryContext(context.Background(), "SELECT k, v FROM kvlab_kv WHERE k >= $1 AND k < $2 ORDER BY k LIMIT $3", lo, hi, lim)
		if err != nil {
			return err
		}
		return visitRows(rows, fn)
	})
}

// inTx runs fn in one transaction on one connection, committed when fn
// returns nil, rolled back otherwise.
func (s *postgresStore) inTx(readOnly bool, fn func(tx *sql.Tx) error) error {
	return s.with(func(c *sql.Conn) error {
		ctx := context.Background()
		tx, err := c.BeginTx(ctx, &sql.TxOptions{ReadOnly: readOnly})
		if err != nil {
			return err
		}
		if err := fn(tx); err != nil {
			tx.Rollback()
			return err
		}
		return tx.Commit()
	})
}

// multiGet reads every key in one read-only transaction.
func (s *postgresStore) multiGet(keys [][]byte, fn func(i int, value []byte, found bool)) error {
	return s.inTx(true, func(tx *sql.Tx) error {
		ctx := context.Background()
		for i, k := range keys {
			var v []byte
			err := tx.QueryRowContext(ctx, "SELECT v FROM kvlab_kv WHERE k = $1", k).Scan(&v)
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
		return nil
	})
}

// multiPut writes every key with its value in one transaction.
func (s *postgresStore) multiPut(keys, values [][]byte) error {
	return s.inTx(false, func(tx *sql.Tx) error {
		ctx := context.Background()
		for i, k := range keys {
			v := values[i]
			if v == nil {
				v = []byte{}
			}
			if _, err := tx.ExecContext(ctx, "INSERT INTO kvlab_kv (k, v) VALUES ($1, $2) ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v", k, v); err != nil {
				return err
			}
		}
		return nil
	})
}

// multiDelete deletes every key in one transaction.
func (s *postgresStore) multiDelete(keys [][]byte) error {
	return s.inTx(false, func(tx *sql.Tx) error {
		ctx := context.Background()
		for _, k := range keys {
			if _, err := tx.ExecContext(ctx, "DELETE FROM kvlab_kv WHERE k = $1", k); err != nil {
				return err
			}
		}
		return nil
	})
}
