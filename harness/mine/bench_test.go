package mine

import (
	"context"
	"fmt"
	"testing"
)

// BenchmarkPut is the interpreter's cost per Put, which every -engine
// mine figure includes: the durable-ack solution's Put through the
// store the harness drives, on a filesystem that keeps nothing
// (mine-null's). Open is the cost of loading the code, once per run.
func BenchmarkPut(b *testing.B) {
	src := solution(b)
	b.Run("Put", func(b *testing.B) {
		s, err := open(context.Background(), b.TempDir(), src, true)
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		keys := make([][]byte, 1024)
		for i := range keys {
			keys[i] = fmt.Appendf(nil, "%016d", i)
		}
		value := make([]byte, 128)
		i := 0
		for b.Loop() {
			if err := s.Put(keys[i%len(keys)], value); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	b.Run("Open", func(b *testing.B) {
		for b.Loop() {
			s, err := open(context.Background(), b.TempDir(), src, true)
			if err != nil {
				b.Fatal(err)
			}
			s.Close()
		}
	})
}
