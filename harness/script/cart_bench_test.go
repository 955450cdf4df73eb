package script

import (
	"context"
	"testing"

	scripts "kvlab/workloads"
)

// BenchmarkNullCart is the cart script's floor: the Lua host running
// cart.lua on a store that does nothing, one worker.
func BenchmarkNullCart(b *testing.B) {
	src, _ := scripts.Lookup("cart")
	p, err := Compile("cart.lua", src, Limits{})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	res, err := Run(context.Background(), p, nullStore{}, Config{Items: 10, Users: 1000, ValueBytes: 128, Ops: int64(b.N), Threads: 1})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(res.WUPerSec, "wu/s")
}

// BenchmarkNullMixedShipped is workloads/mixed.lua's floor (make bench
// runs it as a bench line too): the Lua host running it on a store that
// does nothing, one worker. Target: >= 500k wu/s, far above what any
// engine's Put or Get allows, so that the floor is not what a line
// measures.
func BenchmarkNullMixedShipped(b *testing.B) {
	src, _ := scripts.Lookup("mixed")
	p, err := Compile("mixed.lua", src, Limits{})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	res, err := Run(context.Background(), p, nullStore{}, Config{Items: 10000, ValueBytes: 128, Ops: int64(b.N), Threads: 1})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(res.WUPerSec, "wu/s")
}
