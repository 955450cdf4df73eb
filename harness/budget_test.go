package harness

import (
	"context"
	"testing"
	"time"

	"kvlab/internal/heappeak"
)

func TestSubRunsAndMinTime(t *testing.T) {
	tests := []struct {
		line    string
		subRuns int
		minTime time.Duration
	}{
		{"bench", 1, 0},
		{"bench -engine kv,null -repeat 3", 6, 0},
		{"sweep -engine kv,null -threads 1,2,4 -repeat 2 -duration 2s", 12, 24 * time.Second},
		{"bench -engine null -ops 1000 -rate 100 -repeat 2", 2, 20 * time.Second},
		{"probe", 1, 0},
		{"crash -trials 5", 1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.line, func(t *testing.T) {
			s, err := ParseSpec(tt.line, DefaultLimits())
			if err != nil {
				t.Fatal(err)
			}
			if got := s.SubRuns(); got != tt.subRuns {
				t.Errorf("SubRuns: got %d, want %d", got, tt.subRuns)
			}
			if got := s.MinTime(); got != tt.minTime {
				t.Errorf("MinTime: got %v, want %v", got, tt.minTime)
			}
		})
	}
}

func TestMemoryBytesGrowsWithKeys(t *testing.T) {
	est := func(line string) int64 {
		s, err := ParseSpec(line, DefaultLimits())
		if err != nil {
			t.Fatal(err)
		}
		return s.MemoryBytes()
	}
	big := est("bench -engine kv -sync none -workload readrandom -keys 10000000 -value-size 0 -ops 1")
	if big < 2<<30 {
		t.Errorf("kv with 10M keys: got an estimate of %d bytes, want at least 2 GiB (measured: 2.0 GB)", big)
	}
	if small := est("bench -engine kv -ops 1000"); small <= 0 || small > 16<<20 {
		t.Errorf("kv -ops 1000: got %d bytes, want between 1 and 16 MiB", small)
	}
	if a, b := est("bench -engine null -keys 1000 -ops 1 -workload readrandom"), est("bench -engine null,kv -keys 1000 -ops 1 -workload readrandom"); b <= a {
		t.Errorf("adding kv to null: got %d then %d, want the estimate to grow", a, b)
	}
	// A pipeline holds threads x depth requests in flight, on the server.
	if flat, deep := est("bench -engine testpipe -threads 256 -value-size 65536 -duration 1s"),
		est("bench -engine testpipe -threads 256 -pipeline 1024 -value-size 65536 -duration 1s"); deep < flat+32<<30 {
		t.Errorf("256 threads pipelining 1024 requests of 64 KiB: got %d bytes, %d without the pipeline; want at least 32 GiB more", deep, flat)
	}
	if p := est("probe"); p != 0 {
		t.Errorf("probe: got %d, want 0", p)
	}
}

// The estimate errs high: a real run's heap growth stays under it.
func TestMemoryBytesCoversARun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a 200000-key preload")
	}
	for _, line := range []string{
		"bench -engine kv -sync none -workload readrandom -keys 200000 -value-size 0 -ops 1",
		"bench -engine kv -sync none -workload fillrandom -ops 100000 -value-size 64",
	} {
		t.Run(line, func(t *testing.T) {
			s, err := ParseSpec(line, DefaultLimits())
			if err != nil {
				t.Fatal(err)
			}
			watch := heappeak.Start(5 * time.Millisecond)
			_, err = Exec(context.Background(), line, Env{Dir: t.TempDir()})
			grew := watch.Stop()
			if err != nil {
				t.Fatal(err)
			}
			if est := s.MemoryBytes(); grew > est {
				t.Errorf("the heap grew by %d bytes at its peak, over the estimate of %d", grew, est)
			} else {
				t.Logf("heap growth %d bytes at its peak, estimate %d", grew, est)
			}
		})
	}
}
