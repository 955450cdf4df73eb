package harness

import (
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
}

// StatsReporter is implemented by stores that count their syncs.
type StatsReporter interface {
	StoreStats() StoreStats
}

// OpenFunc opens a store in dir, which exists and is empty, with the sync
// policy as written after -sync ("always", "batch:64", ...). A store that
// cannot honour the policy returns an error saying which policies it has.
type OpenFunc func(dir string, sync string) (Store, error)

var (
	enginesMu sync.Mutex              // guards engines
	engines   = map[string]OpenFunc{} // by -engine name
)

// unordered names the registered engines that cannot scan keys in order,
// with the reason, so a seekrandom line is refused before anything runs.
// Written only from init functions.
var unordered = map[string]string{}

// RegisterEngine makes a store available as -engine name. It is meant to
// be called from init functions; it panics on a duplicate or empty name,
// which is a programming error.
func RegisterEngine(name string, open OpenFunc) {
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
// text, exactly as a run does. Tests that drive every engine through the
// Store seam use it.
func OpenEngine(name, dir, sync string) (Store, error) {
	open, err := lookupEngine(name)
	if err != nil {
		return nil, err
	}
	return open(dir, sync)
}

// lookupEngine returns the OpenFunc for name, or an error listing the
// engines that exist.
func lookupEngine(name string) (OpenFunc, error) {
	enginesMu.Lock()
	open, ok := engines[name]
	enginesMu.Unlock()
	if !ok {
		return nil, fmt.Errorf("-engine %s: unknown engine; allowed: %s", name, strings.Join(Engines(), ", "))
	}
	return open, nil
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
