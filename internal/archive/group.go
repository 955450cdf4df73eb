package archive

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// Group commit. Writes that can arrive in floods (predictions, a room's
// ballots, shares to a class board) do not each commit a transaction of
// their own, which would cost the disk one flush per request: they go to
// one committer goroutine, which commits at most one transaction per
// GroupWindow, holding every write that arrived meanwhile. A write that
// arrives when the disk is idle commits at once; under a flood each
// waits at most one window plus the commit. Each write runs inside its
// own savepoint, so one that fails is rolled back alone and the others
// commit. A grouped write returns only once its transaction committed:
// when it returns nil the write is as durable as any other.
//
// Callers take their timestamps before handing a write over, so a
// record says when the server accepted it, not when its group committed.

// GroupWindow is the least time between two group commits: at most
// 1/GroupWindow flushes a second for all grouped writes together.
const GroupWindow = 200 * time.Millisecond

// GroupCommits counts the group commits made so far by every store this
// process opened: what a test reads before and after a flood of writes
// to see how many commits it took. Nothing else reads it.
var GroupCommits atomic.Int64

// groupMax is the most writes one group commit holds.
const groupMax = 1024

// walCheckpointBytes bounds an SQLite archive's write-ahead log: after a
// group commit that leaves it larger, the committer checkpoints it and
// truncates it to zero (PRAGMA wal_checkpoint(TRUNCATE)), and
// journal_size_limit truncates it to this size after SQLite's own
// checkpoints. A flood of grouped writes keeps it under this plus one
// group's pages.
const walCheckpointBytes = 8 << 20

// groupWrite is one write waiting for a group commit.
type groupWrite struct {
	fn   func(tx *sql.Tx) error
	done chan error // receives the write's outcome once its group committed
}

// committer is a store's group committer. Close stops it.
type committer struct {
	in      chan *groupWrite
	start   sync.Once
	stop    chan struct{} // closed by Close
	stopped chan struct{} // closed when the loop has returned
}

func newCommitter() *committer {
	return &committer{in: make(chan *groupWrite), stop: make(chan struct{}), stopped: make(chan struct{})}
}

// grouped runs fn in the next group commit and returns its outcome once
// that transaction committed (or failed). After Close it returns
// ErrClosed.
func (s *sqlStore) grouped(fn func(tx *sql.Tx) error) error {
	g := s.group
	g.start.Do(func() { go s.commitLoop() })
	w := &groupWrite{fn: fn, done: make(chan error, 1)}
	select {
	case g.in <- w:
	case <-g.stop:
		return ErrClosed
	}
	return <-w.done
}

// commitLoop gathers writes and commits them, one transaction at most
// every GroupWindow, until Close.
func (s *sqlStore) commitLoop() {
	g := s.group
	defer close(g.stopped)
	var last time.Time
	for {
		var batch []*groupWrite
		select {
		case w := <-g.in:
			batch = append(batch, w)
		case <-g.stop:
			return
		}
		wait := time.NewTimer(time.Until(last.Add(GroupWindow)))
	gather:
		for len(batch) < groupMax {
			select {
			case w := <-g.in:
				batch = append(batch, w)
			case <-wait.C:
				break gather
			case <-g.stop:
				break gather
			}
		}
		wait.Stop()
		last = time.Now()
		s.commitGroup(batch)
	}
}

// commitGroup commits batch as one transaction, each write in a
// savepoint of its own, and tells every write its outcome.
func (s *sqlStore) commitGroup(batch []*groupWrite) {
	errs := make([]error, len(batch))
	err := s.use(func() error {
		ctx := context.Background()
		tx, err := s.db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		for i, w := range batch {
			if _, err := tx.ExecContext(ctx, "SAVEPOINT grouped"); err != nil {
				return err
			}
			if errs[i] = w.fn(tx); errs[i] != nil {
				if _, err := tx.ExecContext(ctx, "ROLLBACK TO SAVEPOINT grouped"); err != nil {
					return err
				}
			}
			if _, err := tx.ExecContext(ctx, "RELEASE SAVEPOINT grouped"); err != nil {
				return err
			}
		}
		return tx.Commit()
	})
	if err != nil {
		err = fmt.Errorf("archive: group commit of %d writes to %s: %w", len(batch), s.where, err)
	}
	GroupCommits.Add(1)
	for i, w := range batch {
		w.done <- errors.Join(errs[i], err)
	}
	if s.d.name == "sqlite" {
		s.boundWAL()
	}
}

// boundWAL checkpoints an SQLite archive's write-ahead log and truncates
// it when it has grown past walCheckpointBytes. Readers that hold an old
// snapshot make it wait (busy_timeout) or leave it for the next commit.
func (s *sqlStore) boundWAL() {
	st, err := os.Stat(s.where + "-wal")
	if err != nil || st.Size() <= walCheckpointBytes {
		return
	}
	s.use(func() error {
		_, err := s.db.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`)
		return err
	})
}

// stopGroup stops the committer, after the group it is gathering has
// committed. REQUIRES: s.mu not held (the last group needs it).
func (s *sqlStore) stopGroup() {
	g := s.group
	select {
	case <-g.stop:
		return
	default:
	}
	close(g.stop)
	started := true
	g.start.Do(func() { started = false })
	if started {
		<-g.stopped
	}
}
