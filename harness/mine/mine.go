package mine

import (
	"context"
	"errors"
	"fmt"
	"runtime/metrics"
	"sync"
	"time"

	"kvlab/engine/vfs"
	"kvlab/gohost"
	"kvlab/gohost/kvfs"
	"kvlab/harness"
)

func init() {
	harness.RegisterSourceEngine("mine", func(ctx context.Context, dir, source string) (harness.Store, error) {
		return open(ctx, dir, source, false)
	})
	harness.RegisterSourceEngine("mine-null", func(ctx context.Context, dir, source string) (harness.Store, error) {
		return open(ctx, dir, source, true)
	})
	harness.MarkUnordered("mine", "your store's Get reads one key; it has no Scan")
	harness.MarkUnordered("mine-null", "your store's Get reads one key; it has no Scan")
}

// callLimit is how long one call into the code may run: an exercise's
// Put takes a few milliseconds on the slowest disk. A variable so that a
// test need not wait for it.
var callLimit = 5 * time.Second

// Bounds on the store's code (doc.go).
const (
	// maxHeapGrowth is how much the Go heap may grow while the store is
	// open.
	maxHeapGrowth = 512 << 20
	// maxStackGrowth is how much the goroutines' stacks may grow while
	// the store is open. A recursion that never ends must be stopped
	// well before a stack reaches Go's limit (1 GB on 64-bit), which ends
	// the whole process with a fatal error no recover can catch; every
	// interpreted call takes some kilobytes of stack, and an exercise's
	// store needs a few levels.
	maxStackGrowth = 64 << 20
	// watchEvery is how often the watch looks at the clock and the heap.
	watchEvery = 20 * time.Millisecond
)

// store is a student's store open on a directory, as a harness.Store.
// It is safe for concurrent use: n runs one call at a time.
type store struct {
	n    *gohost.Native
	disk *diskFS // nil on mine-null
	sync *harness.SyncTimes

	// calls is held for the whole of each call into the code: calls
	// queue here, and the watch times the one that runs.
	calls sync.Mutex

	// The call into the code now running, for the watch.
	mu    sync.Mutex // guards call, key and since
	call  string     // "Open", "Put" or "Get"; "" between calls
	key   string     // its key
	since time.Time  // when it started

	stopWatch context.CancelFunc
	watched   chan struct{} // closed when the watch has returned
}

// open loads source, starts its watch and calls its Open on dir (on a
// filesystem that keeps nothing when null).
func open(ctx context.Context, dir, source string, null bool) (harness.Store, error) {
	lctx, cancel := context.WithTimeoutCause(ctx, callLimit, fmt.Errorf("mine: evaluating the code took more than %s", callLimit))
	n, err := gohost.LoadNative(lctx, source)
	cancel()
	if err != nil {
		var ce *gohost.CodeError
		if errors.As(err, &ce) {
			return nil, fmt.Errorf("your code: %w", ce)
		}
		return nil, err
	}
	s := &store{n: n, sync: new(harness.SyncTimes), watched: make(chan struct{})}
	var under vfs.FS = nullFS{}
	if !null {
		s.disk = &diskFS{times: s.sync}
		under = s.disk
	}
	wctx, cancel := context.WithCancel(ctx)
	s.stopWatch = cancel
	go s.watch(wctx, ctx)
	fsys := kvfs.New(under, dir, kvfs.Config{})
	if err := s.do("Open", "", func() error { return n.Open(fsys) }); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// do runs one call into the code, what of key, named for the watch.
func (s *store) do(what, key string, call func() error) error {
	s.calls.Lock()
	defer s.calls.Unlock()
	s.mu.Lock()
	s.call, s.key, s.since = what, key, time.Now()
	s.mu.Unlock()
	err := call()
	s.mu.Lock()
	s.call = ""
	s.mu.Unlock()
	return err
}

// watch stops the code when the run's context ends, when one call runs
// past callLimit or when the heap grows past maxHeapGrowth; it returns
// when wctx ends.
func (s *store) watch(wctx, run context.Context) {
	defer close(s.watched)
	base, stackBase := memBytes()
	tick := time.NewTicker(watchEvery)
	defer tick.Stop()
	for {
		select {
		case <-wctx.Done():
			if run.Err() != nil {
				s.n.Stop(fmt.Errorf("the run was stopped: %w", context.Cause(run)))
			}
			return
		case <-tick.C:
		}
		s.mu.Lock()
		call, key, since := s.call, s.key, s.since
		s.mu.Unlock()
		if call != "" && time.Since(since) > callLimit {
			switch call {
			case "Open":
				call = "Open(fs)"
			case "Put":
				call = fmt.Sprintf("Put(%q, …)", key)
			default:
				call = fmt.Sprintf("%s(%q)", call, key)
			}
			s.n.Stop(fmt.Errorf("mine: %s was still running after %s: a loop that never ends? One call of an exercise's store takes milliseconds", call, callLimit))
		}
		now, stack := memBytes()
		base, stackBase = min(base, now), min(stackBase, stack) // growth counts from the smallest seen
		if stack-stackBase > maxStackGrowth {
			s.n.Stop(fmt.Errorf("mine: the stacks grew by %s while your store ran, past the cap of %s: a recursion that never ends? The run is stopped before Go's own limit would end the whole server", harness.FormatBytes(int64(stack-stackBase)), harness.FormatBytes(maxStackGrowth)))
		}
		if now-base > maxHeapGrowth {
			s.n.Stop(fmt.Errorf("mine: the heap grew by %s while your store ran, past the cap of %s: a store of the exercises keeps one copy of each key and value", harness.FormatBytes(int64(now-base)), harness.FormatBytes(maxHeapGrowth)))
		}
	}
}

// memBytes returns the bytes of live and not yet swept heap objects, and
// of the memory reserved for goroutine stacks.
func memBytes() (heap, stacks uint64) {
	m := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/heap/stacks:bytes"}}
	metrics.Read(m)
	v := func(i int) uint64 {
		if m[i].Value.Kind() != metrics.KindUint64 {
			return 0
		}
		return m[i].Value.Uint64()
	}
	return v(0), v(1)
}

// Put implements harness.Store.
func (s *store) Put(key, value []byte) error {
	k := string(key)
	return s.do("Put", k, func() error { return s.n.Put(k, string(value)) })
}

// Get implements harness.Store.
func (s *store) Get(key []byte) ([]byte, bool, error) {
	var v string
	var ok bool
	k := string(key)
	err := s.do("Get", k, func() (err error) {
		v, ok, err = s.n.Get(k)
		return err
	})
	if err != nil || !ok {
		return nil, false, err
	}
	return []byte(v), true, nil
}

// Delete implements harness.Store: the exercises' stores have none.
func (s *store) Delete([]byte) error { return ErrNoDelete }

// Close stops the watch and the interpreter and closes every file the
// store opened (its Store has no Close of its own).
func (s *store) Close() error {
	s.stopWatch()
	<-s.watched
	s.n.Stop(errors.New("mine: the store was closed"))
	s.n.Close()
	if s.disk != nil {
		s.disk.closeAll()
	}
	return nil
}

// StoreStats implements harness.StatsReporter: fdatasyncs and directory
// fsyncs, both counted as fsyncs and split in FsyncsBy.
func (s *store) StoreStats() harness.StoreStats {
	if s.disk == nil {
		return harness.StoreStats{FsyncsBy: map[string]int64{"fdatasync": 0, "fsync-dir": 0}}
	}
	return s.disk.stats()
}

// SyncTimes implements harness.SyncTimer.
func (s *store) SyncTimes() *harness.SyncTimes { return s.sync }
