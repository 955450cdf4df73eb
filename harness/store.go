package harness

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"kvlab/engine"
)

// Store is what the runner drives: one key-value store, open on one
// directory. Implementations must be safe for concurrent use, because the
// runner calls them from several worker goroutines at once.
type Store interface {
	Put(key, value []byte) error
	// Get reports found=false with a nil error for a missing key.
	Get(key []byte) (value []byte, found bool, err error)
	Delete(key []byte) error
	Close() error
}

// Scanner is implemented by ordered stores that can iterate keys from start.
// fn returning false stops the scan.
//
// key and value are valid only until fn returns: they may be the store's
// own memory, which the next step of the scan reuses or releases. fn copies
// what it keeps. (So a scan need not allocate per key: the seekrandom
// workload runs it inside the timed loop, and its fn only counts.)
type Scanner interface {
	Scan(start []byte, limit int, fn func(key, value []byte) bool) error
}

// StoreStats are the durability counters a store may report; the runner
// reads them before and after the timed region.
type StoreStats struct {
	Fsyncs       int64         // fdatasync (or fsync) calls on data files
	FsyncTime    time.Duration // total time spent in them
	BytesWritten int64
	// FsyncsBy splits every fdatasync the store made by cause (the
	// "fsyncs_by_cause" keys); nil for a store that does not say.
	FsyncsBy map[string]int64
	// StoredBytes is every byte the engine wrote to its files: its
	// records, and what its compactions and flushes wrote again. 0 when
	// the engine does not count it; write amplification then comes from
	// the device's counters.
	StoredBytes int64
	// Metrics are the engine's own gauges and counters (the
	// "engine_metrics" keys, docs/api.md); nil for a store that keeps
	// none.
	Metrics map[string]int64
}

// WriterTuner is implemented by a store whose group commit is sized to
// how many goroutines write at once (bbolt's batch size). The runner calls
// it once, after opening the store and before the warm-up, with the run's
// writers (-threads, or readwhilewriting's one writer), and puts the
// returned description of what it set in the result's engine_config.
type WriterTuner interface {
	TuneForWriters(n int) string
}

// StatsReporter is implemented by stores that count their syncs.
type StatsReporter interface {
	StoreStats() StoreStats
}

// OpenFunc opens a store in dir, which exists and is empty, with the sync
// policy as written after -sync ("always", "batch:64", ...). A store that
// cannot honour the policy returns an error saying which policies it has.
type OpenFunc func(dir string, sync string) (Store, error)

// ContextOpenFunc opens a store as an OpenFunc does, for a store that
// waits on another process (a server it reaches over the network): ctx is
// the run's. Connecting gives up when ctx is done, and once ctx is done
// the store closes its connections, so that a call waiting on a server
// that never answers returns at once and the run ends within its budget.
type ContextOpenFunc func(ctx context.Context, dir string, sync string) (Store, error)

var (
	enginesMu sync.Mutex                     // guards engines
	engines   = map[string]ContextOpenFunc{} // by -engine name
)

// unordered names the registered engines that cannot scan keys in order,
// with the reason, so a seekrandom line is refused before anything runs.
// Written only from init functions (MarkUnordered), so read without a lock.
var unordered = map[string]string{}

// RegisterEngine makes a store available as -engine name. It is meant to
// be called from init functions; it panics on a duplicate or empty name,
// which is a programming error.
func RegisterEngine(name string, open OpenFunc) {
	if open == nil {
		panic(fmt.Sprintf("harness: RegisterEngine(%q): nil OpenFunc", name))
	}
	RegisterEngineContext(name, func(_ context.Context, dir, sync string) (Store, error) { return open(dir, sync) })
}

// RegisterEngineContext is RegisterEngine for a store that is given the
// run's context (ContextOpenFunc).
func RegisterEngineContext(name string, open ContextOpenFunc) {
	enginesMu.Lock()
	defer enginesMu.Unlock()
	if name == "" || strings.ContainsAny(name, ", \t") || open == nil {
		panic(fmt.Sprintf("harness: RegisterEngine(%q): invalid name or nil OpenFunc", name))
	}
	if _, dup := engines[name]; dup {
		panic(fmt.Sprintf("harness: RegisterEngine(%q) called twice", name))
	}
	engines[name] = open
}

// MarkUnordered records that the registered engine name cannot scan keys
// in order, and why, so a line that scans is refused before anything
// runs. It is meant to be called from init functions.
func MarkUnordered(name, why string) {
	enginesMu.Lock()
	defer enginesMu.Unlock()
	unordered[name] = why
}

// Engines returns the registered engine names, sorted.
func Engines() []string {
	enginesMu.Lock()
	defer enginesMu.Unlock()
	names := make([]string, 0, len(engines))
	for n := range engines {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// OpenEngine opens the registered engine name in dir with the sync policy
// text, with no context of a run's: a script opens its store with it, and
// tests that drive every engine through the Store seam use it.
func OpenEngine(name, dir, sync string) (Store, error) {
	open, err := lookupEngine(name)
	if err != nil {
		return nil, err
	}
	return open(dir, sync)
}

// lookupEngine returns the OpenFunc for name, or an error listing the
// engines that exist. A store that takes a context gets none that ends:
// a run opens its store with lookupEngineContext.
func lookupEngine(name string) (OpenFunc, error) {
	return lookupEngineContext(context.Background(), name)
}

// lookupEngineContext returns the OpenFunc for name, with ctx (the run's)
// handed to a store that takes one (ContextOpenFunc).
func lookupEngineContext(ctx context.Context, name string) (OpenFunc, error) {
	var open ContextOpenFunc
	if scheme, _, ok := strings.Cut(name, "://"); ok {
		var err error
		if open, err = lookupScheme(name, scheme); err != nil {
			return nil, err
		}
	} else {
		enginesMu.Lock()
		o, ok := engines[name]
		enginesMu.Unlock()
		if !ok {
			return nil, fmt.Errorf("-engine %s: unknown engine; allowed: %s", name, strings.Join(EngineNames(), ", "))
		}
		open = o
	}
	return func(dir, sync string) (Store, error) { return open(ctx, dir, sync) }, nil
}

// Engines named by a URL.
//
// Some stores are not a directory the harness opens but a server it
// connects to: -engine resp://127.0.0.1:6380 drives whatever speaks the
// Redis protocol there. Such an engine is registered by its scheme, and
// the scheme's SchemeFunc turns the whole name into an OpenFunc (checking
// the address when the line is parsed, before anything runs). The run's
// directory is still made and removed, and still the one whose device
// the runner watches: on one machine that is the server's disk only if
// the server keeps its data on the same device.

// SchemeFunc returns the OpenFunc for an -engine value of its scheme
// (the whole value, "resp://HOST:PORT?..."), or an error naming what is
// wrong with it and what is allowed.
type SchemeFunc func(name string) (OpenFunc, error)

// SchemeContextFunc is a SchemeFunc whose stores are given the run's
// context (ContextOpenFunc).
type SchemeContextFunc func(name string) (ContextOpenFunc, error)

// scheme is one registered URL scheme.
type scheme struct {
	open    SchemeContextFunc
	example string // e.g. "resp://HOST:PORT", for the usage text
	// unordered says why its stores cannot scan keys in order; "" when
	// they can.
	unordered string
}

var schemes = map[string]scheme{} // by scheme; guarded by enginesMu

// RegisterSchemeContext makes every -engine value scheme://... open
// through open, whose stores are given the run's context
// (ContextOpenFunc), so that a silent server cannot hold a run past its
// budget. example shows the form in the usage text; unordered, when not
// empty, says why these stores cannot scan keys in order. Like
// RegisterEngine it is meant for init functions and panics on a
// duplicate.
func RegisterSchemeContext(name, example, unorderedWhy string, open SchemeContextFunc) {
	enginesMu.Lock()
	defer enginesMu.Unlock()
	if _, dup := schemes[name]; dup || name == "" || open == nil {
		panic(fmt.Sprintf("harness: RegisterScheme(%q): empty, duplicate or nil", name))
	}
	schemes[name] = scheme{open: open, example: example, unordered: unorderedWhy}
}

// lookupScheme opens an engine named by a URL.
func lookupScheme(name, sch string) (ContextOpenFunc, error) {
	enginesMu.Lock()
	s, ok := schemes[sch]
	enginesMu.Unlock()
	if !ok {
		return nil, fmt.Errorf("-engine %s: unknown scheme %s://; allowed: %s", name, sch, strings.Join(EngineNames(), ", "))
	}
	return s.open(name)
}

// EngineNames returns what -engine takes, for usage and error text: the
// registered engines, sorted, then each scheme's example.
func EngineNames() []string {
	names := Engines()
	enginesMu.Lock()
	defer enginesMu.Unlock()
	var ex []string
	for _, s := range schemes {
		ex = append(ex, s.example)
	}
	sort.Strings(ex)
	return append(names, ex...)
}

// Unordered says whether engine e (a registered name or a URL) cannot
// scan keys in order, and why: a line that scans on it is refused.
func Unordered(e string) (why string, ok bool) {
	if sch, _, ok := strings.Cut(e, "://"); ok {
		enginesMu.Lock()
		s := schemes[sch]
		enginesMu.Unlock()
		return s.unordered, s.unordered != ""
	}
	why, ok = unordered[e]
	return why, ok
}

func init() {
	RegisterEngine("null", openNull)
}

// nullStore does nothing and remembers nothing. Measured through the
// harness it shows what the harness itself costs per operation: the clock
// reads, the recording and the loop. Every Get misses.
type nullStore struct{}

func openNull(dir, sync string) (Store, error) {
	if _, err := parseSync(sync); err != nil {
		return nil, err
	}
	return nullStore{}, nil
}

func (nullStore) Put(key, value []byte) error          { return nil }
func (nullStore) Get(key []byte) ([]byte, bool, error) { return nil, false, nil }
func (nullStore) Delete(key []byte) error              { return nil }
func (nullStore) Close() error                         { return nil }

// Scan visits nothing, so seekrandom on null measures the harness alone.
func (nullStore) Scan(start []byte, limit int, fn func(key, value []byte) bool) error { return nil }

// parseSync reads a -sync value with engine.ParseSync, the one parser of
// the policy grammar, and words a bad value for the command line: the flag,
// the value, what was wrong and what is allowed, as in
// "-sync batch:0: batch:N needs N between 1 and 1048576".
func parseSync(s string) (engine.SyncPolicy, error) {
	p, err := engine.ParseSync(s)
	if se, ok := errors.AsType[*engine.SyncError](err); ok {
		return p, fmt.Errorf("-sync %s: %s", s, se.Reason)
	}
	return p, err
}
