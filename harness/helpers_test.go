package harness

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
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

// checkGolden compares got with testdata/name.golden, or rewrites the file
// with -update. A difference is reported at its first differing line.
func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (rerun with -update to create it)", err)
	}
	if got == string(want) {
		return
	}
	gl, wl := strings.Split(got, "\n"), strings.Split(string(want), "\n")
	for i := range min(len(gl), len(wl)) {
		if gl[i] != wl[i] {
			t.Fatalf("%s: line %d differs (rerun with -update and review the diff):\n got %s\nwant %s", path, i+1, gl[i], wl[i])
		}
	}
	t.Fatalf("%s: got %d lines, want %d (rerun with -update and review the diff)", path, len(gl), len(wl))
}
