package grader

import (
	"strings"
	"testing"
)

// boundMakes wraps each size of a make, nested ones too, and moves no
// line.
func TestBoundMakes(t *testing.T) {
	tests := []struct{ name, src, want string }{
		{"one size", "package main\n\nvar b = make([]byte, 8)\n", "package main\n\nvar b = make([]byte, kvlabMakeLen(int(8)))\n"},
		{"length and capacity", "package main\n\nvar b = make([]byte, 0, n+1)\n", "package main\n\nvar b = make([]byte, kvlabMakeLen(int(0)), kvlabMakeLen(int(n+1)))\n"},
		{"a map's hint, no package clause", "var m = make(map[string]int, n)\n", "var m = make(map[string]int, kvlabMakeLen(int(n)))\n"},
		{"nested", "package main\n\nvar b = make([]byte, len(make([]int, 3)))\n", "package main\n\nvar b = make([]byte, kvlabMakeLen(int(len(make([]int, kvlabMakeLen(int(3)))))))\n"},
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
	n, err := LoadNative(src)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	if err := n.Open(newFS(newMemFS(), nil)); err != nil {
		t.Fatal(err)
	}
	if err := n.Put("k", "v"); err != nil {
		t.Fatalf("first Put, a make of 0: %v", err)
	}
	err = n.Put("k", "v")
	if _, ok := err.(*PanicError); !ok || err.Error() != "panic: make: more elements than a store here may make at once (16777216)" {
		t.Errorf("second Put, a make of 1<<30: %v, want the bound's panic", err)
	}
}

// An array type whose length is a constant too large is refused at its
// line, whether written out or through constants of the file.
func TestRefuseHugeArrays(t *testing.T) {
	tests := []struct {
		name, src string
		line      int // 0: allowed
	}{
		{"a literal", "package main\n\nfunc f() {\n\tvar a [1 << 40]byte\n\t_ = a\n}\n", 4},
		{"through constants", "package main\n\nconst k = 1 << 20\nconst n = k * k\n\nvar a [n]int\n", 6},
		{"no package clause", "var a [1e3]byte\nvar b [(1 << 30) + 1]byte\n", 2},
		{"a record header", "package main\n\nvar h [8]byte\nvar s []byte\nvar m = [...]int{1, 2}\n", 0},
		{"at the bound", "package main\n\nvar a [16 << 20]byte\n", 0},
		{"a package's constant", "package main\n\nimport \"hash/crc32\"\n\nvar a [crc32.Size]byte\n", 0},
	}
	for _, tt := range tests {
		ce := refuseHugeArrays(tt.src)
		switch {
		case tt.line == 0 && ce != nil:
			t.Errorf("%s: refused (%v), want allowed", tt.name, ce)
		case tt.line != 0 && (ce == nil || ce.Line != tt.line || !strings.Contains(ce.Msg, "at most 16777216 in one array")):
			t.Errorf("%s: %v, want refused at line %d", tt.name, ce, tt.line)
		}
	}
}
