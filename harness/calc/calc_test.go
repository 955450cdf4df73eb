package calc

import (
	"fmt"
	"math"
	"testing"
	"time"
)

func TestPercentileCases(t *testing.T) {
	for _, c := range PercentileCases {
		t.Run(c.Name, func(t *testing.T) {
			if got := Percentile(c.In, c.P); got != c.Want {
				t.Errorf("Percentile(%s, %v) = %d, want %d", c.Input, c.P, got, c.Want)
			}
		})
	}
}

// TestPercentileCasesAreSorted guards the table itself: Percentile requires
// sorted input, so an unsorted row would test nothing.
func TestPercentileCasesAreSorted(t *testing.T) {
	for _, c := range PercentileCases {
		for i := 1; i < len(c.In); i++ {
			if c.In[i-1] > c.In[i] {
				t.Errorf("case %q: input not sorted at index %d", c.Name, i)
				break
			}
		}
	}
}

// TestPercentileWholePercents checks every whole p against the definition
// worked in integers, where no rounding can hide.
func TestPercentileWholePercents(t *testing.T) {
	for _, n := range []int{1, 2, 3, 7, 10, 99, 100, 101, 1000} {
		s := seq(1, int64(n))
		for p := 0; p <= 100; p++ {
			rank := (p*n + 99) / 100 // ceil(p*n/100) in integers
			if rank < 1 {
				rank = 1
			}
			want := int64(rank)
			if got := Percentile(s, float64(p)); got != want {
				t.Errorf("n=%d p=%d: got %d, want %d", n, p, got, want)
			}
		}
	}
}

func TestPercentileNaN(t *testing.T) {
	if got := Percentile([]int64{3, 4}, math.NaN()); got != 3 {
		t.Errorf("p=NaN: got %d, want 3 (treated as p0)", got)
	}
}

func TestBatchThroughputP99PathAndLossWindow(t *testing.T) {
	tests := []struct {
		n          int
		wantOps    float64
		wantPath   string
		wantLossW  float64
		wantLossMs float64
	}{
		// T_write 1 µs, T_fsync 200 µs.
		{1, 1e9 / 201000, P99Slow, 0, 0},
		{64, 1e9 / (1000 + 200000.0/64), P99Slow, 63, 63 * (1000 + 200000.0/64) / 1e6},
		{100, 1e9 / 3000, P99Slow, 99, 99 * 3000 / 1e6},
		{101, 1e9 / (1000 + 200000.0/101), P99Fast, 100, 100 * (1000 + 200000.0/101) / 1e6},
		{1000, 1e9 / 1200, P99Fast, 999, 999 * 1200 / 1e6},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.n), func(t *testing.T) {
			p, err := Batch(tt.n, 1000, 200000)
			if err != nil {
				t.Fatal(err)
			}
			if !approx(p.PredictedOpsPerSec, tt.wantOps) {
				t.Errorf("ops/s: got %v, want %v", p.PredictedOpsPerSec, tt.wantOps)
			}
			if p.P99Path != tt.wantPath {
				t.Errorf("p99 path: got %s, want %s", p.P99Path, tt.wantPath)
			}
			if p.LossWindowWrites != tt.wantLossW {
				t.Errorf("loss window writes: got %v, want %v", p.LossWindowWrites, tt.wantLossW)
			}
			if !approx(p.LossWindowMs, tt.wantLossMs) {
				t.Errorf("loss window ms: got %v, want %v", p.LossWindowMs, tt.wantLossMs)
			}
			if p.Sync != fmt.Sprintf("batch:%d", tt.n) {
				t.Errorf("sync: got %q", p.Sync)
			}
		})
	}
}

func TestPeriodicLossWindow(t *testing.T) {
	tests := []struct {
		d          time.Duration
		wantLossMs float64
		wantLossW  float64
	}{
		{10 * time.Millisecond, 10.2, 10200},
		{100 * time.Millisecond, 100.2, 100200},
	}
	for _, tt := range tests {
		p, err := Periodic(tt.d, 1000, 200000)
		if err != nil {
			t.Fatal(err)
		}
		// The sync runs beside the writers: full write speed, fast p99.
		if !approx(p.PredictedOpsPerSec, 1e6) {
			t.Errorf("%v: ops/s %v, want 1e6", tt.d, p.PredictedOpsPerSec)
		}
		if p.P99Path != P99Fast {
			t.Errorf("%v: p99 path %s, want fast", tt.d, p.P99Path)
		}
		if !approx(p.LossWindowMs, tt.wantLossMs) {
			t.Errorf("%v: loss window %v ms, want %v", tt.d, p.LossWindowMs, tt.wantLossMs)
		}
		if p.LossWindowWrites != tt.wantLossW {
			t.Errorf("%v: loss window %v writes, want %v", tt.d, p.LossWindowWrites, tt.wantLossW)
		}
		if p.Sync != "periodic:"+tt.d.String() {
			t.Errorf("sync %q", p.Sync)
		}
	}
}

func TestModelRejectsBadInputs(t *testing.T) {
	if _, err := Batch(0, 1, 1); err == nil {
		t.Error("Batch(0): got nil error")
	}
	if _, err := Batch(4, 0, 1); err == nil {
		t.Error("Batch with T_write 0: got nil error")
	}
	if _, err := Batch(4, 1, -1); err == nil {
		t.Error("Batch with negative T_fsync: got nil error")
	}
	if _, err := Periodic(0, 1, 1); err == nil {
		t.Error("Periodic(0): got nil error")
	}
}

func approx(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b)) }

func ExamplePercentile() {
	lat := []int64{2, 2, 2, 2, 2, 2, 2, 2, 2, 300} // sorted, in ms
	fmt.Println(Percentile(lat, 50), Percentile(lat, 90), Percentile(lat, 99))
	// Output: 2 2 300
}

func ExampleBatch() {
	// A 1 µs write and a 200 µs fdatasync, fdatasync every 64 Puts.
	p, _ := Batch(64, 1000, 200000)
	fmt.Printf("%.0f ops/s, p99 on the %s path, up to %.0f writes lost\n",
		p.PredictedOpsPerSec, p.P99Path, p.LossWindowWrites)
	// Output: 242424 ops/s, p99 on the slow path, up to 63 writes lost
}

// Decimal percentiles whose exact rank is whole: the float product lands a
// hair above it for some n, and the plain ceiling would take the next rank.
func TestPercentileDecimalRanks(t *testing.T) {
	tests := []struct {
		p    float64
		n    int
		want int64 // the 1-based rank, = the value in 1..n
	}{
		{99.9, 41000, 40959},
		{99.9, 82000, 81918},
		{99.9, 1000, 999},
		{99.5, 200, 199},
		{99.99, 10000, 9999},
		{90.0001, 10, 10},
		{99.9, 1001, 1000},
	}
	for _, tt := range tests {
		s := make([]int64, tt.n)
		for i := range s {
			s[i] = int64(i + 1)
		}
		if got := Percentile(s, tt.p); got != tt.want {
			t.Errorf("Percentile(1..%d, %v) = %d, want %d", tt.n, tt.p, got, tt.want)
		}
		if got := Rank(tt.p, int64(tt.n)); got != tt.want {
			t.Errorf("Rank(%v, %d) = %d, want %d", tt.p, tt.n, got, tt.want)
		}
	}
}
