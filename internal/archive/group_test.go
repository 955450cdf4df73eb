package archive

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"
)

// TestGroupCommit: a flood of concurrent predictions is stored whole in a
// few group commits (not one per write); each keeps the time it was
// accepted; a write that fails inside a group is rolled back alone.
func TestGroupCommit(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		a := openFresh(t, b)
		ctx := context.Background()
		const n = 300
		before := GroupCommits.Load()
		start := time.Now()
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				p := &Prediction{Browser: fmt.Sprintf("b%d", i), Quiz: "q", Value: "1"}
				if _, err := a.AddPrediction(ctx, p); err != nil {
					errs <- err
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		took := time.Since(start)
		commits := GroupCommits.Load() - before
		// At most one commit per window, plus the one that starts at once.
		if max := int64(took/GroupWindow) + 2; commits > max || commits < 1 {
			t.Errorf("%d writes in %v took %d group commits, want 1 to %d", n, took, commits, max)
		}
		for i := range n {
			ps, err := a.Predictions(ctx, fmt.Sprintf("b%d", i), "q")
			if err != nil || len(ps) != 1 {
				t.Fatalf("b%d: %v, %v; want its one prediction", i, ps, err)
			}
			if ps[0].At.Before(start.Add(-time.Second)) || ps[0].At.After(start.Add(took)) {
				t.Errorf("b%d: stored at %v, want within the flood", i, ps[0].At)
			}
		}
		// One failing write in a group leaves the others.
		s := a.(*sqlStore)
		bad := errors.New("this write fails")
		var wg2 sync.WaitGroup
		results := make([]error, 3)
		for i := range 3 {
			wg2.Add(1)
			go func() {
				defer wg2.Done()
				results[i] = s.grouped(func(tx *sql.Tx) error {
					if _, err := tx.Exec(s.d.rebind(`INSERT INTO predictions (browser, lesson, quiz, value, at) VALUES (?,'','g','1',1)`), fmt.Sprintf("g%d", i)); err != nil {
						return err
					}
					if i == 1 {
						return bad
					}
					return nil
				})
			}()
		}
		wg2.Wait()
		for i, want := range []error{nil, bad, nil} {
			if !errors.Is(results[i], want) && results[i] != want {
				t.Errorf("grouped write %d: %v, want %v", i, results[i], want)
			}
			ps, _ := a.Predictions(ctx, fmt.Sprintf("g%d", i), "g")
			if stored := len(ps) == 1; stored != (want == nil) {
				t.Errorf("grouped write %d stored: %v, want %v", i, stored, want == nil)
			}
		}
	})
}

// TestGroupCommitAfterClose: a grouped write after Close is ErrClosed,
// and Close does not wait for writers that never come.
func TestGroupCommitAfterClose(t *testing.T) {
	dir := t.TempDir()
	a, err := Open(context.Background(), "", dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.AddPrediction(context.Background(), &Prediction{Browser: "b", Quiz: "q"}); err != nil {
		t.Fatal(err)
	}
	a.Close()
	if _, err := a.AddPrediction(context.Background(), &Prediction{Browser: "b", Quiz: "q"}); !errors.Is(err, ErrClosed) {
		t.Errorf("after Close: %v, want ErrClosed", err)
	}
	if st, err := os.Stat(dir + "/" + FileName + "-wal"); err == nil && st.Size() > walCheckpointBytes {
		t.Errorf("WAL of %d bytes after Close", st.Size())
	}
}
