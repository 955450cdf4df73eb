package peers

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"kvlab/harness"
)

// bbolt's group commit sized to the writers: once TuneForWriters(n) has
// set the batch size, n concurrent Puts commit together as soon as the
// last one joins, without waiting out the batch delay (set to an hour
// here, so a batch that waited for it would never finish within the
// test). Other policies tune nothing.
func TestBboltGroupBatchesTheWriters(t *testing.T) {
	s, err := OpenBbolt(t.TempDir(), "group")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const writers = 4
	desc := s.(harness.WriterTuner).TuneForWriters(writers)
	if !strings.Contains(desc, "MaxBatchSize 4") {
		t.Errorf("engine_config %q, want it to name the batch size 4", desc)
	}
	bs := s.(*bboltStore)
	bs.db.MaxBatchDelay = time.Hour
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for i := range writers {
		wg.Go(func() { errs <- s.Put(fmt.Appendf(nil, "key%02d", i), []byte("v")) })
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("4 writers with a batch size of 4 still waiting after a minute: the batch waited for its delay")
	}
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	a, err := OpenBbolt(t.TempDir(), "always")
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if desc := a.(harness.WriterTuner).TuneForWriters(16); desc != "" {
		t.Errorf("always: engine_config %q, want none", desc)
	}
}
