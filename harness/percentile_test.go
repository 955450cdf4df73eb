package harness

import (
	"fmt"
	"slices"
	"testing"

	"kvlab/harness/calc"
)

func TestPercentileTable(t *testing.T) {
	for _, c := range calc.PercentileCases {
		t.Run(c.Name, func(t *testing.T) {
			if got := Percentile(c.In, c.P); got != c.Want {
				t.Errorf("Percentile(%s, %v) = %d, want %d", c.Input, c.P, got, c.Want)
			}
		})
	}
}

func ExamplePercentile() {
	// Ten request latencies in milliseconds, one of them slow.
	lat := []int64{2, 3, 2, 2, 300, 2, 3, 2, 2, 2}
	slices.Sort(lat) // nearest rank needs sorted input
	fmt.Println("p50:", Percentile(lat, 50))
	fmt.Println("p90:", Percentile(lat, 90))
	fmt.Println("p91:", Percentile(lat, 91)) // rank ceil(9.1) = 10
	fmt.Println("max:", Percentile(lat, 100))
	// Output:
	// p50: 2
	// p90: 3
	// p91: 300
	// max: 300
}
