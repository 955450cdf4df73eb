package heappeak

import (
	"testing"
	"time"
)

var sink [][]byte

// A watch sees an allocation still held when it stops.
func TestWatchSeesHeldAllocation(t *testing.T) {
	w := Start(time.Millisecond)
	sink = append(sink, make([]byte, 64<<20))
	grew := w.Stop()
	sink = nil
	if grew < 60<<20 {
		t.Errorf("grew %d bytes, want at least %d while 64 MiB were held", grew, 60<<20)
	}
}
