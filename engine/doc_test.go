package engine

import (
	"os"
	"strings"
	"testing"
)

// TestDocSaysWhichPoliciesZeroFill checks the package doc's sentence on
// preallocation against what Open does: every policy whose store
// zero-fills (and syncs) the active segment ahead of its first Put is
// named among the ones that do, and every policy that does not is named
// after "not under". (The sentence once left out "none", whose zero-fill
// a reader could then expect.)
func TestDocSaysWhichPoliciesZeroFill(t *testing.T) {
	src, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	doc := strings.Join(strings.Fields(strings.ReplaceAll(string(src), "//", "")), " ")
	i := strings.Index(doc, "zero-filled ahead of the writes")
	if i < 0 {
		t.Fatal("doc.go no longer says which policies zero-fill ahead of the writes")
	}
	start := strings.LastIndex(doc[:i], ". ") + 2
	sentence := doc[start:i]
	does, doesNot, ok := strings.Cut(sentence, "not under")
	if !ok {
		t.Fatalf("doc.go's preallocation sentence names no policy that does not zero-fill: %q", sentence)
	}
	for _, name := range []string{"always", "group", "batch:N", "periodic:D", "none"} {
		spec := strings.Replace(strings.Replace(name, ":N", ":4", 1), ":D", ":10ms", 1)
		p, err := ParseSync(spec)
		if err != nil {
			t.Fatal(err)
		}
		db, _ := openMem(t, Options{Sync: p})
		if err := db.Put([]byte("k"), []byte("v")); err != nil {
			t.Fatalf("%s: Put: %v", name, err)
		}
		zeroFills := db.Stats().FsyncsBy.Prealloc > 0
		if err := db.Close(); err != nil {
			t.Fatalf("%s: Close: %v", name, err)
		}
		quoted := `"` + name + `"`
		switch {
		case zeroFills && !strings.Contains(does, quoted):
			t.Errorf("%s zero-fills ahead of its first Put, but doc.go does not name it among the policies that do: %q", name, sentence)
		case !zeroFills && !strings.Contains(doesNot, quoted):
			t.Errorf("%s does not zero-fill, but doc.go does not name it after \"not under\": %q", name, sentence)
		}
	}
}
