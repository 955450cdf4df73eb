package harness

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"
)

// mapStore is an in-memory Store for tests: it remembers, so reads hit,
// and counts every call.
type mapStore struct {
	mu   sync.Mutex // guards m
	m    map[string][]byte
	puts atomic.Int64
	gets atomic.Int64
	dels atomic.Int64
}

var lastMapStore atomic.Pointer[mapStore]

// mapData keeps each directory's map across a Close and reopen, as a real
// store's files would.
var (
	mapDataMu sync.Mutex // guards mapData
	mapData   = map[string]map[string][]byte{}
)

func init() {
	RegisterEngine("testmap", func(dir, sync string) (Store, error) {
		if _, err := parseSync(sync); err != nil {
			return nil, err
		}
		mapDataMu.Lock()
		m := mapData[dir]
		if m == nil {
			m = map[string][]byte{}
			mapData[dir] = m
		}
		mapDataMu.Unlock()
		s := &mapStore{m: m}
		lastMapStore.Store(s)
		return s, nil
	})
}

func (s *mapStore) Put(k, v []byte) error {
	s.puts.Add(1)
	s.mu.Lock()
	s.m[string(k)] = append([]byte(nil), v...)
	s.mu.Unlock()
	return nil
}

func (s *mapStore) Get(k []byte) ([]byte, bool, error) {
	s.gets.Add(1)
	s.mu.Lock()
	v, ok := s.m[string(k)]
	s.mu.Unlock()
	return v, ok, nil
}

func (s *mapStore) Delete(k []byte) error {
	s.dels.Add(1)
	s.mu.Lock()
	delete(s.m, string(k))
	s.mu.Unlock()
	return nil
}

func (s *mapStore) Close() error { return nil }

// bench runs a line through Exec with a temp dir and decodes the single
// bench result.
func bench(t *testing.T, line string) *BenchResult {
	t.Helper()
	r := execAs[BenchResult](t, line)
	return &r
}

// execAs runs a line through Exec with a temp dir and decodes its JSON
// output as a T.
func execAs[T any](t *testing.T, line string) T {
	t.Helper()
	raw, err := Exec(context.Background(), line, Env{Dir: t.TempDir()})
	if err != nil {
		t.Fatalf("Exec(%q): %v", line, err)
	}
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("Exec(%q) does not decode as %T: %v\n%s", line, &v, err, raw)
	}
	return v
}
