package peers

import (
	"errors"
	"testing"

	"kvlab/engine"
	"kvlab/harness"
)

// testOpeners opens each engine the suite knows by name. The harness keeps
// its registry's OpenFuncs to itself (it exports RegisterEngine and
// Engines only), so for kv and null the suite opens the same stores the
// harness's own adapters do: engine.Open behind the Store seam, and a
// store that keeps nothing. TestStoreSuite fails if an engine is
// registered that this map does not know, so none is skipped silently.
var testOpeners = map[string]harness.OpenFunc{
	"bbolt":  OpenBbolt,
	"pebble": OpenPebble,
	"kv":     openKVForTest,
	"null":   func(dir, sync string) (harness.Store, error) { return nullForTest{}, nil },
}

// openStore opens the registered engine name in dir, failing the test on error.
func openStore(t *testing.T, name, dir, policy string) harness.Store {
	t.Helper()
	open, ok := testOpeners[name]
	if !ok {
		t.Fatalf("engine %q is registered but the suite has no opener for it; add one to testOpeners", name)
	}
	s, err := open(dir, policy)
	if err != nil {
		t.Fatalf("open %s -sync %s: %v", name, policy, err)
	}
	return s
}

// kvForTest is the kv engine behind the Store seam, as harness/store_kv.go
// adapts it.
type kvForTest struct{ db *engine.DB }

func openKVForTest(dir, sync string) (harness.Store, error) {
	p, err := engine.ParseSync(sync)
	if err != nil {
		return nil, err
	}
	db, err := engine.Open(dir, engine.Options{Sync: p})
	if err != nil {
		return nil, err
	}
	return kvForTest{db}, nil
}

func (s kvForTest) Put(key, value []byte) error { return s.db.Put(key, value) }
func (s kvForTest) Delete(key []byte) error     { return s.db.Delete(key) }
func (s kvForTest) Close() error                { return s.db.Close() }
func (s kvForTest) Get(key []byte) ([]byte, bool, error) {
	v, err := s.db.Get(key)
	if errors.Is(err, engine.ErrNotFound) {
		return nil, false, nil
	}
	return v, err == nil, err
}

// nullForTest keeps nothing, like the harness's null engine.
type nullForTest struct{}

func (nullForTest) Put(key, value []byte) error          { return nil }
func (nullForTest) Get(key []byte) ([]byte, bool, error) { return nil, false, nil }
func (nullForTest) Delete(key []byte) error              { return nil }
func (nullForTest) Close() error                         { return nil }
