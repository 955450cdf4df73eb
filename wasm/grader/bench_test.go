package grader

import "testing"

// BenchmarkRun measures one full Run of each exercise's model solution:
// parsing, evaluating with a fresh interpreter, and every case. The wasm
// build in a browser is several times slower than this native figure.
func BenchmarkRun(b *testing.B) {
	for _, name := range Names() {
		e, _ := Lookup(name)
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				if r := Run(name, e.Solution); !r.Passed {
					b.Fatalf("solution failed: %s", r.Summary())
				}
			}
		})
	}
}

// BenchmarkRunLargest measures the crash exercises' model solutions on
// their largest workload (seed 905: 40 Puts, a log of 55 KiB), the one
// whose feedback takes longest in the browser.
func BenchmarkRunLargest(b *testing.B) {
	for _, name := range []string{"durable-ack", "torn-tail"} {
		e, _ := Lookup(name)
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				if r := Run(name, e.Solution+"\n// kvlab:seed 905\n"); !r.Passed {
					b.Fatalf("solution failed: %s", r.Summary())
				}
			}
		})
	}
}
