package gohost

import (
	"context"
	"math"
	"strings"
	"testing"

	"kvlab/engine/vfs"
	"kvlab/gohost/kvfs"
)

// memFS returns a kvfs.FS on a fresh MemFS, rooted in /db.
func memFS(t *testing.T) kvfs.FS {
	t.Helper()
	m := vfs.NewMemFS()
	if err := m.MkdirAll("/db", 0o755); err != nil {
		t.Fatal(err)
	}
	return kvfs.New(m, "/db", kvfs.Config{})
}

// boundMakes wraps each size of a make, nested ones too, and moves no
// line.
func TestBoundMakes(t *testing.T) {
	tests := []struct{ name, src, want string }{
		{"one size", "package main\n\nvar b = make([]byte, 8)\n", "package main\n\nvar b = make([]byte, kvlabMakeLen(int(8), (*[]byte)(nil)))\n"},
		{"length and capacity", "package main\n\nvar b = make([]byte, 0, n+1)\n", "package main\n\nvar b = make([]byte, kvlabMakeLen(int(0), (*[]byte)(nil)), kvlabMakeLen(int(n+1), (*[]byte)(nil)))\n"},
		{"a map's hint, no package clause", "var m = make(map[string]int, n)\n", "var m = make(map[string]int, kvlabMakeLen(int(n), (*map[string]int)(nil)))\n"},
		{"nested", "package main\n\nvar b = make([]byte, len(make([]int, 3)))\n", "package main\n\nvar b = make([]byte, kvlabMakeLen(int(len(make([]int, kvlabMakeLen(int(3), (*[]int)(nil))))), (*[]byte)(nil)))\n"},
		{"an array element", "package main\n\nvar b = make([][1 << 20]int64, 1<<16)\n", "package main\n\nvar b = make([][1 << 20]int64, kvlabMakeLen(int(1<<16), (*[][1 << 20]int64)(nil)))\n"},
		{"a type over two lines keeps the lines", "package main\n\nvar b = make([]struct {\n\tk string\n}, 2)\nvar c int\n", "package main\n\nvar b = make([]struct {\n\tk string\n}, kvlabMakeLen(int(2), (*kvlabMakeType0)(nil)))\nvar c int\n\ntype kvlabMakeType0 = []struct {\n\tk string\n}\n"},
		{"no size", "package main\n\nvar m = make(map[string]int)\n", "package main\n\nvar m = make(map[string]int)\n"},
		{"a syntax error is left to load", "package main\n\nvar b = make([]byte, 8\n", "package main\n\nvar b = make([]byte, 8\n"},
	}
	for _, tt := range tests {
		if got := boundMakes(tt.src); got != tt.want {
			t.Errorf("%s:\n got  %q\nwant %q", tt.name, got, tt.want)
		}
	}
}

// A store whose make asks too much fails that call with a panic; the
// same store with a small make runs.
func TestNativeMakeBound(t *testing.T) {
	src := "package main\n\nimport \"kvfs\"\n\ntype Store struct{ n int }\n\nfunc Open(fs kvfs.FS) (*Store, error) { return &Store{}, nil }\n\n" +
		"func (s *Store) Put(key, value string) error {\n\tb := make([]byte, s.n)\n\t_ = b\n\ts.n = 1 << 30\n\treturn nil\n}\n\n" +
		"func (s *Store) Get(key string) (string, bool) { return \"\", false }\n"
	n, err := LoadNative(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	if err := n.Open(memFS(t)); err != nil {
		t.Fatal(err)
	}
	if err := n.Put("k", "v"); err != nil {
		t.Fatalf("first Put, a make of 0: %v", err)
	}
	err = n.Put("k", "v")
	if _, ok := err.(*PanicError); !ok || !strings.HasPrefix(err.Error(), "panic: make: 1 GiB (1073741824 elements of 1 B each): one allocation of a store here may be at most 64 MiB") {
		t.Errorf("second Put, a make of 1<<30: %v, want the bound's panic", err)
	}
}

// An array or struct type too large in bytes is refused at its line,
// whether written out, nested, or through constants and types of the
// file; small ones, and those of the packages a store imports, are not.
func TestRefuseHugeTypes(t *testing.T) {
	tests := []struct {
		name, src string
		line      int // 0: allowed
	}{
		{"a literal", "package main\n\nfunc f() {\n\tvar a [1 << 40]byte\n\t_ = a\n}\n", 4},
		{"through constants", "package main\n\nconst k = 1 << 20\nconst n = k * k\n\nvar a [n]int\n", 6},
		{"math's constant", "package main\n\nimport \"math\"\n\nvar a [math.MaxInt64 >> 20]byte\n", 5},
		{"no package clause", "var a [1e3]byte\nvar b [(1 << 30) + 1]byte\n", 2},
		{"elements of 8 bytes", "package main\n\nvar a [16 << 20]int64\n", 3},
		{"nested arrays", "package main\n\nvar p = new([1 << 24][1 << 20]byte)\n", 3},
		{"a composite literal", "package main\n\nfunc f() int {\n\treturn len([1 << 12][1 << 20]int64{})\n}\n", 4},
		{"a type of the file", "package main\n\ntype rec struct {\n\tk [1 << 10]byte\n\tv string\n}\n\nvar a [1 << 20]rec\n", 8},
		{"a struct of big fields", "package main\n\ntype half [40 << 20]byte\n\nvar s struct{ a, b half }\n", 5},
		{"a package's type", "package main\n\nimport \"hash/crc32\"\n\nvar t [1 << 17]crc32.Table\n", 5},
		{"a record header", "package main\n\nvar h [8]byte\nvar s []byte\nvar m = [...]int{1, 2}\n", 0},
		{"at the bound", "package main\n\nvar a [64 << 20]byte\nvar b [8 << 20]int64\n", 0},
		{"a package's constant", "package main\n\nimport \"hash/crc32\"\n\nvar a [crc32.Size]byte\nvar t [4]crc32.Table\n", 0},
		{"a slice of big arrays is make's to check", "package main\n\nvar b = make([][1 << 20]int64, 1)\n", 0},
	}
	for _, tt := range tests {
		ce := refuseHugeTypes(tt.src)
		switch {
		case tt.line == 0 && ce != nil:
			t.Errorf("%s: refused (%v), want allowed", tt.name, ce)
		case tt.line != 0 && (ce == nil || ce.Line != tt.line || !strings.Contains(ce.Msg, "one allocation of a store here may be at most 64 MiB")):
			t.Errorf("%s: %v, want refused at line %d", tt.name, ce, tt.line)
		}
	}
}

// The make check counts bytes: an element's size times the count, for
// slices, maps and channels; at the limit a make runs.
func TestCheckMake(t *testing.T) {
	type rec struct {
		k [1 << 10]byte
		v int64
	}
	tests := []struct {
		name string
		n    int
		t    any
		want string // "" allowed, else a part of the refusal
	}{
		{"bytes at the limit", MaxAlloc, (*[]byte)(nil), ""},
		{"one byte past", MaxAlloc + 1, (*[]byte)(nil), "make: 67108865 B (67108865 elements of 1 B each)"},
		{"8 MiB arrays", 1 << 16, (*[][1 << 20]int64)(nil), "make: 512 GiB (65536 elements of 8 MiB each): one allocation of a store here may be at most 64 MiB"},
		{"records", 1 << 16, (*[]rec)(nil), "64.5 MiB (65536 elements of 1.01 KiB each)"},
		{"a map's entries", 1 << 20, (*map[int64]rec)(nil), "1.02 GiB (1048576 entries of 1.02 KiB each)"},
		{"a channel", 1 << 30, (*chan int64)(nil), "8 GiB"},
		{"a small map", 1000, (*map[string]int)(nil), ""},
		{"negative", -1, (*[]byte)(nil), "a negative size (-1)"},
		{"overflow", math.MaxInt, (*[]int64)(nil), "more than 8 EiB"},
	}
	for _, tt := range tests {
		got := checkMake(tt.n, tt.t)
		if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}
