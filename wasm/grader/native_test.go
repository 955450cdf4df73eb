package grader

import "testing"

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
